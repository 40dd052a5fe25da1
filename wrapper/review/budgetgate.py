"""Step 4 of ``kdev review-pr`` (shared with ``describe-pr``): over a leg budget, a
``deferred:budget`` marker and a notice, never a silent drop (the decision itself is the
pure :func:`wrapper.review.budget.decide_budget`)."""

from __future__ import annotations

from datetime import datetime, timedelta

from wrapper.errors import Outcome
from wrapper.ledger.deferral import cap_reopens_at
from wrapper.ledger.ledger import DeferredMarker
from wrapper.notify import deferred_notification
from wrapper.review.budget import decide_budget
from wrapper.review.context import ReviewContext, ReviewReport, ReviewRequest, notify


def defer(
    ctx: ReviewContext,
    req: ReviewRequest,
    pr_url: str,
    budget: str,
    count: int,
    limit: int,
    reopens_at: datetime | None,
    patch_id: str,
    *,
    marker: bool = True,
    why: str | None = None,
    shown: str | None = None,
) -> ReviewReport:
    """Step 4, over budget: a ``deferred:budget`` marker and a notice, never a silent drop
    (``why``: a line saying more, in the notice only: the report's detail is also the
    merge gate's description, which GitHub caps at 140 characters; ``shown``, the
    figures shown in place of ``count/limit``: a money budget's dollars, D106).

    ``marker`` False (``kdev describe-pr``) sends the notice only: a marker would make
    ``kdev pr-sweep`` retry a *review* of the head."""
    if marker:
        ctx.ledger.write_deferred(
            req.repo,
            req.pr,
            req.head_sha,
            DeferredMarker(
                budget=budget,
                count=count,
                limit=limit,
                reopens_at=reopens_at,
                head_sha=req.head_sha,
                pr_url=pr_url,
                created_at=ctx.clock(),
            ),
        )
    notify(
        ctx,
        req,
        deferred_notification(
            req.repo, req.pr, budget, count, limit, reopens_at, pr_url, req.head_sha, why, shown
        ),
    )
    return req.report(
        Outcome.DEFERRED_BUDGET,
        patch_id=patch_id,
        detail=f"{budget}: {shown or f'{count}/{limit}'}",
    )


def over_budget(
    ctx: ReviewContext,
    req: ReviewRequest,
    pr_url: str,
    patch_id: str,
    *,
    marker: bool = True,
    legs: int = 1,
) -> ReviewReport | None:
    """Step 4's leg budgets: a ``deferred_budget`` report when ``legs`` more legs (a
    chunked round's, all or none) would pass one, else None."""
    now = ctx.clock()
    started = ctx.ledger.legs_since(req.repo, now - timedelta(hours=24))
    decision = decide_budget(ctx.config.budgets, started, req.pr, now, legs)
    if decision.allowed:
        return None
    assert decision.budget is not None
    return defer(
        ctx,
        req,
        pr_url,
        decision.budget,
        decision.count,
        decision.limit,
        decision.reopens_at,
        patch_id,
        marker=marker,
    )


def defer_for_cap(
    ctx: ReviewContext, req: ReviewRequest, pr_url: str, patch_id: str, *, marker: bool = True
) -> ReviewReport:
    """Step 4's concurrency cap: every slot of the repository is busy. The deferral
    reopens when the running legs must have ended (:func:`cap_reopens_at`)."""
    cap = ctx.config.budgets.max_concurrent_legs_per_repo
    reopens = cap_reopens_at(ctx.config, ctx.clock())
    budget = "max_concurrent_legs_per_repo"
    return defer(ctx, req, pr_url, budget, cap, cap, reopens, patch_id, marker=marker)
