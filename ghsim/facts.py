"""Facts of :class:`ghsim.sim.GitHubSim` derived from state and git, read by the routes:
author association, review decision, merge state and the full pull's counts.
"""

from __future__ import annotations

from ghsim.core import AUTO, SimCore
from ghsim.model import Pull, Repo, User
from ghsim.render_pulls import PullFacts

FAILED_CONCLUSIONS = frozenset(
    {"failure", "timed_out", "cancelled", "action_required", "startup_failure"}
)


class FactsSim(SimCore):
    """The derived facts (one of the bases of :class:`ghsim.sim.GitHubSim`)."""

    def association(self, user: User | None, repo: Repo) -> str:
        if user is None:
            return "NONE"
        if user.id == repo.owner.id:
            return "OWNER"
        if user.id in repo.collaborators:
            return "COLLABORATOR"
        for pr in self._pulls.get(repo.key, {}).values():
            if pr.merged and pr.user.id == user.id:
                return "CONTRIBUTOR"
        return "NONE"

    def review_decision(self, pr: Pull) -> str | None:
        if pr.review_decision != AUTO:
            return pr.review_decision
        latest: dict[int, str] = {}
        for r in self._reviews:
            if r.repo is pr.repo and r.pull_number == pr.number:
                if r.state in ("APPROVED", "CHANGES_REQUESTED"):
                    latest[r.user.id] = r.state
                elif r.state == "DISMISSED":
                    latest.pop(r.user.id, None)
        if "CHANGES_REQUESTED" in latest.values():
            return "CHANGES_REQUESTED"
        if "APPROVED" in latest.values():
            return "APPROVED"
        return None

    def _checks_failing(self, pr: Pull) -> bool:
        runs = self.check_runs_for(pr.repo, pr.head_sha)
        if any(r.conclusion in FAILED_CONCLUSIONS for r in runs):
            return True
        return any(s.state in ("error", "failure") for s in self.statuses_for(pr.repo, pr.head_sha))

    def merge_state_status(self, pr: Pull) -> tuple[str, bool | None, int]:
        """``(mergeStateStatus, mergeable, behind_by)`` computed with git (or overridden)."""
        base_sha = self._base_tip(pr)
        behind, _ = self.git.left_right(pr.repo.path, base_sha, pr.head_sha)
        if pr.state != "open":
            return "UNKNOWN", None, behind
        conflict = self.git.merge_tree(pr.repo.path, base_sha, pr.head_sha) is None
        mergeable = not conflict
        if pr.merge_state != AUTO:
            status = pr.merge_state or "UNKNOWN"
            if status == "UNKNOWN":
                return status, None, behind
            return status, False if status == "DIRTY" else mergeable, behind
        if pr.draft:
            status = "DRAFT"
        elif conflict:
            status = "DIRTY"
        elif behind > 0:
            status = "BEHIND"
        elif self.review_decision(pr) == "CHANGES_REQUESTED":
            status = "BLOCKED"
        elif self._checks_failing(pr):
            status = "UNSTABLE"
        else:
            status = "CLEAN"
        return status, mergeable, behind

    def pull_facts(self, pr: Pull) -> PullFacts:
        base_sha = self._base_tip(pr)
        status, mergeable, _ = self.merge_state_status(pr)
        _, ahead = self.git.left_right(pr.repo.path, base_sha, pr.head_sha)
        merge_base = self.git.merge_base(pr.repo.path, base_sha, pr.head_sha) or base_sha
        files = self.git.diff_files(pr.repo.path, merge_base, pr.head_sha)
        comments = [c for c in self._comments if c.repo is pr.repo and c.pull_number == pr.number]
        return PullFacts(
            base_sha=base_sha,
            mergeable=mergeable,
            mergeable_state=status.lower(),
            commits=ahead,
            additions=sum(f.additions for f in files),
            deletions=sum(f.deletions for f in files),
            changed_files=len(files),
            comments=sum(1 for c in comments if c.kind == "issue"),
            review_comments=sum(1 for c in comments if c.kind == "review"),
        )
