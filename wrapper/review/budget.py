"""Budget decisions (docs/decisions.md D9): pure functions over the leg log the ledger keeps.

Legs are counted when they *start*, over a trailing 24 h window, so a reviewer that
crashes still spends budget and cannot loop on money. Two daily budgets apply:
``daily_legs_per_repo`` (every leg of the repository) and ``daily_rounds_per_pr`` (the
legs of one PR). A limit of 0 allows no legs at all.

The third budget, ``max_concurrent_legs_per_repo``, is *not* decided here: in-flight
legs are held with OS locks (:meth:`wrapper.ledger.ledger.Ledger.concurrency_slot`), which the
kernel releases when a leg's process exits, so a crashed leg can never hold a slot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from wrapper.config import Budgets
from wrapper.ledger.records import LegRecord

WINDOW = timedelta(hours=24)
DAILY_LEGS_PER_REPO = "daily_legs_per_repo"
DAILY_ROUNDS_PER_PR = "daily_rounds_per_pr"


@dataclass(frozen=True)
class BudgetDecision:
    """Whether a leg may start now, and if not, which budget stops it until when."""

    allowed: bool
    budget: str | None  # None when allowed; else daily_legs_per_repo | daily_rounds_per_pr
    count: int  # legs in the window for that budget (allowed: the repository's count)
    limit: int  # that budget's limit (allowed: daily_legs_per_repo)
    reopens_at: datetime | None  # when a leg may start again (re-checked); None if allowed


def _in_window(legs: Sequence[LegRecord], now: datetime) -> list[datetime]:
    """Start times of the legs still in the window, oldest first.

    A leg leaves the window exactly 24 h after it started. Legs stamped in the future
    (clock skew) are counted: a budget errs on the side of spending less.
    """
    return sorted(leg.started_at for leg in legs if leg.started_at > now - WINDOW)


def _reopens_at(starts: list[datetime], limit: int, now: datetime, legs: int = 1) -> datetime:
    """When ``legs`` more fit beside ``starts`` under ``limit``; for a limit below
    ``legs`` (0 included), which never has room, a day from ``now`` (re-checked daily,
    never dropped)."""
    if limit < legs:
        return now + WINDOW
    # The window has room again once count - limit + legs of the oldest have left it.
    return starts[len(starts) - limit + legs - 1] + WINDOW


def decide_budget(
    budgets: Budgets, repo_legs: Sequence[LegRecord], pr: int, now: datetime, legs: int = 1
) -> BudgetDecision:
    """May a leg (``legs``: a chunked round's legs, all or none, D89) for ``pr`` start at
    ``now``, given every leg of the repository?

    ``repo_legs`` are the repository's legs (``Ledger.legs_since(repo, now - WINDOW)``);
    the PR's are those with ``leg.pr == pr``. When a budget is exhausted the decision
    names it, with its count and limit; when both are, it names the one that stays
    closed longer, so ``reopens_at`` is when both have room again (a limit of 0 names
    that budget, re-checked a day from ``now``).
    """
    repo_starts = _in_window(repo_legs, now)
    pr_starts = _in_window([leg for leg in repo_legs if leg.pr == pr], now)
    denials: list[BudgetDecision] = []
    for budget, starts, limit in (
        (DAILY_LEGS_PER_REPO, repo_starts, budgets.daily_legs_per_repo),
        (DAILY_ROUNDS_PER_PR, pr_starts, budgets.daily_rounds_per_pr),
    ):
        if len(starts) + legs > limit:
            denials.append(
                BudgetDecision(
                    allowed=False,
                    budget=budget,
                    count=len(starts),
                    limit=limit,
                    reopens_at=_reopens_at(starts, limit, now, legs),
                )
            )
    if not denials:
        return BudgetDecision(
            allowed=True,
            budget=None,
            count=len(repo_starts),
            limit=budgets.daily_legs_per_repo,
            reopens_at=None,
        )
    never = [d for d in denials if d.limit < legs]
    if never:
        return never[0]
    return max(denials, key=lambda d: d.reopens_at or now)
