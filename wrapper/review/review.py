"""``kdev review-pr``: decide whether a review runs, run it safely, record the verdict.

The workflow (docs/decisions.md D5), one named step each, in this order:

0. self-loop          --comment-id of a comment kdev posted -> skipped_self_comment
1. fork backstop      PR metadata only; cross-repo or deleted fork -> skipped_fork
                      (a cross-repo PR passes on an allowlisted --comment-id, re-read here);
                      unreadable metadata -> GitHubFailed (exit 17) and a FAILURE notice
2. patch-id           fetch base + refs/pull/N/head, and --head-sha by SHA if missing
                      (cannot be had -> skipped_stale_head, nothing recorded); patch-id
                      (--verbatim) of base...head-sha; empty -> skipped
3. dedup              a verdict for this patch-id exists -> carried_forward (no reviewer)
4. budget gate        daily legs per repo, rounds per PR, concurrency slots -> deferred_budget
5. freshness          the PR's head moved on -> skipped_stale_head
6. worktree + lock    disposable worktree, per-PR lock, dedup re-checked under the lock
7. reviewer           prompt (data-not-instructions clause), backend, VERDICT line
8. verdict            notice/comment recorded as owed, then verdict file + index.json,
                      atomically; secret canary
9. notify             verdict, deferral or FAILURE notice; the worktree is always pruned;
                      with a github-comment target, the round is posted as a PR comment;
                      each crossed off when delivered (a rerun delivers what is owed)

Every decision returns a :class:`ReviewReport` (exit 0); only a broken wrapper raises a
:class:`wrapper.errors.KdevError` (non-zero, distinct codes).
"""

from __future__ import annotations

import logging
import re
import shutil
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from engine.github import GitHubClient, GitHubError, PullRequest, is_same_repo
from wrapper.config import CommandReviewer, KdevConfig, OpenAIReviewer, check_repo
from wrapper.errors import ConfigError, GitHubFailed, KdevError, Outcome
from wrapper.gh import get_comment
from wrapper.git import Git
from wrapper.leakscan import known_secrets, withhold_leak
from wrapper.ledger.deferral import cap_reopens_at
from wrapper.ledger.delivery import deliver, write_verdict_owing_delivery
from wrapper.ledger.ledger import DeferredMarker, IndexEntry, Ledger, VerdictRecord
from wrapper.ledger.leftovers import leftover_age, make_scratch, prune_leftovers
from wrapper.notify import (
    Notification,
    deferred_notification,
    failure_notification,
    send,
)
from wrapper.review.budget import decide_budget
from wrapper.review.force import check_force_ready, resolve_head
from wrapper.review.github_gate import read_pull
from wrapper.review.patch_id import (
    BASE_REF_PREFIX,
    compute_patch_id,
    fetch_head_commit,
    fetch_pr_refs,
)
from wrapper.review.prompt import PromptInput, render_prompt
from wrapper.review.reviewer import run_reviewer
from wrapper.review.roster_review import load_base_roster, run_roster_review
from wrapper.review.sandbox import Sandbox, resolve_sandbox

log = logging.getLogger("kdev.review")


@dataclass(frozen=True)
class ReviewRequest:
    """What the engine fired: ``kdev review-pr --repo R --pr N --head-sha SHA ...``."""

    repo: str
    pr: int
    head_sha: str  # "" (no --head-sha): the PR's current head, read in step 1
    checkout: Path
    pr_url: str | None = None
    author: str | None = None
    force: bool = False
    comment_id: int | None = None  # the comment that summoned this run (a mention)


@dataclass(frozen=True)
class ReviewReport:
    """The decision, printed as one JSON line with ``--json``."""

    outcome: Outcome
    repo: str
    pr: int
    head_sha: str
    patch_id: str | None = None
    verdict: str | None = None
    artifact: str | None = None
    detail: str = ""

    def to_json(self) -> dict[str, object]:
        return {
            "outcome": self.outcome.value,
            "repo": self.repo,
            "pr": self.pr,
            "head_sha": self.head_sha,
            "patch_id": self.patch_id,
            "verdict": self.verdict,
            "artifact": self.artifact,
            "detail": self.detail,
        }


