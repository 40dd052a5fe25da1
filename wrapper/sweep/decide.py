"""The sweep's pure decisions: no I/O, every input passed in (docs/sweep.md)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

# is_same_repo is pure; it moves with the GitHub types (engine.github.types, issue 16).
from engine.github import is_same_repo
from wrapper.sweep.report import HealthProblem

if TYPE_CHECKING:
    from engine.api import ScheduleHealthRow
    from engine.github import PullRequest
    from wrapper.config import Budgets
    from wrapper.gh import PullGraph
    from wrapper.ledger.ledger import DeferredMarker, IndexEntry, LegRecord

APPROVE = "APPROVE"
REVIEW_REQUIRED = "REVIEW_REQUIRED"
BUDGET_WINDOW = timedelta(hours=24)


def is_verdict_clean(index: Mapping[str, IndexEntry], head_sha: str) -> bool:
    """An APPROVE verdict (reviewed or carried) is recorded for exactly ``head_sha``.

    A head absent from the index is un-reviewed, so not clean.
    """
    entry = index.get(head_sha)
    return entry is not None and entry.verdict == APPROVE


def wants_update(pr: PullRequest, index: Mapping[str, IndexEntry], behind_by: int) -> bool:
    """Update-branch applies: open, same-repo, clean at its head, behind (a draft too:
    nothing in the sweep treats drafts apart)."""
    return (
        pr.state == "open"
        and is_same_repo(pr)
        and is_verdict_clean(index, pr.head_sha)
        and behind_by > 0
    )


def wants_digest(graph: PullGraph, index: Mapping[str, IndexEntry]) -> bool:
    """An approval request: open, auto-merge armed, review still required, and clean at
    the head GitHub reports now (never a stale head). No draft is one: GitHub never arms
    auto-merge on a draft."""
    return (
        graph.state == "OPEN"
        and not graph.is_cross_repository
        and graph.auto_merge_armed
        and graph.review_decision == REVIEW_REQUIRED
        and is_verdict_clean(index, graph.head_ref_oid)
    )


def should_retry(marker: DeferredMarker, current_head: str | None, now: datetime) -> bool:
    """Retry a deferral when its head is still the PR's head and its
    budget has reopened. A marker without a time (written by an older kdev) is retried
    now: review-pr decides again and writes a fresh marker if it is still held back."""
    return current_head == marker.head_sha and (
        marker.reopens_at is None or marker.reopens_at <= now
    )


def repo_budget_spent(budgets: Budgets, legs: Iterable[LegRecord], now: datetime) -> bool:
    """The repository's ``daily_legs_per_repo`` is used up at ``now``."""
    started = [leg for leg in legs if leg.started_at > now - BUDGET_WINDOW]
    return len(started) >= budgets.daily_legs_per_repo


def schedule_problems(
    names: Sequence[str], rows: Sequence[ScheduleHealthRow]
) -> list[HealthProblem]:
    """Health lines for the review schedules ``names``: each one in a paging state
    (stale, blind or overdue: reviews are not being fired; failing: the newest run
    failed), and each that does not exist."""
    by_name = {row.name: row for row in rows}
    problems: list[HealthProblem] = []
    for name in names:
        row = by_name.get(name)
        if row is None:
            problems.append(
                HealthProblem("schedule_missing", name, "no such li schedule; reviews never fire")
            )
            continue
        if row.paging:
            said = "; ".join(cause.message for cause in row.causes)
            problems.append(HealthProblem(f"schedule_{row.state}", name, said or row.state))
    return problems
