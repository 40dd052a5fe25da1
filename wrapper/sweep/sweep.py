"""``kdev pr-sweep``: the periodic pass across repositories (docs/decisions.md D7).

For each repository of the repos config, in this order:

(a) update-branch   every open same-repo PR that is verdict-clean at its head and behind
                    its base gets the base merged in (disposable worktree, configured
                    identity) and pushed to its head branch, never forced. A conflict is
                    aborted and notified (``needs_manual_rebase``); a rejected push (the
                    head moved) is skipped with its reason.    (wrapper.sweep.update)
(c') retry-deferred a ``deferred:budget`` head that is still the PR's head and whose budget
                    window has reopened is reviewed again (``review_pr``), so a deferral
                    never becomes a silent drop.                (wrapper.sweep.deferred)
(b) digest          after re-reading the PRs: every open PR with auto-merge armed, review
                    still required and a clean verdict at its current head is one row of
                    one approval-request message, sent only when it has rows.
                                                                (wrapper.sweep.digest)
(c) health          review schedules that are stale, blind or overdue (read from the li
                    database through :mod:`engine.api`), a repository whose daily
                    budget is spent while it has un-reviewed heads, pending deferrals.
                                                                (wrapper.sweep.health)

The pure decisions are in wrapper.sweep.decide, the report types in wrapper.sweep.report.
A repository that cannot be read (network error, missing checkout) is reported and the
others are still swept; :func:`run_sweep` raises only for a broken sweep.
"""

from __future__ import annotations

import logging
from pathlib import Path

from engine.github import GitHubError, PullRequest, is_same_repo
from wrapper.errors import KdevError
from wrapper.sweep.config import RepositoryEntry
from wrapper.sweep.context import SweepContext, send_to
from wrapper.sweep.decide import is_verdict_clean, schedule_problems
from wrapper.sweep.deferred import retry_deferred
from wrapper.sweep.digest import digest_rows, send_digest
from wrapper.sweep.health import collect_health, health_notification
from wrapper.sweep.report import RepoReport, SweepReport, UpdateOutcome
from wrapper.sweep.update import update_all, update_branch

__all__ = [
    "SweepContext",
    "SweepReport",
    "UpdateOutcome",
    "is_verdict_clean",
    "run_sweep",
    "schedule_problems",
    "sweep_repository",
    "update_branch",
]

log = logging.getLogger("kdev.sweep")

CHECKOUT_MISSING = "checkout_missing"


def _open_pulls(ctx: SweepContext, repo: str) -> list[PullRequest]:
    listing = ctx.github.list_pulls(repo, conditional=False, max_pages=10)
    return [pr for pr in listing.pulls if pr.state == "open"]


def sweep_repository(ctx: SweepContext, entry: RepositoryEntry) -> RepoReport:
    """(a) update-branch, retry-deferred, re-read, (b) digest rows of one repository.

    Raises ``GitHubError`` when the repository's PRs cannot be read and ``KdevError`` for
    a broken ledger; :func:`run_sweep` reports either for this repository only.
    """
    report = RepoReport(entry.repo)
    checkout = Path(entry.checkout)
    if not (checkout / ".git").exists():
        report.error, report.reason = f"checkout {checkout} is not a git checkout", CHECKOUT_MISSING
        return report
    pulls = _open_pulls(ctx, entry.repo)
    log.info("%s: %d open PRs", entry.repo, len(pulls))
    report.updates = update_all(ctx, entry, pulls)
    report.deferred = retry_deferred(ctx, entry, pulls)
    changed = any(u.outcome is UpdateOutcome.UPDATED for u in report.updates) or any(
        d.retried for d in report.deferred
    )
    if changed:  # state is re-read before the digest: heads moved, verdicts were written
        pulls = _open_pulls(ctx, entry.repo)
    report.digest = digest_rows(ctx, entry, pulls)
    report.unreviewed = [
        pr.number
        for pr in pulls
        if is_same_repo(pr) and pr.head_sha not in ctx.ledger.read_index(entry.repo, pr.number)
    ]
    return report


def run_sweep(ctx: SweepContext) -> SweepReport:
    """Sweep every repository of the config, then send the digest and the health section.

    One repository's failure is recorded in its :class:`RepoReport`; the others go on.
    Nothing is notified, pushed or retried with ``dry_run``.
    """
    report = SweepReport(dry_run=ctx.dry_run)
    for entry in ctx.config.repositories:
        log.info("sweeping %s", entry.repo)
        try:
            repo_report = sweep_repository(ctx, entry)
        except (GitHubError, KdevError) as exc:
            log.warning("%s: %s [%s]", entry.repo, exc.message, exc.reason)
            repo_report = RepoReport(entry.repo, error=exc.message, reason=exc.reason)
        report.repos.append(repo_report)
    report.health = collect_health(ctx, report.repos)
    if not ctx.dry_run:
        send_digest(ctx, report)
        if report.health:
            report.notify_errors += send_to(
                ctx, ctx.kdev.notify, health_notification(report.health)
            )
    return report
