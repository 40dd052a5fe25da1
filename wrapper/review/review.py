"""``kdev review-pr``: decide whether a review runs, run it safely, record the verdict.

The workflow (docs/decisions.md D5), one named step each, in this order:

0. self-loop          --comment-id of a comment kdev posted -> skipped_self_comment
1. fork backstop      PR metadata only; cross-repo or deleted fork -> skipped_fork
                      (a cross-repo PR passes on an allowlisted --comment-id, re-read here);
                      unreadable metadata -> GitHubFailed (exit 17) and a FAILURE notice;
                      an admitted summons gets its 👀 (wrapper.review.summons, D99)
2. patch-id           fetch base + refs/pull/N/head, and --head-sha by SHA if missing
                      (cannot be had -> skipped_stale_head, nothing recorded); patch-id
                      (--verbatim) of base...head-sha, trusted exclusions left out (D87);
                      empty -> skipped; every path excluded -> skipped_all_excluded
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
:class:`wrapper.errors.KdevError` (non-zero, distinct codes). With ``merge_gate`` on, the
decision (or the failure, or a leg starting) is also a commit status on the head
(:mod:`wrapper.review.merge_gate`, D85).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from wrapper.errors import KdevError, Outcome
from wrapper.git import Git
from wrapper.leakscan import known_secrets, withhold_leak
from wrapper.ledger.delivery import deliver
from wrapper.ledger.ledger import IndexEntry, VerdictRecord
from wrapper.ledger.leftovers import leftover_age, prune_leftovers
from wrapper.notify import failure_notification
from wrapper.review.admission import admit
from wrapper.review.budgetgate import defer, defer_for_cap, over_budget
from wrapper.review.context import ReviewContext, ReviewReport, ReviewRequest, notify
from wrapper.review.force import check_force_ready, resolve_head
from wrapper.review.merge_gate import GateRun, open_gate
from wrapper.review.steps import moved_on, patch_of_head
from wrapper.review.summons import acknowledge

if TYPE_CHECKING:
    from engine.github import PullRequest
    from wrapper.review.chunked_leg import SizedRound
    from wrapper.review.patch_id import PatchInfo
    from wrapper.review.prompt import PromptInput
    from wrapper.review.roster_chunks import RosterRound

__all__ = [
    "ReviewContext",
    "ReviewReport",
    "ReviewRequest",
    "admit",
    "carry_forward",
    "defer",
    "over_budget",
    "review_pr",
]

log = logging.getLogger("kdev.review")


def carry_forward(ctx: ReviewContext, req: ReviewRequest, record: VerdictRecord) -> ReviewReport:
    """Step 3: record that ``req.head_sha`` has the verdict of an identical diff (or, for
    a fire whose head did not move - a label, auto-merge - that it was reviewed)."""
    same_head = record.head_sha == req.head_sha
    entry = IndexEntry(
        patch_id=record.patch_id,
        verdict=record.verdict,
        reviewed_at=record.reviewed_at,
        carried_from=None if same_head else record.head_sha,
        carried_at=None if same_head else _carried_at(ctx, req, record.head_sha),
    )
    ctx.ledger.record_index(req.repo, req.pr, req.head_sha, entry)
    owed = deliver(ctx, req, record)  # a run killed before its step 9
    _finish_withdrawals(ctx, req, record)  # ... or before its findings were withdrawn
    owed = "; ".join(filter(None, (owed, _finish_incremental(ctx, req))))
    return req.report(
        Outcome.CARRIED_FORWARD,
        patch_id=record.patch_id,
        verdict=record.verdict,
        artifact=str(ctx.ledger.verdict_path(req.repo, req.pr, record.patch_id)),
        detail="; ".join(filter(None, (_carried_why(record.head_sha, req.head_sha), owed))),
    )


def _carried_why(reviewed_head: str, head: str) -> str:
    if reviewed_head == head:
        return "already reviewed at this head"
    return f"same diff as {reviewed_head}"


def _carried_at(ctx: ReviewContext, req: ReviewRequest, reviewed_head: str) -> datetime:
    """Now, or when this head was first carried from ``reviewed_head`` (a later fire at
    the same head records the same carry again)."""
    known = ctx.ledger.read_index(req.repo, req.pr).get(req.head_sha)
    if known is not None and known.carried_from == reviewed_head and known.carried_at:
        return known.carried_at
    return ctx.clock()


def _finish_withdrawals(ctx: ReviewContext, req: ReviewRequest, record: VerdictRecord) -> None:
    """The withdrawals of roster findings (D57) an earlier run of this PR left undone are
    done now; KdevError ``findings_withdraw_incomplete`` when some are still left. Loaded
    only when the PR has a findings record (the carry-forward path stays light, D35)."""
    if not any(ctx.ledger.pr_dir(req.repo, req.pr).glob("findings-*.json")):
        return
    from wrapper.review.findings_post import check_withdrawn, withdraw_pending
    from wrapper.review.findings_target import PostTarget

    target = PostTarget(
        ctx.github, ctx.ledger, ctx.config, ctx.environ, req.repo, req.pr, record.head_sha
    )
    withdraw_pending(target)
    check_withdrawn(target, ctx.ledger.verdict_path(req.repo, req.pr, record.patch_id))


def _incremental(
    ctx: ReviewContext, git: Git, data: PromptInput, patch_id: str, force: bool
) -> PromptInput:
    """Step 4's incremental round (D91): what changed since the reviewed diff and the
    earlier findings, in the prompt before it is sized; ``data`` when none applies."""
    from wrapper.review.incremental import prepare_round

    ready = prepare_round(ctx.config, ctx.ledger, ctx.github, git, data, patch_id, force=force)
    if ready is None:
        return data
    data, ctx.incremental = ready
    return data


def _finish_incremental(ctx: ReviewContext, req: ReviewRequest) -> str:
    """The thread replies and resolves an earlier run left undone (D91)."""
    from wrapper.ledger.findings_history import history_path

    if not history_path(ctx.ledger, req.repo, req.pr).exists():
        return ""
    from wrapper.review.incremental import finish_round

    return finish_round(ctx.posting(req.repo, req.pr))


def review_pr(req: ReviewRequest, ctx: ReviewContext) -> ReviewReport:
    """Run the workflow (docs/decisions.md D5) for one fired event (see the module doc).

    Every failure ends with exactly one FAILURE notice: a :class:`~wrapper.errors.KdevError`
    no step sent one for (a fetch, the ledger, ``no_reviewer``, ...) gets it here, its
    message withheld if it holds a secret; a failure that is no KdevError (a bug: the
    command ends ``internal_error``) gets one naming only its class (D67). Then the
    error propagates."""
    gate = open_gate(ctx, req)
    try:
        return gate.decided(_workflow(req, ctx, gate))
    except KdevError as exc:
        if not exc.notified:
            notify_failure(ctx, req, exc)
        gate.failed(exc.reason)
        raise
    except Exception as exc:
        notify_internal_error(ctx, req, exc)
        gate.failed("internal_error")
        raise


def notify_failure(ctx: ReviewContext, req: ReviewRequest, exc: KdevError) -> None:
    """The FAILURE notice of ``exc``, which no step of the workflow sent. Never raises."""
    pr_url = req.pr_url or f"https://github.com/{req.repo}/pull/{req.pr}"
    shown = withhold_leak(exc, known_secrets(ctx.config, ctx.environ))
    try:
        notify(
            ctx,
            req,
            failure_notification(
                req.repo, req.pr, shown.reason, shown.message, pr_url, req.head_sha
            ),
        )
    except KdevError as problem:
        # The notice cannot be routed for the very reason the run failed (an unknown
        # --notify-to): the run's own one-line error already says it.
        if problem.reason != exc.reason:
            log.warning("the %s notice failed: %s", exc.reason, problem.reason)
    except Exception as problem:  # the original error is what the caller must see
        log.warning("the %s notice failed: %s", exc.reason, type(problem).__name__)
    exc.notified = True


def notify_internal_error(ctx: ReviewContext, req: ReviewRequest, exc: Exception) -> None:
    """The FAILURE notice of a run that ends ``internal_error``: one line naming the
    exception's class only (its text may hold anything: a secret, a path, attacker
    bytes; the full line is on the command's stderr). Never raises."""
    pr_url = req.pr_url or f"https://github.com/{req.repo}/pull/{req.pr}"
    message = f"internal error ({type(exc).__name__}); the run's output has the details"
    try:
        notify(
            ctx,
            req,
            failure_notification(req.repo, req.pr, "internal_error", message, pr_url, req.head_sha),
        )
    except Exception as problem:  # the original error is what the caller must see
        log.warning("the internal_error notice failed: %s", type(problem).__name__)


