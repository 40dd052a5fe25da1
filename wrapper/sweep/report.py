"""What a sweep found and did: the typed report ``kdev pr-sweep --json`` prints."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from wrapper.jsonform import JsonForm, PrHead


class UpdateOutcome(enum.StrEnum):
    """What update-branch did for one PR that was clean and behind its base."""

    UPDATED = "updated"  # the base was merged in and pushed to the head branch
    WOULD_UPDATE = "would_update"  # --dry-run: it would have been updated
    UP_TO_DATE = "up_to_date"  # the fetched base was already in the head; nothing pushed
    NEEDS_MANUAL_REBASE = "needs_manual_rebase"  # merge conflict: aborted, notified
    PUSH_REJECTED = "push_rejected"  # the head branch moved meanwhile (never forced)
    FAILED = "failed"  # git or GitHub failed for this PR; ``reason`` says how


@dataclass(frozen=True)
class UpdateResult(PrHead):
    outcome: UpdateOutcome
    new_head: str | None = None
    reason: str | None = None
    detail: str = ""


@dataclass(frozen=True)
class DigestRow(PrHead):
    """One PR waiting only for a human approval."""

    verdict_line: str
    artifact: str
    pr_url: str
    merge_gate: str | None = None  # "CONTEXT STATE" at the head, when the gate is on (D85)


@dataclass(frozen=True)
class DeferredRow(PrHead):
    """A pending ``deferred:budget`` marker, and what the sweep did about it."""

    budget: str
    reopens_at: datetime | None
    current: bool  # still the PR's head
    retried: str | None = None  # the review outcome when it was retried
    detail: str = ""

    JSON_TIMESPEC = "auto"


@dataclass(frozen=True)
class HealthProblem(JsonForm):
    """One line of the health section; ``code`` is stable (docs/sweep.md)."""

    code: str  # schedule_<state> | schedule_missing | health_unreadable | budget_exhausted
    subject: str  # a schedule name or a repository
    message: str


@dataclass
class RepoReport(JsonForm):
    """The sweep of one repository; ``error``/``reason`` when it could not be swept."""

    repo: str
    error: str | None = None
    reason: str | None = None
    updates: list[UpdateResult] = field(default_factory=list)
    digest: list[DigestRow] = field(default_factory=list)
    deferred: list[DeferredRow] = field(default_factory=list)
    unreviewed: list[int] = field(default_factory=list)  # open PRs whose head has no verdict


@dataclass
class SweepReport:
    """Everything one sweep found and did; printed as one JSON object with ``--json``."""

    dry_run: bool
    repos: list[RepoReport] = field(default_factory=list)
    health: list[HealthProblem] = field(default_factory=list)
    digest_sent: bool = False
    notify_errors: list[str] = field(default_factory=list)

    @property
    def digest(self) -> list[DigestRow]:
        return [row for repo in self.repos for row in repo.digest]

    def to_json(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "repos": [r.to_json() for r in self.repos],
            "digest": [row.to_json() for row in self.digest],
            "digest_sent": self.digest_sent,
            "health": [h.to_json() for h in self.health],
            "notify_errors": list(self.notify_errors),
        }
