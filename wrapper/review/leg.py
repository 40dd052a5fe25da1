"""Steps 6-9 of ``kdev review-pr``, under the per-PR lock: a disposable worktree, the
reviewer (one backend, or a roster), the verdict written, what is owed delivered."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from engine.github import PullRequest
from wrapper.config import CommandReviewer, OpenAIReviewer
from wrapper.config_repo import review_post_enabled
from wrapper.errors import ConfigError, KdevError, Outcome
from wrapper.git import Git
from wrapper.leakscan import known_secrets, withhold_leak
from wrapper.ledger.delivery import deliver, write_verdict_owing_delivery
from wrapper.ledger.ledger import IndexEntry, VerdictRecord
from wrapper.ledger.leftovers import make_scratch
from wrapper.notify import failure_notification
from wrapper.review.context import ReviewContext, ReviewReport, ReviewRequest, notify
from wrapper.review.exclusions import exclusions_header
from wrapper.review.findings import Finding
from wrapper.review.leg_usage import record_usage, record_usage_or_warn
from wrapper.review.patch_id import BASE_REF_PREFIX
from wrapper.review.prompt import PromptInput, render_prompt
from wrapper.review.reviewer import ReviewResult, leg_options, run_reviewer
from wrapper.review.sandbox import resolve_sandbox
from wrapper.usage import summary

if TYPE_CHECKING:
    from wrapper.review.chunked_leg import SizedRound
    from wrapper.review.roster_chunks import RosterRound
    from wrapper.review.round_post import RoundPayload

log = logging.getLogger("kdev.review")


def prompt_input(
    req: ReviewRequest, pr: PullRequest, head_sha: str, diff: str, pr_url: str
) -> PromptInput:
    """What the prompt of a leg on ``head_sha`` of ``req``'s PR is made of (review-pr and
    describe-pr): the PR's text, its author (``req``'s, else the PR's) and the diff."""
    return PromptInput(
        repo=req.repo,
        pr=req.pr,
        title=pr.title,
        body=pr.body,
        author=req.author or pr.user_login,
        base=pr.base_ref,
        head_sha=head_sha,
        diff=diff,
        pr_url=pr_url,
    )


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
        notify(
            ctx,
            req,
            failure_notification(req.repo, req.pr, exc.reason, exc.message, pr_url, req.head_sha),
        )
        exc.notified = True
        raise exc from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def run_leg(
    ctx: ReviewContext,
    req: ReviewRequest,
    pr: PullRequest,
    git: Git,
    patch_id: str,
    sized: SizedRound | RosterRound | None,
    data: PromptInput,
) -> ReviewReport:
    """Steps 6-9 under the lock: worktree, reviewer, verdict, notify; always prune. The
    reviewer reads the reviewed paths' diff and the list of the excluded ones (D87); the
    verdict opens with that list. ``sized`` with more than one chunk: one leg per chunk,
    one verdict (D89). ``data``: the prompt input step 4 made (an incremental round's),
    which names the PR's URL and the excluded paths."""
    pr_url = data.pr_url
    with leg_worktree(ctx, req, git, pr_url, f"kdev-pr{req.pr}-") as (reviewer, worktree):
        try:
            result, round_payload = _review(ctx, reviewer, git, pr, data, worktree, patch_id, sized)
        except BaseException:
            record_usage_or_warn(ctx, req.repo, req.pr, req.head_sha, patch_id, "review-pr")
            raise
        legs = record_usage(ctx, req.repo, req.pr, req.head_sha, patch_id, "review-pr")
        record = VerdictRecord(
            verdict=result.verdict,
            pr_url=pr_url,
            head_sha=req.head_sha,
            patch_id=patch_id,
            base=pr.base_ref,
            reviewed_at=ctx.clock(),
            model=result.model,
            body=_with_header(exclusions_header(data.excluded), result.body),
            pr=req.pr,
            usage=summary(legs),
        )
        path = _record_verdict(ctx, req, record, round_payload)
        if ctx.incremental is not None:  # the findings history (D91), after the verdict
            from wrapper.review.incremental import record_history

            record_history(ctx.ledger, ctx.incremental)
    detail = deliver(ctx, req, record)
    if ctx.incremental is not None:
        from wrapper.review.incremental import finish_round

        closed = finish_round(ctx.posting(req.repo, req.pr))
        derived = "derived verdict (delta round)" if ctx.incremental.derived else ""
        detail = "; ".join(filter(None, (derived, detail, closed)))
    if result.findings is not None:
        as_review = round_payload is not None  # posted by deliver as one review (D90)
        _post_findings(ctx, req, patch_id, result.findings, path, as_review)
    return req.report(
        Outcome.REVIEWED,
        patch_id=patch_id,
        verdict=result.verdict,
        artifact=str(path),
        detail=detail,
    )


