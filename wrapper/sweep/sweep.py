"""``kdev pr-sweep``: the periodic pass across repositories (docs/decisions.md D7).

For each repository of the repos config, in this order:

(a) update-branch   every open same-repo PR that is verdict-clean at its head and behind
                    its base gets the base merged in (disposable worktree, configured
                    identity) and pushed to its head branch, never forced. A conflict is
                    aborted and notified (``needs_manual_rebase``); a rejected push (the
                    head moved) is skipped with its reason.
(c') retry-deferred a ``deferred:budget`` head that is still the PR's head and whose budget
                    window has reopened is reviewed again (``review_pr``), so a deferral
                    never becomes a silent drop.
(b) digest          after re-reading the PRs: every open PR with auto-merge armed, review
                    still required and a clean verdict at its current head is one row of
                    one approval-request message, sent only when it has rows.
(c) health          review schedules that are stale, blind or overdue (read from the li
                    database through the engine's Python API), a repository whose daily
                    budget is spent while it has un-reviewed heads, pending deferrals.

A repository that cannot be read (network error, missing checkout) is reported and the
others are still swept; :func:`run_sweep` raises only for a broken sweep.
"""

from __future__ import annotations

import enum
import logging
import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy.engine import make_url

from engine.github import GitHubClient, GitHubError, PullRequest, is_same_repo
from engine.health.assess import HealthState
from wrapper.config import Budgets, KdevConfig, NotifyTarget
from wrapper.errors import KdevError, Outcome
from wrapper.gh import PullGraph, compare, pull_graph
from wrapper.git import Git
from wrapper.ledger.ledger import DeferredMarker, IndexEntry, Ledger, LegRecord
from wrapper.ledger.leftovers import make_scratch
from wrapper.notify import Notification, send
from wrapper.review.patch_id import fetch_pr_refs
from wrapper.review.review import ReviewContext, ReviewRequest, review_pr
from wrapper.sweep.config import RepositoryEntry, SweepConfig
from wrapper.sweep.healthscope import default_review_schedules, poll_schedules_by_repo

log = logging.getLogger("kdev.sweep")

APPROVE = "APPROVE"
REVIEW_REQUIRED = "REVIEW_REQUIRED"
BUDGET_WINDOW = timedelta(hours=24)
# The schedule states that mean "reviews are not being fired": the sweep reports them.
ALARMING_STATES = frozenset({HealthState.STALE, HealthState.BLIND, HealthState.OVERDUE})
CHECKOUT_MISSING = "checkout_missing"


class UpdateOutcome(enum.StrEnum):
    """What update-branch did for one PR that was clean and behind its base."""

    UPDATED = "updated"  # the base was merged in and pushed to the head branch
    WOULD_UPDATE = "would_update"  # --dry-run: it would have been updated
    UP_TO_DATE = "up_to_date"  # the fetched base was already in the head; nothing pushed
    NEEDS_MANUAL_REBASE = "needs_manual_rebase"  # merge conflict: aborted, notified
    PUSH_REJECTED = "push_rejected"  # the head branch moved meanwhile (never forced)
    FAILED = "failed"  # git or GitHub failed for this PR; ``reason`` says how


@dataclass(frozen=True)
class UpdateResult:
    repo: str
    pr: int
    head_sha: str
    outcome: UpdateOutcome
    new_head: str | None = None
    reason: str | None = None
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "repo": self.repo,
            "pr": self.pr,
            "head_sha": self.head_sha,
            "outcome": self.outcome.value,
            "new_head": self.new_head,
            "reason": self.reason,
            "detail": self.detail,
        }


@dataclass(frozen=True)
class DigestRow:
    """One PR waiting only for a human approval."""

    repo: str
    pr: int
    head_sha: str
    verdict_line: str
    artifact: str
    pr_url: str

    def to_json(self) -> dict[str, Any]:
        return {
            "repo": self.repo,
            "pr": self.pr,
            "head_sha": self.head_sha,
            "verdict_line": self.verdict_line,
            "artifact": self.artifact,
            "pr_url": self.pr_url,
        }


@dataclass(frozen=True)
class DeferredRow:
    """A pending ``deferred:budget`` marker, and what the sweep did about it."""

    repo: str
    pr: int
    head_sha: str
    budget: str
    reopens_at: datetime | None
    current: bool  # still the PR's head
    retried: str | None = None  # the review outcome when it was retried
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "repo": self.repo,
            "pr": self.pr,
            "head_sha": self.head_sha,
            "budget": self.budget,
            "reopens_at": _iso(self.reopens_at),
            "current": self.current,
            "retried": self.retried,
            "detail": self.detail,
        }


