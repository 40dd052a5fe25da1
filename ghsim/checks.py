"""CI helpers of :class:`ghsim.sim.GitHubSim`: check runs and commit statuses."""

from __future__ import annotations

from ghsim.core import SimCore
from ghsim.model import CheckRun, CommitStatus


class CheckSim(SimCore):
    """Check runs and commit statuses (one of the bases of :class:`ghsim.sim.GitHubSim`)."""

    def set_check_run(
        self,
        repo: str,
        sha: str,
        name: str,
        status: str = "completed",
        conclusion: str | None = "success",
    ) -> CheckRun:
        """Create or update the check run ``name`` on ``sha`` (a ref resolves to a sha)."""
        with self.lock:
            target = self.repo(repo)
            sha = self.resolve(repo, sha)
            now = self.now()
            conclusion = conclusion if status == "completed" else None
            for run in reversed(self._check_runs):
                if run.repo is target and run.head_sha == sha and run.name == name:
                    run.status, run.conclusion = status, conclusion
                    run.completed_at = now if status == "completed" else None
                    return run
            run = CheckRun(
                target,
                next(self._ids["check"]),
                sha,
                name,
                status,
                conclusion,
                now,
                now if status == "completed" else None,
            )
            self._check_runs.append(run)
            return run

    def set_status(
        self,
        repo: str,
        sha: str,
        context: str,
        state: str = "success",
        description: str | None = None,
        target_url: str | None = None,
    ) -> CommitStatus:
        """Add a commit status (error|failure|pending|success); the latest per context wins."""
        with self.lock:
            target = self.repo(repo)
            sha = self.resolve(repo, sha)
            now = self.now()
            created = CommitStatus(
                target,
                next(self._ids["status"]),
                sha,
                context,
                state,
                description,
                target_url,
                now,
                now,
            )
            self._statuses.append(created)
            return created