def _with_header(header: str, body: str) -> str:
    return f"{header}\n{body}" if header else body


def _review(
    ctx: ReviewContext,
    reviewer: CommandReviewer | OpenAIReviewer,
    git: Git,
    pr: PullRequest,
    data: PromptInput,
    worktree: Path,
    patch_id: str,
    sized: SizedRound | RosterRound | None = None,
) -> tuple[ReviewResult, RoundPayload | None]:
    """Step 7: the reviewer's verdict, from one backend or (``roster``) one leg per roster
    reviewer of the base branch, merged; with ``review_post`` on for the repository (one
    backend), read under the findings contract, with the round to post (D86; a roster's
    findings as one review, D90); a diff over the limit (``sized``), one leg per chunk,
    merged (D89)."""
    if not reviewer.roster and sized is not None and sized.legs > 1:
        from wrapper.review.chunked_leg import SizedRound, run_chunked

        assert isinstance(sized, SizedRound)
        return run_chunked(ctx, reviewer, data, worktree, patch_id, sized)
    if not reviewer.roster and review_post_enabled(ctx.config, data.repo):
        from wrapper.review.round_review import review_with_findings

        return review_with_findings(ctx, reviewer, data, worktree, patch_id)
    if not reviewer.roster:
        return run_reviewer(
            reviewer,
            render_prompt(data, ctx.config.prompt_template),
            worktree,
            ctx.environ,
            **leg_options(ctx),
        ), None
    # The roster (markdown-it, the roster grammar) is loaded only when a roster runs: the
    # carry-forward path never gets here (D35).
    from wrapper.review.roster_chunks import RosterRound
    from wrapper.review.roster_review import load_base_roster, run_roster_review

    planned = sized if isinstance(sized, RosterRound) else None  # D95: planned in step 4
    if planned is not None:
        roster, blocks = planned.roster, planned.blocks
    else:
        roster, blocks = load_base_roster(git, f"{BASE_REF_PREFIX}{pr.base_ref}", data.diff)
    for warning in roster.warnings:
        log.warning("roster: %s", warning)
    log.info("%s #%s: %s", data.repo, data.pr, roster.summary)
    merged = run_roster_review(
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
        sized=planned,
        meter=ctx.meter,
    )
    if review_post_enabled(ctx.config, data.repo):
        from wrapper.review.roster_round import roster_payload

        payload = roster_payload(roster, merged, data.diff, patch_id, data.head_sha, data.excluded)
        return merged, payload
    return merged, None


def _post_findings(
    ctx: ReviewContext,
    req: ReviewRequest,
    patch_id: str,
    findings: tuple[Finding, ...],
    verdict_path: Path,
    as_review: bool = False,
) -> None:
    """Step 10 (roster mode): the findings posted on the PR and counted (``as_review``:
    already posted with the round's review, D90), the validator's withdrawn ones
    withdrawn on their thread (and any an earlier failed run left); any finding not
    posted is KdevError ``findings_post_incomplete``, any withdrawal left
    ``findings_withdraw_incomplete`` (the verdict stands, delivered)."""
    from wrapper.review.findings_post import (
        FINDINGS_INCOMPLETE,
        check_withdrawn,
        post_findings,
        withdraw_pending,
    )
    from wrapper.review.findings_target import PostTarget

    target = PostTarget(
        ctx.github, ctx.ledger, ctx.config, ctx.environ, req.repo, req.pr, req.head_sha
    )
    if as_review:
        withdraw_pending(target)
        check_withdrawn(target, verdict_path)
        return
    posted = post_findings(target, patch_id, findings, ctx.clock)
    if posted.posted < posted.expected:
        reasons = ", ".join(sorted({f["reason"] for f in posted.failures}))
        raise KdevError(
            f"{posted.posted} of {posted.expected} findings posted on {req.repo} #{req.pr} "
            f"({reasons}); the verdict is {verdict_path}",
            FINDINGS_INCOMPLETE,
        )
    check_withdrawn(target, verdict_path)


def _record_verdict(
    ctx: ReviewContext,
    req: ReviewRequest,
    record: VerdictRecord,
    round_payload: RoundPayload | None = None,
) -> Path:
    """Step 8: what is owed recorded, then the verdict file and its index entry; the
    head's deferred marker, if any, is cleared."""
    path = write_verdict_owing_delivery(ctx, req, record, round_payload)
    entry = IndexEntry(
        patch_id=record.patch_id,
        verdict=record.verdict,
        reviewed_at=record.reviewed_at,
        carried_from=None,
    )
    ctx.ledger.record_index(req.repo, req.pr, req.head_sha, entry)
    ctx.ledger.clear_deferred(req.repo, req.pr, req.head_sha)
    return path