@dataclass(frozen=True)
class HealthProblem:
    """One line of the health section; ``code`` is stable (docs/sweep.md)."""

    code: str  # schedule_<state> | schedule_missing | health_unreadable | budget_exhausted
    subject: str  # a schedule name or a repository
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "subject": self.subject, "message": self.message}


@dataclass
class RepoReport:
    """The sweep of one repository; ``error``/``reason`` when it could not be swept."""

    repo: str
    error: str | None = None
    reason: str | None = None
    updates: list[UpdateResult] = field(default_factory=list)
    digest: list[DigestRow] = field(default_factory=list)
    deferred: list[DeferredRow] = field(default_factory=list)
    unreviewed: list[int] = field(default_factory=list)  # open PRs whose head has no verdict

    def to_json(self) -> dict[str, Any]:
        return {
            "repo": self.repo,
            "error": self.error,
            "reason": self.reason,
            "updates": [u.to_json() for u in self.updates],
            "digest": [d.to_json() for d in self.digest],
            "deferred": [d.to_json() for d in self.deferred],
            "unreviewed": list(self.unreviewed),
        }


@dataclass
class SweepReport:
    """Everything one sweep found and did; printed as one JSON object with ``--json``."""

    dry_run: bool
    repos: list[RepoReport] = field(default_factory=list)
    health: list[HealthProblem] = field(default_factory=list)
    digest_sent: bool = False
    notify_errors: list[str] = field(default_factory=list)

    @property
    def digest(self) -> list[DigestRow]:
        return [row for repo in self.repos for row in repo.digest]

    def to_json(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "repos": [r.to_json() for r in self.repos],
            "digest": [row.to_json() for row in self.digest],
            "digest_sent": self.digest_sent,
            "health": [h.to_json() for h in self.health],
            "notify_errors": list(self.notify_errors),
        }


@dataclass
class SweepContext:
    """Everything the sweep needs from outside, passed in (no globals).

    ``schedule_health`` reads the health of the named li schedules as
    ``ScheduleHealth.to_json()`` dicts (default: :func:`read_schedule_health` on the
    configured database); it may raise, which becomes a ``health_unreadable`` line.
    """

    config: SweepConfig
    kdev: KdevConfig
    ledger: Ledger
    github: GitHubClient
    environ: Mapping[str, str]
    dry_run: bool = False
    retry_deferred: bool = True
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    notify_transport: httpx.BaseTransport | None = None
    reviewer_transport: httpx.BaseTransport | None = None
    schedule_health: Callable[[Sequence[str]], list[dict[str, Any]]] | None = None


# == pure decisions ======================================================================


def is_verdict_clean(index: Mapping[str, IndexEntry], head_sha: str) -> bool:
    """An APPROVE verdict (reviewed or carried) is recorded for exactly ``head_sha``.

    A head absent from the index is un-reviewed, so not clean.
    """
    entry = index.get(head_sha)
    return entry is not None and entry.verdict == APPROVE


def wants_update(pr: PullRequest, index: Mapping[str, IndexEntry], behind_by: int) -> bool:
    """Update-branch applies: open, same-repo, not a draft, clean at its head, behind."""
    return (
        pr.state == "open"
        and not pr.draft
        and is_same_repo(pr)
        and is_verdict_clean(index, pr.head_sha)
        and behind_by > 0
    )


def wants_digest(graph: PullGraph, index: Mapping[str, IndexEntry]) -> bool:
    """An approval request: open, auto-merge armed, review still required, and clean at
    the head GitHub reports now (never a stale head)."""
    return (
        graph.state == "OPEN"
        and not graph.is_draft
        and not graph.is_cross_repository
        and graph.auto_merge_armed
        and graph.review_decision == REVIEW_REQUIRED
        and is_verdict_clean(index, graph.head_ref_oid)
    )


def should_retry(marker: DeferredMarker, current_head: str | None, now: datetime) -> bool:
    """Retry a deferral when its head is still the PR's head (draft or not) and its
    budget has reopened. A marker without a time (written by an older kdev) is retried
    now: review-pr decides again and writes a fresh marker if it is still held back."""
    return current_head == marker.head_sha and (
        marker.reopens_at is None or marker.reopens_at <= now
    )


def repo_budget_spent(budgets: Budgets, legs: Iterable[LegRecord], now: datetime) -> bool:
    """The repository's ``daily_legs_per_repo`` is used up at ``now``."""
    started = [leg for leg in legs if leg.started_at > now - BUDGET_WINDOW]
    return len(started) >= budgets.daily_legs_per_repo


