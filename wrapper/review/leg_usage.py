"""A round's reviewer legs and what they spent, recorded (issue 31, D103): each leg the
run's :class:`~wrapper.usage.UsageMeter` holds is priced (:func:`wrapper.usage.priced`,
kdev.yaml ``prices``), appended to the repository's usage log
(:mod:`wrapper.ledger.usagelog`) and counted in the metrics textfile
(:func:`wrapper.metrics.count_usage`); the verdict opens with them
(:func:`wrapper.usage.usage_header`)."""

from __future__ import annotations

import logging

from wrapper.errors import LedgerError
from wrapper.ledger.usagelog import UsageRecord, append_usage
from wrapper.metrics import count_usage
from wrapper.review.context import ReviewContext
from wrapper.usage import LegUsage, priced

log = logging.getLogger("kdev.review")


def record_usage(
    ctx: ReviewContext,
    repo: str,
    pr: int,
    head_sha: str,
    patch_id: str | None,
    command: str,
) -> list[LegUsage]:
    """The legs ended since the meter was last read, priced, recorded and counted."""
    legs = [priced(model, reported, ctx.config.prices) for model, reported in ctx.meter.take()]
    at = ctx.clock()
    for usage in legs:
        append_usage(ctx.ledger, UsageRecord(at, repo, pr, head_sha, patch_id, command, usage))
    count_usage(repo, legs, ctx.environ)
    return legs


def record_usage_or_warn(
    ctx: ReviewContext, repo: str, pr: int, head_sha: str, patch_id: str | None, command: str
) -> None:
    """:func:`record_usage` where its failure must not become the run's: on a failed
    round's way out (a leg that failed after it spent is still counted) and after a
    description leg; a ledger that cannot take it is a WARNING."""
    try:
        record_usage(ctx, repo, pr, head_sha, patch_id, command)
    except LedgerError as exc:
        log.warning("could not record the usage of %s #%s: %s", repo, pr, exc)
