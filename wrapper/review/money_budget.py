"""Money budget decisions (docs/decisions.md D106): pure functions over the usage log.

A leg's cost is known only when it ends (``usage.jsonl``, D103), so a round is gated by
an *estimate*: each planned leg's estimated prompt tokens (the size policy's estimate,
D89) at the model's input price, plus ``output_tokens_per_leg`` at its output price
(:func:`estimate_round`). The round starts when, for every cap that is set, the spend
recorded in its window plus the estimate is at most the cap:

- ``money_per_repo_per_day``: the repository's legs since 00:00 UTC today;
- ``money_per_pr_per_day``: the PR's legs since 00:00 UTC today;
- ``money_monthly_total``: every repository's legs since the 1st of this month, UTC.

Fail closed: a leg of unknown cost counts ``unknown_leg_usd``, and with that unset a
window holding one cannot be decided and the round is deferred; a leg still running is
such a leg (``Spend.ends_by``: its cost is not known yet); a model without a price has
no estimate and is deferred. A window reopens at its end (the next UTC midnight, the
next month's first), or sooner when every running leg in it must have ended by then;
records stamped in the future (clock skew) are counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import ROUND_CEILING, Decimal

from wrapper.config_money import MoneyBudgets
from wrapper.usage import CENT, MILLION, Price

PER_REPO_PER_DAY = "money_per_repo_per_day"
PER_PR_PER_DAY = "money_per_pr_per_day"
MONTHLY_TOTAL = "money_monthly_total"
SETTINGS = {
    PER_REPO_PER_DAY: "money_budgets.per_repo_per_day_usd",
    PER_PR_PER_DAY: "money_budgets.per_pr_per_day_usd",
    MONTHLY_TOTAL: "money_budgets.monthly_total_usd",
}


@dataclass(frozen=True)
class Spend:
    """One ended leg as a budget sees it: when, for which PR of which repository, and
    its cost (None: unknown)."""

    at: datetime
    repo: str
    pr: int
    cost: Decimal | None
    # A leg still running (started, not yet in the usage log): when it must have ended.
    ends_by: datetime | None = None


@dataclass(frozen=True)
class MoneyDecision:
    """Whether the round may start, and if not, which money budget holds it until when."""

    allowed: bool
    budget: str | None = None  # None when allowed; else a key of SETTINGS
    spent: Decimal = Decimal(0)  # known spend in that budget's window
    unknown_legs: int = 0  # legs of unknown cost in that window
    cap: Decimal | None = None
    estimate: Decimal | None = None  # None: the model has no price
    reopens_at: datetime | None = None

    @property
    def setting(self) -> str:
        """The kdev.yaml key of the budget that held the round back."""
        return SETTINGS.get(self.budget or "", "money_budgets")


def estimate_round(prompt_tokens: Sequence[int], price: Price, output_tokens: int) -> Decimal:
    """The round's estimated cost: each leg's prompt tokens at ``price.input`` and
    ``output_tokens`` at ``price.output`` (never the cached price: it could only lower
    the estimate)."""
    legs = max(1, len(prompt_tokens))
    tokens_in = sum(prompt_tokens)
    return (tokens_in * price.input + legs * output_tokens * price.output) / MILLION


def day_window(now: datetime) -> tuple[datetime, datetime]:
    """The UTC day holding ``now``: its start and the next day's."""
    start = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return start, start + timedelta(days=1)


def month_window(now: datetime) -> tuple[datetime, datetime]:
    """The UTC calendar month holding ``now``: its first and the next month's first."""
    start = now.astimezone(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    after = (start + timedelta(days=32)).replace(day=1)
    return start, after


def decide_money(
    money: MoneyBudgets,
    spends: Sequence[Spend],
    repo: str,
    pr: int,
    now: datetime,
    estimate: Decimal | None,
) -> MoneyDecision:
    """May a round of ``estimate`` for ``pr`` of ``repo`` start at ``now``, given every
    repository's ended legs ``spends`` (the month's at least)? When several budgets
    refuse, the one that stays closed longest is named, so ``reopens_at`` is when all
    may have room again."""
    day, next_day = day_window(now)
    month, next_month = month_window(now)
    checks = (
        (PER_REPO_PER_DAY, money.per_repo_per_day_usd, day, next_day, lambda s: s.repo == repo),
        (
            PER_PR_PER_DAY,
            money.per_pr_per_day_usd,
            day,
            next_day,
            lambda s: s.repo == repo and s.pr == pr,
        ),
        (MONTHLY_TOTAL, money.monthly_total_usd, month, next_month, lambda s: True),
    )
    denials: list[MoneyDecision] = []
    for budget, cap, start, reopens, counts in checks:
        if cap is None:
            continue
        window = [s for s in spends if s.at >= start and counts(s)]
        spent = sum((s.cost for s in window if s.cost is not None), Decimal(0))
        unknown = sum(1 for s in window if s.cost is None)
        running = [s.ends_by for s in window if s.ends_by is not None]
        if running:  # re-decided once every running leg must have ended, if sooner
            reopens = min(reopens, max(running))
        denied = MoneyDecision(False, budget, spent, unknown, cap, estimate, reopens)
        if estimate is None or (unknown and money.unknown_leg_usd is None):
            denials.append(denied)  # cannot be decided: fail closed
            continue
        unknown_value = unknown * (money.unknown_leg_usd or Decimal(0))
        if spent + unknown_value + estimate > cap:
            denials.append(denied)
    if not denials:
        return MoneyDecision(True, estimate=estimate)
    return max(denials, key=lambda d: d.reopens_at or now)


def usd(amount: Decimal) -> str:
    """``amount`` as the notices show it: dollars to the cent, rounded up, so a shown
    spend is never below the true one."""
    return f"${amount.quantize(CENT, rounding=ROUND_CEILING)}"


def figures(decision: MoneyDecision) -> str:
    """The short numbers of a refusal, for the report's detail and the merge gate's
    description (GitHub caps it at 140 characters): ``$spent+$estimate/$cap``."""
    estimate = "no price" if decision.estimate is None else usd(decision.estimate)
    cap = "none" if decision.cap is None else usd(decision.cap)
    unknown = f"+{decision.unknown_legs} unknown" if decision.unknown_legs else ""
    return f"{usd(decision.spent)}{unknown}+{estimate}/{cap}"


def why(decision: MoneyDecision, model: str, legs: int, money: MoneyBudgets) -> str:
    """The notice's one line: the budget, spent, cap, the estimate and what to change."""
    cap = "none" if decision.cap is None else usd(decision.cap)
    text = f"{decision.budget}: spent {usd(decision.spent)} of {cap} in its window"
    if decision.estimate is None:
        text += f"; model {model!r} has no price in prices, so no estimate can be made"
    else:
        text += (
            f"; this round's estimate {usd(decision.estimate)} ({legs} leg(s), "
            f"{money.output_tokens_per_leg} output tokens each)"
        )
    if decision.unknown_legs:
        counted = (
            "cannot be decided (money_budgets.unknown_leg_usd is unset)"
            if money.unknown_leg_usd is None
            else f"counted at {usd(money.unknown_leg_usd)} each"
        )
        text += f"; {decision.unknown_legs} leg(s) of unknown cost {counted}"
    return f"{text}; the setting is {decision.setting}"