def schedule_problems(
    names: Sequence[str], rows: Sequence[Mapping[str, Any]]
) -> list[HealthProblem]:
    """Health lines for the review schedules ``names``, from ``li schedule health --json``
    rows: each stale, blind or overdue one, and each that does not exist."""
    by_name = {str(row.get("name")): row for row in rows}
    problems: list[HealthProblem] = []
    for name in names:
        row = by_name.get(name)
        if row is None:
            problems.append(
                HealthProblem("schedule_missing", name, "no such li schedule; reviews never fire")
            )
            continue
        state = str(row.get("state"))
        if state in ALARMING_STATES:
            causes = row.get("causes") or []
            said = "; ".join(str(c.get("message")) for c in causes if isinstance(c, dict))
            problems.append(HealthProblem(f"schedule_{state}", name, said or state))
    return problems


# == I/O: notifications, health =========================================================


def targets_for(ctx: SweepContext, entry: RepositoryEntry) -> list[NotifyTarget]:
    """The repository's notify targets, else KDEV_CONFIG's (the review-pr targets)."""
    return list(entry.notify) if entry.notify is not None else list(ctx.kdev.notify)


def _send(ctx: SweepContext, targets: Sequence[NotifyTarget], note: Notification) -> list[str]:
    return send(targets, note, environ=ctx.environ, transport=ctx.notify_transport)


def read_schedule_health(
    database_url: str | None, environ: Mapping[str, str]
) -> Callable[[Sequence[str]], list[dict[str, Any]]]:
    """A reader of ``ScheduleHealth.to_json()`` rows from the li database (read only: it
    is never created or migrated here). ``database_url`` None: ``LI_DATABASE_URL``."""

    def read(names: Sequence[str]) -> list[dict[str, Any]]:
        from engine.config import Settings
        from engine.health.status import schedule_health
        from engine.store import db as dbmod
        from engine.store.store import Store

        url = database_url or Settings.from_env(dict(environ)).database_url
        parsed = make_url(url)
        if parsed.get_backend_name() == "sqlite" and parsed.database:
            if not Path(parsed.database).expanduser().exists():
                raise KdevError(
                    f"li database {parsed.database} does not exist", "health_unreadable"
                )
        engine = dbmod.make_engine(url)
        try:
            if dbmod.current_revision(engine) != dbmod.head_revision(engine):
                raise KdevError("li database is not at the newest schema", "health_unreadable")
            rows = schedule_health(Store(engine))
            return [row.to_json() for row in rows if row.name in names]
        finally:
            engine.dispose()

    return read


def default_schedules(ctx: SweepContext) -> tuple[list[str], list[HealthProblem]]:
    """The default health scope (wrapper.sweep.healthscope), and a line per unwatched repo."""
    by_repo = poll_schedules_by_repo(ctx.config.health.database_url, ctx.environ)
    repos = [entry.repo for entry in ctx.config.repositories]
    names, unwatched = default_review_schedules(repos, by_repo)
    return names, [
        HealthProblem(
            "schedule_missing", repo, "no github_poll schedule watches it; reviews never fire"
        )
        for repo in unwatched
    ]


# == (a) update-branch ==================================================================


def update_branch(ctx: SweepContext, entry: RepositoryEntry, pr: PullRequest) -> UpdateResult:
    """Merge the base into ``pr.head_sha`` (the clean head, not whatever is there now) in a
    disposable worktree and push it to the head branch without force.

    The push is the compare-and-swap: when the branch moved past ``pr.head_sha`` it is
    not a fast-forward and is rejected. Raises ``KdevError`` when git itself fails.
    """

    def result(outcome: UpdateOutcome, **kw: Any) -> UpdateResult:
        return UpdateResult(entry.repo, pr.number, pr.head_sha, outcome, **kw)

    if ctx.dry_run:
        return result(UpdateOutcome.WOULD_UPDATE, detail=f"would merge {pr.base_ref}")
    git = Git(Path(entry.checkout), env=ctx.environ)
    base_ref, _ = fetch_pr_refs(git, pr.base_ref, pr.number, entry.remote)
    if git.rev_parse(pr.head_sha) is None:
        return result(UpdateOutcome.FAILED, reason="ref_missing", detail="head not fetched")
    scratch = make_scratch("kdev-sweep-")
    worktree = scratch / "worktree"
    try:
        git.worktree_add(worktree, pr.head_sha)
        identity = ctx.config.identity
        merged = Git(worktree, env=ctx.environ).merge_into_detached(
            base_ref, name=identity.name, email=identity.email
        )
        if merged.conflict:
            note = manual_rebase_notification(entry.repo, pr, merged.detail)
            for problem in _send(ctx, targets_for(ctx, entry), note):
                log.warning("notification failed: %s", problem)
            return result(UpdateOutcome.NEEDS_MANUAL_REBASE, detail=merged.detail)
        if merged.up_to_date or merged.sha is None:
            return result(UpdateOutcome.UP_TO_DATE, detail="base already merged")
        pushed = git.push_commit(entry.remote, merged.sha, pr.head_ref)
        if not pushed.pushed:
            return result(UpdateOutcome.PUSH_REJECTED, reason="push_rejected", detail=pushed.detail)
        return result(UpdateOutcome.UPDATED, new_head=merged.sha, detail=f"merged {pr.base_ref}")
    finally:
        try:
            git.worktree_remove(worktree)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)


