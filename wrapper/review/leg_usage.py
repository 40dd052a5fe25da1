"""A round's reviewer legs and what they spent, recorded (issue 31, D103): each leg the
run's :class:`~wrapper.usage.UsageMeter` holds is priced (:func:`wrapper.usage.priced`,
kdev.yaml ``prices``), appended to the repository's usage log
(:mod:`wrapper.ledger.usagelog`) and counted in the metrics textfile
(:func:`wrapper.metrics.count_usage`); the verdict header sums them
(:func:`wrapper.usage.summary`)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from wrapper.errors import LedgerError
from wrapper.jsonform import PrHead
from wrapper.ledger.files import LedgerFiles
from wrapper.ledger.usagelog import UsageRecord, append_usage
from wrapper.metrics import count_usage
from wrapper.usage import LegUsage, Price, UsageMeter, priced

if TYPE_CHECKING:
    from wrapper.review.context import ReviewContext

log = logging.getLogger("kdev.review")


@dataclass(frozen=True)
class LegOf(PrHead):
    """Whose legs they are: the repository, PR, head, patch-id and kdev command."""

    patch_id: str | None
    command: str


def record_legs(
    ledger: LedgerFiles,
    prices: Mapping[str, Price],
    meter: UsageMeter,
    of: LegOf,
    at: datetime,
    environ: Mapping[str, str],
) -> list[LegUsage]:
    """The legs ended since ``meter`` was last read, priced, recorded and counted."""
    legs = [priced(model, reported, prices) for model, reported in meter.take()]
    for usage in legs:
        record = UsageRecord(at, of.repo, of.pr, of.head_sha, of.patch_id, of.command, usage)
        append_usage(ledger, record)
    count_usage(of.repo, legs, environ)
    return legs


def record_usage(
    ctx: ReviewContext, repo: str, pr: int, head_sha: str, patch_id: str | None, command: str
) -> list[LegUsage]:
    """:func:`record_legs` of a review context's meter."""
    of = LegOf(repo, pr, head_sha, patch_id, command)
    return record_legs(ctx.ledger, ctx.config.prices, ctx.meter, of, ctx.clock(), ctx.environ)


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