def _sized_round(
    ctx: ReviewContext,
    req: ReviewRequest,
    pr: PullRequest,
    pr_url: str,
    git: Git,
    patch_id: str,
    info: PatchInfo,
) -> tuple[PromptInput, SizedRound | RosterRound | None] | ReviewReport:
    """Step 4's size check: a round over ``max_chunks`` deferred on the diff's bytes,
    never decoded (D111); else the prompt input (an incremental round's, D91) and its
    plan, or the deferral made on it."""
    from wrapper.review.chunked_leg import plan_or_defer
    from wrapper.review.leg import prompt_input
    from wrapper.review.size_first import defer_undecoded

    early = defer_undecoded(ctx, req, pr, pr_url, patch_id, info)
    if early is not None:
        return early
    excluded = info.exclusions.excluded if info.exclusions is not None else ()
    reviewed = replace(
        prompt_input(req, pr, req.head_sha, info.for_reviewer, pr_url), excluded=excluded
    )
    reviewed = _incremental(ctx, git, reviewed, patch_id, req.force)  # D91
    sized = plan_or_defer(ctx, req, pr_url, patch_id, reviewed, git)
    if isinstance(sized, ReviewReport):
        return sized
    return reviewed, sized


def _workflow(req: ReviewRequest, ctx: ReviewContext, gate: GateRun) -> ReviewReport:
    # 0-1. Self-loop closure and fork backstop (--force checks its reviewer first).
    if req.force:
        check_force_ready(ctx.config)
    admitted = admit(req, ctx)
    if isinstance(admitted, ReviewReport):
        return admitted
    pr = admitted
    acknowledge(ctx, req)  # the summons' 👀, once (issue 29, D99)
    req = resolve_head(req, pr)
    gate.aim(req.head_sha)
    pr_url = req.pr_url or pr.html_url

    # 2. Patch-id of base...head, from exactly the head as fired (fetched by SHA if
    # needed); a head that cannot be had records nothing.
    git = Git(req.checkout)
    prune_leftovers(
        git,
        ctx.ledger.reviews_dir,
        max_age=leftover_age(ctx.config),
        own_dir=ctx.ledger.pr_dir(req.repo, req.pr),
    )
    patch = patch_of_head(req, pr, git, ctx.config)
    if isinstance(patch, ReviewReport):
        return patch
    patch_id, info = patch

    # 3. Dedup (--force forgets this diff's verdict, but only under the lock in step 6).
    existing = None if req.force else ctx.ledger.find_verdict(req.repo, req.pr, patch_id)
    if existing is not None:
        return carry_forward(ctx, req, existing)

    # 4. Budget gate: legs started in 24 h, rounds per PR, money (D106), concurrency; a
    # chunked round's every leg counted (D89), a roster's every reviewer leg (D95).
    # (The leg's modules are imported only now: a carry-forward never runs a leg.)
    # A diff over the prompt limit is one leg per chunk, all counted (D89); a roster
    # round is planned per reviewer here, every reviewer leg counted (D95).
    from wrapper.review.leg import run_leg
    from wrapper.review.moneygate import over_budgets

    planned = _sized_round(ctx, req, pr, pr_url, git, patch_id, info)
    if isinstance(planned, ReviewReport):
        return planned
    reviewed, sized = planned
    legs = 1 if sized is None else sized.legs
    budgets = ctx.config.budgets
    over = over_budgets(ctx, req, pr_url, patch_id, sized, reviewed)
    if over is not None:
        return over

    with ctx.ledger.concurrency_slot(req.repo, budgets.max_concurrent_legs_per_repo) as slot:
        if slot is None:
            return defer_for_cap(ctx, req, pr_url, patch_id)

        # 5. Freshness: the PR moved on; its new head fires on a later poll.
        stale = moved_on(req, pr, patch_id)
        if stale is not None:
            return stale

        # 6. Lock, then dedup again: a concurrent holder may have just written it.
        with ctx.ledger.pr_lock(req.repo, req.pr):
            existing = None if req.force else ctx.ledger.find_verdict(req.repo, req.pr, patch_id)
            if existing is not None:
                return carry_forward(ctx, req, existing)
            # Decide and record the leg as one step: concurrent runs for other PRs of
            # the repository cannot both take the last leg of the budget.
            with ctx.ledger.legs_lock(req.repo):
                over = over_budgets(ctx, req, pr_url, patch_id, sized, reviewed)
                if over is not None:
                    return over
                if req.force:  # everything that can fail was checked: forget, then review
                    removed = ctx.ledger.remove_patch(req.repo, req.pr, patch_id)
                    log.info("--force: forgot patch %s (%d index entries)", patch_id, removed)
                for _ in range(legs):
                    ctx.ledger.record_leg_start(req.repo, req.pr, req.head_sha)
            gate.running()
            return run_leg(ctx, req, pr, git, patch_id, sized, reviewed)
