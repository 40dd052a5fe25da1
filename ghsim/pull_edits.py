"""Pull request edits of :class:`ghsim.sim.GitHubSim`: title and body, labels, draft,
auto-merge, the review-decision and merge-state overrides, close and reopen.

None of them touches git; most move the pull's ``updated_at``, as on GitHub.
"""

from __future__ import annotations

from ghsim.core import (
    AUTO,
    MERGE_METHODS,
    MERGE_STATES,
    REVIEW_DECISIONS,
    Author,
    GhsimError,
    SimCore,
)
from ghsim.model import Pull


class PullEditSim(SimCore):
    """The pull request edits (one of the bases of :class:`ghsim.sim.GitHubSim`)."""

    def edit_pr(
        self, repo: str, number: int, *, title: str | None = None, body: str | None = None
    ) -> Pull:
        with self.lock:
            pr = self.pull(repo, number)
            if title is not None:
                pr.title = title
            if body is not None:
                pr.body = body
            pr.updated_at = self.now()
            return pr

    def label(self, repo: str, number: int, name: str) -> Pull:
        with self.lock:
            pr = self.pull(repo, number)
            if name not in pr.repo.labels:
                pr.repo.labels[name] = next(self._ids["label"])
            if name not in pr.labels:
                pr.labels.append(name)
            pr.updated_at = self.now()
            return pr

    def unlabel(self, repo: str, number: int, name: str) -> Pull:
        with self.lock:
            pr = self.pull(repo, number)
            if name in pr.labels:
                pr.labels.remove(name)
            pr.updated_at = self.now()
            return pr

    def set_draft(self, repo: str, number: int, draft: bool = True) -> Pull:
        with self.lock:
            pr = self.pull(repo, number)
            pr.draft = draft
            if draft:  # as on GitHub: converting to draft disables auto-merge
                pr.auto_merge = None
            pr.updated_at = self.now()
            return pr

    def set_auto_merge(
        self, repo: str, number: int, method: str | None = "squash", by: Author = None
    ) -> Pull:
        """Arm auto-merge with ``method`` (merge|squash|rebase) or disarm it with ``None``.
        A draft cannot be armed (GitHub refuses it)."""
        with self.lock:
            pr = self.pull(repo, number)
            if method is None:
                pr.auto_merge = None
            else:
                if pr.draft:
                    raise GhsimError(f"{repo}#{number} is a draft: auto-merge cannot be armed")
                if method not in MERGE_METHODS:
                    raise GhsimError(f"merge method must be one of {sorted(MERGE_METHODS)}")
                pr.auto_merge = {
                    "method": method,
                    "enabled_by": self._author(by, pr.repo.owner),
                    "enabled_at": self.now(),
                }
            pr.updated_at = self.now()
            return pr

    def set_review_decision(self, repo: str, number: int, decision: str | None) -> Pull:
        """Override GraphQL ``reviewDecision`` (``"auto"`` computes it from reviews again)."""
        with self.lock:
            if decision != AUTO and decision not in REVIEW_DECISIONS:
                raise GhsimError(f"review decision must be one of {REVIEW_DECISIONS} or 'auto'")
            pr = self.pull(repo, number)
            pr.review_decision = decision
            return pr

    def set_merge_state(self, repo: str, number: int, status: str | None) -> Pull:
        """Override ``mergeStateStatus`` / ``mergeable_state`` (``"auto"``: computed)."""
        with self.lock:
            if status != AUTO and status not in MERGE_STATES:
                raise GhsimError(f"merge state must be one of {sorted(MERGE_STATES)} or 'auto'")
            pr = self.pull(repo, number)
            pr.merge_state = status
            return pr

    def close(self, repo: str, number: int) -> Pull:
        with self.lock:
            pr = self.pull(repo, number)
            now = self.now()
            pr.state, pr.closed_at, pr.updated_at = "closed", now, now
            return pr

    def reopen(self, repo: str, number: int) -> Pull:
        with self.lock:
            pr = self.pull(repo, number)
            if pr.merged:
                raise GhsimError("a merged pull request cannot be reopened")
            pr.state, pr.closed_at, pr.updated_at = "open", None, self.now()
            return pr