@dataclass
class ReviewContext:
    """Everything the workflow needs from outside, passed in (no globals)."""

    config: KdevConfig
    ledger: Ledger
    github: GitHubClient
    environ: Mapping[str, str]
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    reviewer_transport: httpx.BaseTransport | None = None
    notify_transport: httpx.BaseTransport | None = None
    # Where command reviewers run; None: resolved from the config by leg_worktree.
    sandbox: Sandbox | None = None


def _notify(ctx: ReviewContext, note: Notification) -> None:
    for problem in send(
        ctx.config.notify,
        note,
        environ=ctx.environ,
        transport=ctx.notify_transport,
        secrets=known_secrets(ctx.config, ctx.environ),
    ):
        log.warning("notification failed: %s", problem)


def read_metadata(ctx: ReviewContext, req: ReviewRequest) -> PullRequest:
    """Step 1: the PR's metadata (never its diff). A failed read is a wrapper failure
    (``GitHubFailed``: github_auth / github_unavailable / github_malformed), with the
    FAILURE notice sent; it is never read as a fork."""
    try:
        return read_pull(ctx.github, req.repo, req.pr)
    except GitHubFailed as exc:
        pr_url = req.pr_url or f"https://github.com/{req.repo}/pull/{req.pr}"
        _notify(
            ctx,
            failure_notification(req.repo, req.pr, exc.reason, exc.message, pr_url, req.head_sha),
        )
        raise


def check_comment_id(comment_id: int | None) -> None:
    """``--comment-id`` is absent or a positive integer; else ``invalid_comment_id``."""
    if comment_id is not None and (
        isinstance(comment_id, bool) or not isinstance(comment_id, int) or comment_id < 1
    ):
        raise ConfigError(
            f"--comment-id must be a positive integer, got {comment_id!r}", "invalid_comment_id"
        )


def is_self_comment(ctx: ReviewContext, repo: str, comment_id: int | None) -> bool:
    """Step 0: True when ``comment_id`` is a comment kdev itself posted on ``repo``."""
    return comment_id is not None and comment_id in ctx.ledger.posted_comment_ids(repo)


_COMMENT_TARGET = re.compile(r"/repos/([^/]+/[^/]+)/(issues|pulls)/([1-9][0-9]*)$")


def mention_denial(ctx: ReviewContext, repo: str, pr: int, comment_id: int) -> str | None:
    """None when comment ``comment_id``, re-read from the API (an issue comment, else a
    review comment), is on ``repo`` #``pr`` and its author's numeric id is in the
    wrapper's own ``mention_allowlist``; otherwise why not (one line)."""
    comment: dict[str, Any] | None = None
    kind = "issue"
    for kind in ("issue", "review"):
        try:
            comment = get_comment(ctx.github, repo, comment_id, kind)
            break
        except GitHubError as exc:
            if exc.reason == "not_found":
                continue
            return f"comment {comment_id} unreadable [{exc.reason}]"
    if comment is None:
        return f"comment {comment_id} not found"
    url = comment.get("issue_url" if kind == "issue" else "pull_request_url")
    match = _COMMENT_TARGET.search(url) if isinstance(url, str) else None
    if (
        match is None
        or match.group(1).lower() != repo.lower()
        or match.group(2) != ("issues" if kind == "issue" else "pulls")
        or int(match.group(3)) != pr
    ):
        return f"comment {comment_id} is not on {repo} #{pr}"
    user = comment.get("user")
    author_id = user.get("id") if isinstance(user, dict) else None
    if isinstance(author_id, bool) or not isinstance(author_id, int):
        return f"comment {comment_id} has no author id"
    if author_id not in ctx.config.mention_allowlist:
        return f"comment {comment_id}: author id {author_id} is not in mention_allowlist"
    return None


