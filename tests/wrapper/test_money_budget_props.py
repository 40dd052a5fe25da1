"""Hypothesis (issue 31's acceptance, D106): no sequence of ended legs, leg starts and
prunes of the ledger's logs changes a money budget decision wrongly. Each decision read
through the ledger (``usage.jsonl``) is the one an independent reading of the same legs
gives (UTC dates compared, not windows computed), and a prune (``prune_legs``,
``prune_posted``: ``usage.jsonl`` is kept whole, D103) changes none of them."""

from __future__ import annotations

import tempfile
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from wrapper.config_money import MoneyBudgets
from wrapper.ledger.ledger import Ledger
from wrapper.ledger.usagelog import UsageRecord, append_usage, read_usage
from wrapper.review.budget import WINDOW
from wrapper.review.money_budget import (
    MONTHLY_TOTAL,
    PER_PR_PER_DAY,
    PER_REPO_PER_DAY,
    MoneyDecision,
    Spend,
    decide_money,
)
from wrapper.review.moneygate import running_legs
from wrapper.usage import CostSource, LegUsage

REPOS = ("octo/widgets", "octo/other")
SHA = "a" * 40
# An hour before a month's last midnight: days and months both turn within the test.
T0 = datetime(2026, 11, 30, 23, 0, tzinfo=UTC)
WAIT = timedelta(minutes=30)  # how long a running leg may run


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def _usage(cost: Decimal | None) -> LegUsage:
    if cost is None:
        return LegUsage("m", None, None, CostSource.UNKNOWN, "usage_not_reported")
    return LegUsage("m", None, cost, CostSource.REPORTED)


def _decide(
    ledger: Ledger, money: MoneyBudgets, pr: int, estimate: Decimal | None, now: datetime
) -> MoneyDecision:
    records = list(read_usage(ledger))
    spends = [Spend(r.at, r.repo, r.pr, r.usage.cost) for r in records]
    started = ledger.legs_since(REPOS[0], now - WINDOW)
    spends += running_legs(started, records, REPOS[0], WAIT, now)
    return decide_money(money, spends, REPOS[0], pr, now, estimate)


def _month(day: date) -> tuple[int, int]:
    return day.year, day.month


def _next_month(day: date) -> datetime:
    year, month = (day.year + 1, 1) if day.month == 12 else (day.year, day.month + 1)
    return datetime(year, month, 1, tzinfo=UTC)


def _oracle(
    legs: list[tuple[int, int, int, Decimal | None, bool]],
    money: MoneyBudgets,
    pr: int,
    estimate: Decimal | None,
    now: datetime,
) -> dict[str, tuple[Decimal, int, datetime]]:
    """The budgets that refuse, each with its known spend, unknown legs and reopening."""
    today = now.date()
    tomorrow = datetime.combine(today + timedelta(days=1), datetime.min.time(), UTC)
    refused: dict[str, tuple[Decimal, int, datetime]] = {}
    for budget, cap, reopens, counts in (
        (PER_REPO_PER_DAY, money.per_repo_per_day_usd, tomorrow,
         lambda r, p, d: r == 0 and d >= today),
        (PER_PR_PER_DAY, money.per_pr_per_day_usd, tomorrow,
         lambda r, p, d: r == 0 and p == pr and d >= today),
        (MONTHLY_TOTAL, money.monthly_total_usd, _next_month(today),
         lambda r, p, d: _month(d) >= _month(today)),
    ):  # fmt: skip
        if cap is None:
            continue
        costs: list[Decimal | None] = []
        ends: list[datetime] = []
        for r, p, minute, cost, running in legs:
            at = T0 + timedelta(minutes=minute)
            if not counts(r, p, at.date()):
                continue
            if not running:
                costs.append(cost)
            elif r == 0 and at >= now - timedelta(hours=24) and at + WAIT > now:
                costs.append(None)  # a running leg of the gated repository: unknown
                ends.append(at + WAIT)
        known = sum((c for c in costs if c is not None), Decimal(0))
        unknown = sum(c is None for c in costs)
        if ends:
            reopens = min(reopens, max(ends))
        if estimate is None or (unknown and money.unknown_leg_usd is None):
            refused[budget] = (known, unknown, reopens)
        elif known + unknown * (money.unknown_leg_usd or 0) + estimate > cap:
            refused[budget] = (known, unknown, reopens)
    return refused


