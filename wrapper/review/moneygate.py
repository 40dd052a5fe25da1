"""Step 4's money budgets (D106): the round's estimate, the spend in ``usage.jsonl``, and
over a cap a ``deferred:budget`` marker, a notice and the merge gate's ``pending``, as a
leg budget's (the decision itself is the pure
:func:`wrapper.review.money_budget.decide_money`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING

from wrapper.ledger.deferral import cap_reopens_at
from wrapper.ledger.records import LegRecord
from wrapper.ledger.usagelog import UsageRecord, read_usage
from wrapper.review import money_budget
from wrapper.review.budget import WINDOW
from wrapper.review.budgetgate import defer, over_budget
from wrapper.review.context import ReviewContext, ReviewReport, ReviewRequest
from wrapper.review.money_budget import Spend, decide_money, estimate_round
from wrapper.review.sizing import estimate_tokens
from wrapper.usage import price_for

if TYPE_CHECKING:
    from wrapper.review.chunked_leg import SizedRound
    from wrapper.review.prompt import PromptInput
    from wrapper.review.roster_chunks import RosterRound

CENTS = Decimal(100)


def prompt_tokens(
    sized: SizedRound | RosterRound, data: PromptInput, template: str | None
) -> list[int]:
    """The estimated prompt tokens of every leg the round plans (the size policy's
    estimate, D89): a chunk's, or a roster reviewer's whole prompt."""
    from wrapper.review.chunked_leg import SizedRound

    if isinstance(sized, SizedRound):
        chunks = sized.plan.chunks
        return [sized.overhead + c.tokens for c in chunks] or [sized.overhead]
    tokens: list[int] = []
    for index, plan in enumerate(sized.reviewers):
        if plan.plan is None or sized.limit is None:  # unsized: its prompt as rendered
            tokens.append(estimate_tokens(sized.prompt((index, 0), data, template)))
            continue
        overhead = sized.limit.tokens - plan.plan.budget
        tokens.extend(overhead + c.tokens for c in plan.plan.chunks or ())
        if not plan.plan.chunks:
            tokens.append(overhead)
    return tokens


def _spends(records: Iterable[UsageRecord]) -> list[Spend]:
    return [Spend(r.at, r.repo, r.pr, r.usage.cost) for r in records]


def running_legs(
    legs: Sequence[LegRecord],
    records: Sequence[UsageRecord],
    repo: str,
    wait: timedelta,
    now: datetime,
) -> list[Spend]:
    """The legs of ``repo`` started but not yet in the usage log, each as a leg of
    unknown cost that must have ended by its round's start plus ``wait`` per leg (a
    round's legs are recorded together at its start; a chunked one runs them in turn).
    A leg past that time has ended, recorded or not (a killed process records nothing)."""
    rounds = Counter((leg.pr, leg.head_sha, leg.started_at) for leg in legs)
    running: list[Spend] = []
    for (pr, head, started), count in sorted(rounds.items(), key=lambda item: item[0][2]):
        ends_by = started + count * wait
        if ends_by <= now:
            continue
        ended = sum(
            1 for r in records if r.repo == repo and r.pr == pr and r.head_sha == head
            and r.at >= started
        )  # fmt: skip
        running.extend(Spend(started, repo, pr, None, ends_by) for _ in range(count - ended))
    return running


def over_budgets(
    ctx: ReviewContext,
    req: ReviewRequest,
    pr_url: str,
    patch_id: str,
    sized: SizedRound | RosterRound | None,
    data: PromptInput,
) -> ReviewReport | None:
    """Step 4's leg budgets for every leg of the round (D9, D89), then its money budgets:
    the first deferral, else None. A ``deferred_budget`` report when the round's estimate
    would pass a money cap (or cannot be decided); no money cap set: not read."""
    over = over_budget(ctx, req, pr_url, patch_id, legs=1 if sized is None else sized.legs)
    if over is not None:
        return over
    money = ctx.config.money_budgets
    reviewer = ctx.config.reviewer
    if not money.any_cap or reviewer is None or sized is None:
        return None  # no reviewer: the leg fails on its own, spending nothing
    now = ctx.clock()
    day, _ = money_budget.day_window(now)
    month, _ = money_budget.month_window(now)
    monthly = money.monthly_total_usd is not None
    records = list(read_usage(ctx.ledger, None if monthly else req.repo, min(day, month)))
    wait = cap_reopens_at(ctx.config, now) - now  # one leg's longest run
    started = ctx.ledger.legs_since(req.repo, now - WINDOW)
    running = running_legs(started, records, req.repo, wait, now)
    legs = prompt_tokens(sized, data, ctx.config.prompt_template)
    price = price_for(reviewer.model, ctx.config.prices)
    estimate = None if price is None else estimate_round(legs, price, money.output_tokens_per_leg)
    spends = _spends(records) + running
    decision = decide_money(money, spends, req.repo, req.pr, now, estimate)
    if decision.allowed:
        return None
    assert decision.budget is not None
    spent = int(decision.spent * CENTS)  # the marker's count and limit: cents
    cap = int((decision.cap or Decimal(0)) * CENTS)
    return defer(
        ctx,
        req,
        pr_url,
        decision.budget,
        spent,
        cap,
        decision.reopens_at,
        patch_id,
        why=money_budget.why(decision, reviewer.model, len(legs), money),
        shown=money_budget.figures(decision),
    )
