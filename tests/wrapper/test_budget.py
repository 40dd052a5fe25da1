"""Budget decisions (docs/decisions.md D9): pure, over leg records, window edges pinned."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from wrapper.config import Budgets
from wrapper.ledger.ledger import Ledger, LegRecord
from wrapper.review.budget import WINDOW, BudgetDecision, decide_budget

NOW = datetime(2025, 3, 2, 12, 0, 0, tzinfo=UTC)
PR = 7
HEAD = "a" * 40


def leg(ago: timedelta, pr: int = PR) -> LegRecord:
    return LegRecord(pr=pr, head_sha=HEAD, started_at=NOW - ago)


def budgets(per_repo: int = 50, per_pr: int = 10) -> Budgets:
    return Budgets(daily_legs_per_repo=per_repo, daily_rounds_per_pr=per_pr)


def hours(n: float) -> timedelta:
    return timedelta(hours=n)


def test_a_leg_is_allowed_while_both_budgets_have_room() -> None:
    decision = decide_budget(budgets(3, 2), [leg(hours(1)), leg(hours(2), pr=8)], PR, NOW)
    assert decision == BudgetDecision(allowed=True, budget=None, count=2, limit=3, reopens_at=None)


def test_a_leg_started_23h59m_ago_counts_and_one_started_24h01m_ago_does_not() -> None:
    inside = leg(timedelta(hours=23, minutes=59))
    outside = leg(timedelta(hours=24, minutes=1))
    assert decide_budget(budgets(1), [inside], PR, NOW).allowed is False
    assert decide_budget(budgets(1), [outside], PR, NOW).allowed is True


def test_a_leg_leaves_the_window_exactly_24h_after_it_started() -> None:
    assert decide_budget(budgets(1), [leg(WINDOW)], PR, NOW).allowed is True
    assert decide_budget(budgets(1), [leg(WINDOW - timedelta(seconds=1))], PR, NOW).allowed is False


def test_the_repo_budget_reopens_when_the_oldest_leg_in_the_window_leaves_it() -> None:
    legs = [leg(hours(1)), leg(hours(20)), leg(hours(5), pr=8), leg(hours(30))]
    decision = decide_budget(budgets(per_repo=3), legs, PR, NOW)
    assert decision == BudgetDecision(
        allowed=False,
        budget="daily_legs_per_repo",
        count=3,
        limit=3,
        reopens_at=NOW - hours(20) + WINDOW,  # four hours from now
    )


def test_when_the_limit_was_lowered_below_the_count_it_reopens_once_enough_legs_left() -> None:
    legs = [leg(hours(h)) for h in (1, 2, 3, 4, 5)]
    decision = decide_budget(budgets(per_repo=2, per_pr=100), legs, PR, NOW)
    assert (decision.count, decision.limit) == (5, 2)
    # Four legs must leave; the fourth oldest started 2 h ago.
    assert decision.reopens_at == NOW + hours(22)


def test_the_pr_round_cap_counts_only_that_prs_legs() -> None:
    legs = [leg(hours(1)), leg(hours(3)), leg(hours(2), pr=8), leg(hours(4), pr=9)]
    blocked = decide_budget(budgets(per_repo=50, per_pr=2), legs, PR, NOW)
    assert blocked == BudgetDecision(
        allowed=False,
        budget="daily_rounds_per_pr",
        count=2,
        limit=2,
        reopens_at=NOW - hours(3) + WINDOW,
    )
    assert decide_budget(budgets(per_repo=50, per_pr=2), legs, 8, NOW).allowed is True


def test_a_limit_of_zero_allows_no_leg_and_is_rechecked_daily() -> None:
    for limits in (budgets(per_repo=0), budgets(per_pr=0)):
        decision = decide_budget(limits, [], PR, NOW)
        assert decision.allowed is False
        assert (decision.count, decision.limit, decision.reopens_at) == (0, 0, NOW + WINDOW)
    assert decide_budget(budgets(per_repo=0), [], PR, NOW).budget == "daily_legs_per_repo"
    assert decide_budget(budgets(per_pr=0), [], PR, NOW).budget == "daily_rounds_per_pr"


def test_when_both_budgets_are_exhausted_the_one_closed_longer_is_named() -> None:
    # The repo budget reopens in 1 h; this PR's rounds only in 23 h.
    legs = [leg(hours(1)), leg(hours(2)), leg(hours(23), pr=8)]
    decision = decide_budget(budgets(per_repo=3, per_pr=2), legs, PR, NOW)
    assert decision.budget == "daily_rounds_per_pr"
    assert decision.reopens_at == NOW + hours(22)
    never = decide_budget(budgets(per_repo=3, per_pr=0), legs, PR, NOW)
    assert (never.budget, never.reopens_at) == ("daily_rounds_per_pr", NOW + WINDOW)


def test_legs_stamped_in_the_future_still_count() -> None:
    assert decide_budget(budgets(1), [leg(-hours(1))], PR, NOW).allowed is False


def test_the_budget_decides_over_the_legs_the_ledger_recorded(tmp_path: Path) -> None:
    clock_now = [NOW - hours(25)]
    ledger = Ledger(tmp_path / "reviews", clock=lambda: clock_now[0])
    for started in (NOW - hours(25), NOW - hours(10), NOW - hours(1)):
        clock_now[0] = started
        ledger.record_leg_start("acme/widgets", PR, HEAD)
    legs = ledger.legs_since("acme/widgets", NOW - WINDOW)
    decision = decide_budget(budgets(per_repo=2), legs, PR, NOW)
    assert (decision.allowed, decision.count) == (False, 2)
    assert decision.reopens_at == NOW + hours(14)


def test_a_chunked_round_needs_room_for_all_its_legs_and_reopens_when_they_fit() -> None:
    # D89: a round of 3 chunk legs runs whole or not at all.
    legs = [leg(hours(1)), leg(hours(5)), leg(hours(20), pr=8)]
    assert decide_budget(budgets(per_repo=6), legs, PR, NOW, legs=3).allowed is True
    decision = decide_budget(budgets(per_repo=5), legs, PR, NOW, legs=3)
    assert decision.allowed is False and decision.budget == "daily_legs_per_repo"
    # Room for 3 once the oldest leg (20 h ago) has left the window.
    assert decision.reopens_at == NOW - hours(20) + WINDOW
    assert decide_budget(budgets(per_repo=5), legs, PR, NOW, legs=2).allowed is True


def test_a_chunked_round_larger_than_the_limit_is_rechecked_daily() -> None:
    decision = decide_budget(budgets(per_repo=50, per_pr=2), [], PR, NOW, legs=3)
    assert decision.allowed is False and decision.budget == "daily_rounds_per_pr"
    assert decision.reopens_at == NOW + WINDOW