CENTS = st.integers(0, 500).map(lambda n: Decimal(n) / 100)
LEG = st.tuples(
    st.integers(0, 1),  # the repository
    st.integers(1, 3),  # the PR
    # Any minute of 40 days before T0 to an hour after it (clock skew), often near midnight.
    # Exactly at a midnight too (T0 - 23 h and T0 + 1 h, the month's turn), and a minute off.
    st.one_of(
        st.integers(-40 * 24 * 60, 60),
        st.integers(-90, 90),
        st.sampled_from([-23 * 60 - 1, -23 * 60, -23 * 60 + 1, 59, 60, 61]),
    ),
    st.one_of(st.none(), CENTS),  # its cost; None: unknown
    st.booleans(),  # still running: started (legs.jsonl), no usage line yet
)


@settings(max_examples=80, deadline=None)
@given(
    steps=st.lists(st.one_of(LEG, st.just("prune")), min_size=1, max_size=30),
    caps=st.tuples(*(st.one_of(st.none(), CENTS.map(lambda d: d * 4)) for _ in range(3))),
    unknown_leg=st.one_of(st.none(), CENTS),
    estimate=st.one_of(st.none(), CENTS),
    pr=st.integers(1, 3),
    later=st.one_of(st.integers(0, 3 * 24 * 60), st.sampled_from([59, 60, 61])),
)
def test_no_sequence_of_legs_and_prunes_changes_a_money_decision_wrongly(
    steps: list[object],
    caps: tuple[Decimal | None, Decimal | None, Decimal | None],
    unknown_leg: Decimal | None,
    estimate: Decimal | None,
    pr: int,
    later: int,
) -> None:
    money = MoneyBudgets(
        per_repo_per_day_usd=caps[0],
        per_pr_per_day_usd=caps[1],
        monthly_total_usd=caps[2],
        unknown_leg_usd=unknown_leg,
    )
    legs: list[tuple[int, int, int, Decimal | None, bool]] = []
    with tempfile.TemporaryDirectory() as tmp:
        clock = Clock()
        pruned, kept = (Ledger(Path(tmp) / name, clock=clock) for name in ("a", "b"))
        for step in steps:
            if step == "prune":
                for repo in REPOS:
                    pruned.prune_legs(repo)
                    pruned.prune_posted(repo)
                continue
            assert isinstance(step, tuple)
            repo, number, minute, cost, running = step
            legs.append(step)
            at = T0 + timedelta(minutes=minute)
            head = f"{len(legs):040x}"  # one head a leg: a usage line ends only its own leg
            clock.now = at
            for ledger in (pruned, kept):
                ledger.record_leg_start(REPOS[repo], number, head)
                if not running:
                    usage = _usage(cost)
                    append_usage(
                        ledger, UsageRecord(at, REPOS[repo], number, head, None, "review-pr", usage)
                    )
        clock.now = T0
        for moment in (T0, T0 + timedelta(minutes=later)):
            clock.now = moment
            decision = _decide(pruned, money, pr, estimate, moment)
            assert decision == _decide(kept, money, pr, estimate, moment)
            refused = _oracle(legs, money, pr, estimate, moment)
            assert decision.allowed == (not refused)
            if refused:
                assert decision.budget in refused
                spent, unknown, reopens = refused[decision.budget]
                assert (decision.spent, decision.unknown_legs) == (spent, unknown)
                assert decision.reopens_at == max(r for _, _, r in refused.values())