def fork_gate(
    ctx: ReviewContext, repo: str, number: int, pr: PullRequest, comment_id: int | None
) -> str | None:
    """Step 1: None when the PR may be reviewed; else the ``skipped_fork`` detail.

    A same-repo PR passes. A cross-repository PR (or a deleted fork) passes only on a
    mention: ``comment_id`` given, ``fork_review_on_mention`` on, and
    :func:`mention_denial` finds nothing wrong.
    """
    if is_same_repo(pr):
        return None
    why = (
        "head repository deleted"
        if pr.head_repo_full_name is None
        else f"head is {pr.head_repo_full_name}"
    )
    if comment_id is None:
        return why
    if not ctx.config.fork_review_on_mention:
        return f"{why}; fork_review_on_mention is off"
    denial = mention_denial(ctx, repo, number, comment_id)
    if denial is not None:
        return f"{why}; {denial}"
    log.info(
        "%s #%s: cross-repository, reviewed on allowlisted comment %s", repo, number, comment_id
    )
    return None


def carry_forward(ctx: ReviewContext, req: ReviewRequest, record: VerdictRecord) -> ReviewReport:
    """Step 3: record that ``req.head_sha`` has the verdict of an identical diff."""
    entry = IndexEntry(
        patch_id=record.patch_id,
        verdict=record.verdict,
        reviewed_at=record.reviewed_at,
        carried_from=None if record.head_sha == req.head_sha else record.head_sha,
    )
    ctx.ledger.record_index(req.repo, req.pr, req.head_sha, entry)
    owed = deliver(ctx, req.repo, req.pr, record)  # a run killed before its step 9
    return ReviewReport(
        Outcome.CARRIED_FORWARD,
        req.repo,
        req.pr,
        req.head_sha,
        record.patch_id,
        record.verdict,
        str(ctx.ledger.verdict_path(req.repo, req.pr, record.patch_id)),
        "; ".join(filter(None, (f"same diff as {record.head_sha}", owed))),
    )


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
) -> ReviewReport:
    """Step 4, over budget: a ``deferred:budget`` marker and a notice, never a silent drop.

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
    _notify(
        ctx,
        deferred_notification(
            req.repo, req.pr, budget, count, limit, reopens_at, pr_url, req.head_sha
        ),
    )
    return ReviewReport(
        Outcome.DEFERRED_BUDGET,
        req.repo,
        req.pr,
        req.head_sha,
        patch_id,
        detail=f"{budget}: {count}/{limit}",
    )


def over_budget(
    ctx: ReviewContext, req: ReviewRequest, pr_url: str, patch_id: str, *, marker: bool = True
) -> ReviewReport | None:
    """Step 4's leg budgets: a ``deferred_budget`` report when over one, else None."""
    now = ctx.clock()
    legs = ctx.ledger.legs_since(req.repo, now - timedelta(hours=24))
    decision = decide_budget(ctx.config.budgets, legs, req.pr, now)
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


def admit(req: ReviewRequest, ctx: ReviewContext) -> PullRequest | ReviewReport:
    """Steps 0 and 1, shared with ``describe-pr``: argument checks, the self-loop closure
    (a comment kdev posted never summons it) and the fork backstop (metadata only; anything
    but a provable same-repo PR is skipped unless an allowlisted maintainer's comment,
    re-read here, asked for it). Returns the PR's metadata, or the skip decision."""
    check_repo(req.repo)
    if req.pr < 1:
        raise ConfigError(f"--pr must be a positive integer, got {req.pr}", "invalid_pr")
    check_comment_id(req.comment_id)
    if is_self_comment(ctx, req.repo, req.comment_id):
        return ReviewReport(
            Outcome.SKIPPED_SELF_COMMENT,
            req.repo,
            req.pr,
            req.head_sha,
            detail=f"comment {req.comment_id} was posted by kdev",
        )
    pr = read_metadata(ctx, req)
    skip = fork_gate(ctx, req.repo, req.pr, pr, req.comment_id)
    if skip is not None:
        return ReviewReport(Outcome.SKIPPED_FORK, req.repo, req.pr, req.head_sha, detail=skip)
    return pr


