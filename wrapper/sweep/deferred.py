"""(c') retry-deferred: a ``deferred:budget`` head still at the PR's head whose budget
window has reopened is reviewed again, so a deferral never becomes a silent drop."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from pathlib import Path

from engine.github import PullRequest
from wrapper.errors import KdevError, Outcome
from wrapper.review.review import ReviewContext, ReviewRequest, review_pr
from wrapper.sweep.config import RepositoryEntry
from wrapper.sweep.context import SweepContext
from wrapper.sweep.decide import should_retry
from wrapper.sweep.report import DeferredRow

log = logging.getLogger("kdev.sweep")
# What the sweep's context hands a review as it is (a ReviewContext field of each name).
SHARED_WITH_REVIEW = "ledger github environ clock reviewer_transport notify_transport".split()


def retry_deferred(
    ctx: SweepContext, entry: RepositoryEntry, pulls: Sequence[PullRequest]
) -> list[DeferredRow]:
    """Every pending deferral of the repository, each retried when it is due (not with
    ``dry_run`` or ``retry_deferred`` off)."""
    heads = {pr.number: pr for pr in pulls}
    now = ctx.clock()
    rows: list[DeferredRow] = []
    for _, number, marker in ctx.ledger.list_deferred(entry.repo):
        current = heads.get(number)
        is_current = current is not None and current.head_sha == marker.head_sha
        row = DeferredRow(
            entry.repo, number, marker.head_sha, marker.budget, marker.reopens_at, is_current
        )
        if ctx.retry_deferred and not ctx.dry_run and current is not None:
            if should_retry(marker, current.head_sha, now):
                row = _retry_one(ctx, entry, current, row)
        rows.append(row)
    return rows


def _retry_one(
    ctx: SweepContext, entry: RepositoryEntry, pr: PullRequest, row: DeferredRow
) -> DeferredRow:
    log.info("%s #%s: retrying deferred head %s", entry.repo, pr.number, pr.head_sha[:12])
    kdev = ctx.kdev
    if entry.notify is not None:
        kdev = kdev.model_copy(update={"notify": list(entry.notify)})
    review_ctx = ReviewContext(
        config=kdev,
        # The entry's own targets win over the author's recipient (wrapper.notify.route).
        schedule_notify=None if entry.notify is None else list(entry.notify),
        **{name: getattr(ctx, name) for name in SHARED_WITH_REVIEW},
    )
    request = ReviewRequest(
        repo=entry.repo,
        pr=pr.number,
        head_sha=pr.head_sha,
        checkout=Path(entry.checkout),
        pr_url=pr.html_url,
        author=pr.user_login,
    )
    try:
        report = review_pr(request, review_ctx)
    except KdevError as exc:
        return dataclasses.replace(row, retried="failed", detail=f"{exc.message} [{exc.reason}]")
    if report.outcome is Outcome.CARRIED_FORWARD:
        ctx.ledger.clear_deferred(entry.repo, pr.number, pr.head_sha)
    return dataclasses.replace(row, retried=report.outcome.value, detail=report.detail)