def manual_rebase_notification(repo: str, pr: PullRequest, detail: str) -> Notification:
    """``PR sweep: {repo} #{pr} NEEDS MANUAL REBASE``: the base no longer merges cleanly."""
    body = "\n".join(
        (
            f"NEEDS MANUAL REBASE: {detail}",
            f"BASE: {pr.base_ref}",
            f"PR: {pr.html_url}",
            f"HEAD_SHA: {pr.head_sha}",
        )
    )
    return Notification(
        subject=f"PR sweep: {repo} #{pr.number} NEEDS MANUAL REBASE",
        body=body,
        fields={
            "repo": repo,
            "pr": pr.number,
            "head_sha": pr.head_sha,
            "outcome": UpdateOutcome.NEEDS_MANUAL_REBASE.value,
            "pr_url": pr.html_url,
            "artifact": None,
        },
    )


def digest_notification(rows: Sequence[DigestRow]) -> Notification:
    """``PR sweep: N PR(s) waiting for approval``: one row per PR."""
    lines = [
        f"{r.repo} #{r.pr} {r.head_sha} | {r.verdict_line} | {r.artifact} | {r.pr_url}"
        for r in rows
    ]
    count = len(rows)
    return Notification(
        subject=f"PR sweep: {count} PR{'s' if count != 1 else ''} waiting for approval",
        body="\n".join(lines),
        fields={"outcome": "approval_digest", "count": count},
    )


def health_notification(problems: Sequence[HealthProblem]) -> Notification:
    """``PR sweep: pipeline health``: one line per problem."""
    return Notification(
        subject="PR sweep: pipeline health",
        body="\n".join(f"{p.code}: {p.subject}: {p.message}" for p in problems),
        fields={"outcome": "health", "count": len(problems)},
    )


# == one repository =====================================================================


def _open_pulls(ctx: SweepContext, repo: str) -> list[PullRequest]:
    listing = ctx.github.list_pulls(repo, conditional=False, max_pages=10)
    return [pr for pr in listing.pulls if pr.state == "open"]


def _update_all(
    ctx: SweepContext, entry: RepositoryEntry, pulls: Sequence[PullRequest]
) -> list[UpdateResult]:
    results: list[UpdateResult] = []
    for pr in pulls:
        index = ctx.ledger.read_index(entry.repo, pr.number)
        if not (is_same_repo(pr) and not pr.draft and is_verdict_clean(index, pr.head_sha)):
            continue
        try:
            behind = compare(ctx.github, entry.repo, pr.base_ref, pr.head_sha).behind_by
            if not wants_update(pr, index, behind):
                continue
            log.info("%s #%s is %d behind %s: updating", entry.repo, pr.number, behind, pr.base_ref)
            outcome = update_branch(ctx, entry, pr)
        except (GitHubError, KdevError) as exc:
            outcome = UpdateResult(
                entry.repo,
                pr.number,
                pr.head_sha,
                UpdateOutcome.FAILED,
                None,
                exc.reason,
                exc.message,
            )
        log.info("%s #%s: %s %s", entry.repo, pr.number, outcome.outcome.value, outcome.detail)
        results.append(outcome)
    return results


def _retry_deferred(
    ctx: SweepContext, entry: RepositoryEntry, pulls: Sequence[PullRequest]
) -> list[DeferredRow]:
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
        ledger=ctx.ledger,
        github=ctx.github,
        environ=ctx.environ,
        clock=ctx.clock,
        reviewer_transport=ctx.reviewer_transport,
        notify_transport=ctx.notify_transport,
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
        return _with(row, retried="failed", detail=f"{exc.message} [{exc.reason}]")
    if report.outcome is Outcome.CARRIED_FORWARD:
        ctx.ledger.clear_deferred(entry.repo, pr.number, pr.head_sha)
    return _with(row, retried=report.outcome.value, detail=report.detail)


