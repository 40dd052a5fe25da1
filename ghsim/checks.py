"""CI helpers of :class:`ghsim.sim.GitHubSim`: check runs and commit statuses.

``create_status`` is ``POST /repos/{owner}/{repo}/statuses/{sha}`` with GitHub's rules
(issue 27): ``state`` is one of error, failure, pending, success; ``context`` is
"case-insensitive", default ``default`` (GitHub's OpenAPI description,
``repos/create-commit-status``); at most 1000 statuses per sha and context, then "This SHA
and context has reached the maximum number of statuses." (the description's "will result
in a validation error"; the words from palantir/policy-bot#470,
screwdriver-cd/screwdriver#387); ``description`` at most 140 characters, else
"description is too long (maximum is 140 characters)" (zalando/zappr#378,
sclorg/testing-farm-as-github-action#187; not in the description).
"""

from __future__ import annotations

from typing import Any

from ghsim.core import Author, SimCore, Unprocessable
from ghsim.model import CheckRun, CommitStatus

STATUS_STATES = ("error", "failure", "pending", "success")
STATUS_DOC = "https://docs.github.com/rest/commits/statuses#create-a-commit-status"
MAX_STATUSES = 1000
MAX_DESCRIPTION = 140
TOO_MANY = "This SHA and context has reached the maximum number of statuses."
TOO_LONG = f"description is too long (maximum is {MAX_DESCRIPTION} characters)"


def _status_error(field: str, code: str, message: str | None = None) -> Unprocessable:
    error: dict[str, Any] = {"resource": "Status", "code": code, "field": field}
    if message is not None:
        error["message"] = message
    return Unprocessable("Validation Failed", [error], STATUS_DOC)


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

    def create_status(
        self,
        repo: str,
        sha: str,
        state: Any,
        *,
        context: Any = None,
        description: Any = None,
        target_url: Any = None,
        creator: Author = None,
    ) -> CommitStatus:
        """A status as ``POST .../statuses/{sha}`` makes it (see the module docstring);
        raises :class:`~ghsim.core.Unprocessable` with GitHub's 422 answer."""
        with self.lock:
            target = self.repo(repo)
            if state not in STATUS_STATES:
                raise _status_error("state", "invalid")
            for name, value in (("context", context), ("description", description)):
                if value is not None and not isinstance(value, str):
                    raise _status_error(name, "invalid")
            if target_url is not None and not isinstance(target_url, str):
                raise _status_error("target_url", "invalid")
            if description is not None and len(description) > MAX_DESCRIPTION:
                raise _status_error("description", "custom", TOO_LONG)
            label = context or "default"
            sha = self.resolve(repo, sha)
            same = [
                s
                for s in self._statuses
                if s.repo is target and s.sha == sha and s.context.lower() == label.lower()
            ]
            if len(same) >= MAX_STATUSES:
                raise _status_error("context", "custom", TOO_MANY)
            made = self.set_status(repo, sha, label, state, description, target_url)
            made.creator = self._author(creator, target.owner)
            return made