def review_pr(req: ReviewRequest, ctx: ReviewContext) -> ReviewReport:
    """Run the workflow (docs/decisions.md D5) for one fired event (see the module doc)."""
    # 0-1. Self-loop closure and fork backstop (--force checks its reviewer first).
    if req.force:
        check_force_ready(ctx.config)
    admitted = admit(req, ctx)
    if isinstance(admitted, ReviewReport):
        return admitted
    pr = admitted
    req = resolve_head(req, pr)
    pr_url = req.pr_url or pr.html_url

    # 2. Patch-id of base...head, from exactly the head as fired (fetched by SHA if
    # needed); a head that cannot be had records nothing.
    git = Git(req.checkout)
    prune_leftovers(git, ctx.ledger.reviews_dir, max_age=leftover_age(ctx.config))
    base_ref, _ = fetch_pr_refs(git, pr.base_ref, req.pr)
    if not fetch_head_commit(git, req.head_sha):
        return ReviewReport(
            Outcome.SKIPPED_STALE_HEAD,
            req.repo,
            req.pr,
            req.head_sha,
            detail=f"{req.head_sha} cannot be fetched; current head is {pr.head_sha}",
        )
    info = compute_patch_id(git, base_ref, req.head_sha)
    if info.patch_id is None:
        return ReviewReport(Outcome.SKIPPED_EMPTY_DIFF, req.repo, req.pr, req.head_sha)
    patch_id = info.patch_id

    # 3. Dedup (--force forgets this diff's verdict, but only under the lock in step 6).
    existing = None if req.force else ctx.ledger.find_verdict(req.repo, req.pr, patch_id)
    if existing is not None:
        return carry_forward(ctx, req, existing)

    # 4. Budget gate: legs started in the trailing 24 h, rounds per PR, concurrency.
    budgets = ctx.config.budgets
    over = over_budget(ctx, req, pr_url, patch_id)
    if over is not None:
        return over

    with ctx.ledger.concurrency_slot(req.repo, budgets.max_concurrent_legs_per_repo) as slot:
        if slot is None:
            cap = budgets.max_concurrent_legs_per_repo
            reopens = cap_reopens_at(ctx.config, ctx.clock())
            budget = "max_concurrent_legs_per_repo"
            return defer(ctx, req, pr_url, budget, cap, cap, reopens, patch_id)

        # 5. Freshness: the PR moved on; its new head fires on a later poll.
        if pr.head_sha != req.head_sha:
            return ReviewReport(
                Outcome.SKIPPED_STALE_HEAD,
                req.repo,
                req.pr,
                req.head_sha,
                patch_id,
                detail=f"current head is {pr.head_sha}",
            )

        # 6. Lock, then dedup again: a concurrent holder may have just written it.
        with ctx.ledger.pr_lock(req.repo, req.pr):
            existing = None if req.force else ctx.ledger.find_verdict(req.repo, req.pr, patch_id)
            if existing is not None:
                return carry_forward(ctx, req, existing)
            # Decide and record the leg as one step: concurrent runs for other PRs of
            # the repository cannot both take the last leg of the budget.
            with ctx.ledger.legs_lock(req.repo):
                over = over_budget(ctx, req, pr_url, patch_id)
                if over is not None:
                    return over
                if req.force:  # everything that can fail was checked: forget, then review
                    removed = ctx.ledger.remove_patch(req.repo, req.pr, patch_id)
                    log.info("--force: forgot patch %s (%d index entries)", patch_id, removed)
                ctx.ledger.record_leg_start(req.repo, req.pr, req.head_sha)
            return run_leg(ctx, req, pr, pr_url, git, patch_id, info.diff)