def _with(row: DeferredRow, **changes: Any) -> DeferredRow:
    data = {**row.__dict__, **changes}
    return DeferredRow(**data)


def _digest_rows(
    ctx: SweepContext, entry: RepositoryEntry, pulls: Sequence[PullRequest]
) -> list[DigestRow]:
    rows: list[DigestRow] = []
    for pr in pulls:
        index = ctx.ledger.read_index(entry.repo, pr.number)
        # Only a PR clean at its listed head can qualify: spare it the GraphQL call.
        if pr.draft or not is_verdict_clean(index, pr.head_sha):
            continue
        graph = pull_graph(ctx.github, entry.repo, pr.number)
        if not wants_digest(graph, index):
            continue
        verdict = index[graph.head_ref_oid]
        artifact = ctx.ledger.verdict_path(entry.repo, pr.number, verdict.patch_id)
        rows.append(
            DigestRow(
                entry.repo,
                pr.number,
                graph.head_ref_oid,
                f"VERDICT: {verdict.verdict}",
                str(artifact),
                graph.url,
            )
        )
    return rows


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
    report.updates = _update_all(ctx, entry, pulls)
    report.deferred = _retry_deferred(ctx, entry, pulls)
    changed = any(u.outcome is UpdateOutcome.UPDATED for u in report.updates) or any(
        d.retried for d in report.deferred
    )
    if changed:  # state is re-read before the digest: heads moved, verdicts were written
        pulls = _open_pulls(ctx, entry.repo)
    report.digest = _digest_rows(ctx, entry, pulls)
    report.unreviewed = [
        pr.number
        for pr in pulls
        if is_same_repo(pr)
        and not pr.draft
        and pr.head_sha not in ctx.ledger.read_index(entry.repo, pr.number)
    ]
    return report


# == the whole sweep ====================================================================


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
            report.notify_errors += _send(ctx, ctx.kdev.notify, health_notification(report.health))
    return report


def collect_health(ctx: SweepContext, repos: Sequence[RepoReport]) -> list[HealthProblem]:
    """The health section: review schedules, spent budgets with un-reviewed heads."""
    problems: list[HealthProblem] = []
    names = ctx.config.health.review_schedules
    if names is None:  # the default: every github_poll schedule of a configured repo
        try:
            names, problems = default_schedules(ctx)
        except Exception as exc:  # the section says so; the sweep itself goes on
            reason = getattr(exc, "reason", type(exc).__name__)
            problems.append(HealthProblem("health_unreadable", "li", f"{exc} [{reason}]"))
    if names:
        reader = ctx.schedule_health or read_schedule_health(
            ctx.config.health.database_url, ctx.environ
        )
        try:
            problems += schedule_problems(names, reader(names))
        except Exception as exc:  # the section says so; the sweep itself goes on
            reason = getattr(exc, "reason", type(exc).__name__)
            problems.append(HealthProblem("health_unreadable", "li", f"{exc} [{reason}]"))
    now = ctx.clock()
    for repo in repos:
        if repo.error is not None or not repo.unreviewed:
            continue
        legs = ctx.ledger.legs_since(repo.repo, now - BUDGET_WINDOW)
        if repo_budget_spent(ctx.kdev.budgets, legs, now):
            prs = ", ".join(f"#{n}" for n in repo.unreviewed)
            problems.append(
                HealthProblem(
                    "budget_exhausted",
                    repo.repo,
                    f"daily_legs_per_repo spent ({len(legs)}/"
                    f"{ctx.kdev.budgets.daily_legs_per_repo}) with un-reviewed heads: {prs}",
                )
            )
    return problems


def send_digest(ctx: SweepContext, report: SweepReport) -> None:
    """One approval-request message per distinct set of targets (one message when no
    repository overrides the targets); nothing when there are no rows."""
    groups: dict[str, tuple[list[NotifyTarget], list[DigestRow]]] = {}
    entries = {entry.repo: entry for entry in ctx.config.repositories}
    for row in report.digest:
        targets = targets_for(ctx, entries[row.repo])
        key = repr([t.model_dump() for t in targets])
        groups.setdefault(key, (targets, []))[1].append(row)
    for targets, rows in groups.values():
        report.notify_errors += _send(ctx, targets, digest_notification(rows))
        report.digest_sent = True


def _iso(value: datetime | None) -> str | None:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z") if value else None