@contextmanager
def leg_worktree(
    ctx: ReviewContext, req: ReviewRequest, git: Git, pr_url: str, prefix: str
) -> Iterator[tuple[CommandReviewer | OpenAIReviewer, Path]]:
    """The configured reviewer and a disposable export of ``req.head_sha`` for one leg
    (a plain tree, no ``.git`` linking back to the checkout), with ``ctx.sandbox``
    resolved from the config for a command reviewer.

    A wrapper failure inside the block sends the FAILURE notice and propagates; the
    tree is deleted on every path (shared by review-pr and describe-pr)."""
    reviewer = ctx.config.reviewer
    if reviewer is None:
        raise ConfigError("no reviewer configured in KDEV_CONFIG", "no_reviewer")
    scratch = make_scratch(prefix)
    scratch.chmod(0o711)  # a fallback sandbox's separate uid reaches the tree inside
    worktree = scratch / "worktree"
    try:
        if ctx.sandbox is None and isinstance(reviewer, CommandReviewer):
            config = ctx.config
            ctx.sandbox = resolve_sandbox(
                config.sandbox, config.sandbox_bwrap, config.sandbox_paths
            )
        git.export_tree(req.head_sha, worktree)
        yield reviewer, worktree
    except KdevError as exc:
        exc = withhold_leak(exc, known_secrets(ctx.config, ctx.environ))
        _notify(
            ctx,
            failure_notification(req.repo, req.pr, exc.reason, exc.message, pr_url, req.head_sha),
        )
        raise exc from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def run_leg(
    ctx: ReviewContext,
    req: ReviewRequest,
    pr: PullRequest,
    pr_url: str,
    git: Git,
    patch_id: str,
    diff: str,
) -> ReviewReport:
    """Steps 6-9 under the lock: worktree, reviewer, verdict, notify; always prune."""
    with leg_worktree(ctx, req, git, pr_url, f"kdev-pr{req.pr}-") as (reviewer, worktree):
        data = PromptInput(
            repo=req.repo,
            pr=req.pr,
            title=pr.title,
            body=pr.body,
            author=req.author or pr.user_login,
            base=pr.base_ref,
            head_sha=req.head_sha,
            diff=diff,
            pr_url=pr_url,
        )
        if reviewer.roster:
            roster, blocks = load_base_roster(git, f"{BASE_REF_PREFIX}{pr.base_ref}", diff)
            for warning in roster.warnings:
                log.warning("roster: %s", warning)
            log.info("%s #%s: %s", req.repo, req.pr, roster.summary)
            result = run_roster_review(
                backend=reviewer,
                roster=roster,
                blocks=blocks,
                data=data,
                worktree=worktree,
                ledger=ctx.ledger,
                max_parallel=ctx.config.budgets.max_concurrent_legs_per_repo,
                environ=ctx.environ,
                extra_env_names=ctx.config.reviewer_env,
                transport=ctx.reviewer_transport,
                template_path=ctx.config.prompt_template,
                sandbox=ctx.sandbox,
            )
        else:
            result = run_reviewer(
                reviewer,
                render_prompt(data, ctx.config.prompt_template),
                worktree,
                ctx.environ,
                extra_env_names=ctx.config.reviewer_env,
                transport=ctx.reviewer_transport,
                sandbox=ctx.sandbox,
            )
        record = VerdictRecord(
            verdict=result.verdict,
            pr_url=pr_url,
            head_sha=req.head_sha,
            patch_id=patch_id,
            base=pr.base_ref,
            reviewed_at=ctx.clock(),
            model=result.model,
            body=result.body,
        )
        path = write_verdict_owing_delivery(ctx, req, record)
        ctx.ledger.record_index(
            req.repo,
            req.pr,
            req.head_sha,
            IndexEntry(
                patch_id=patch_id,
                verdict=result.verdict,
                reviewed_at=record.reviewed_at,
                carried_from=None,
            ),
        )
        ctx.ledger.clear_deferred(req.repo, req.pr, req.head_sha)
    detail = deliver(ctx, req.repo, req.pr, record)
    return ReviewReport(
        Outcome.REVIEWED,
        req.repo,
        req.pr,
        req.head_sha,
        patch_id,
        result.verdict,
        str(path),
        detail,
    )
