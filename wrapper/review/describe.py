"""``kdev describe-pr``: a PR description written by the reviewer backend, posted as a comment.

It never edits the PR body. It shares review-pr's gates and sandbox:

0. self-loop        ``--comment-id`` of a comment kdev posted -> skipped_self_comment
1. fork backstop    as review-pr (a fork passes only on an allowlisted ``--comment-id``)
2. diff             fetch base + refs/pull/N/head; an empty diff -> skipped_empty_diff;
                    the reviewed paths' diff only, every excluded path listed in the
                    prompt and the description (D87); over the reviewer's prompt limit
                    (D89), the whole files that fit and the other files' names, the
                    description saying which it did not read (D95); a limit too small
                    for the names alone -> budget_too_small and a FAILURE notice
3. budget           it is a leg: counted in ``legs.jsonl`` like a review, and over a
                    budget -> deferred_budget (a DEFERRED notice; no deferred marker, since
                    the sweep retries markers as reviews)
4. freshness        the PR's head moved on from ``--head-sha`` -> skipped_stale_head
5. backend          the describe prompt (``templates/describe.md.j2`` or
                    ``describe_template``; same data-not-instructions clause and fencing),
                    run in a disposable worktree with the reviewer's environment (no token);
                    no VERDICT line is needed
6. post             prepared (escaped, neutralised), secret canary, posted, id recorded
                    -> described
"""

from __future__ import annotations

from dataclasses import replace

from wrapper.errors import ConfigError, KdevError, Outcome
from wrapper.git import Git
from wrapper.post import post_comment
from wrapper.review.budgetgate import defer_for_cap
from wrapper.review.chunking import limit_error
from wrapper.review.describe_size import (
    DescribePlan,
    DescribeRefusal,
    plan_describe,
    unread_footer,
    unread_note,
)
from wrapper.review.force import resolve_head
from wrapper.review.leg import leg_worktree, prompt_input
from wrapper.review.leg_usage import record_usage_or_warn
from wrapper.review.prompt import PromptInput, render_describe_prompt
from wrapper.review.review import (
    ReviewContext,
    ReviewReport,
    ReviewRequest,
    admit,
    notify_failure,
    over_budget,
)
from wrapper.review.reviewer import leg_options, run_reviewer_text
from wrapper.review.sizing import estimate_tokens
from wrapper.review.steps import moved_on, patch_of_head

HEADER = "**kdev description** of {head} ({model})"
_NOTE_MARGIN = 16  # the fences and joins beyond the parts' own estimates


def describe_pr(req: ReviewRequest, ctx: ReviewContext) -> ReviewReport:
    """Describe ``req.pr`` and post the description as one comment (see the module doc).

    ``req.head_sha`` empty means "the PR's current head"."""
    if ctx.config.mention_handle is None:
        raise ConfigError(
            "kdev describe-pr posts a comment: set mention_handle in KDEV_CONFIG",
            "invalid_config",
        )
    admitted = admit(req, ctx)
    if isinstance(admitted, ReviewReport):
        return admitted
    pr = admitted
    req = resolve_head(req, pr)
    head_sha = req.head_sha
    pr_url = req.pr_url or pr.html_url

    git = Git(req.checkout)
    patch = patch_of_head(req, pr, git, ctx.config)
    if isinstance(patch, ReviewReport):
        return patch
    patch_id, info = patch
    excluded = info.exclusions.excluded if info.exclusions is not None else ()
    data = replace(prompt_input(req, pr, head_sha, info.for_reviewer, pr_url), excluded=excluded)
    try:  # sized before any leg is counted: a refusal bills nothing
        plan = _plan(ctx, data)
    except KdevError as exc:
        notify_failure(ctx, req, exc)
        raise

    budgets = ctx.config.budgets
    over = over_budget(ctx, req, pr_url, patch_id, marker=False)
    if over is not None:
        return over
    with ctx.ledger.concurrency_slot(req.repo, budgets.max_concurrent_legs_per_repo) as slot:
        if slot is None:
            return defer_for_cap(ctx, req, pr_url, patch_id, marker=False)
        stale = moved_on(req, pr, patch_id)
        if stale is not None:
            return stale
        with ctx.ledger.legs_lock(req.repo):
            over = over_budget(ctx, req, pr_url, patch_id, marker=False)
            if over is not None:
                return over
            ctx.ledger.record_leg_start(req.repo, req.pr, head_sha)
        if plan is not None:
            data = replace(data, diff=plan.diff)
        return _describe_leg(ctx, req, pr_url, git, patch_id, data, plan)


def _plan(ctx: ReviewContext, data: PromptInput) -> DescribePlan | None:
    """What the describer reads of ``data.diff`` under the reviewer's limit (D95); None
    without a reviewer (the leg says no_reviewer). KdevError when nothing fits."""
    reviewer = ctx.config.reviewer
    if reviewer is None:
        return None
    limit = ctx.config.size_policy.limit(reviewer.model)
    bare = render_describe_prompt(replace(data, diff=""), ctx.config.describe_template)
    overhead = estimate_tokens(bare) + _NOTE_MARGIN  # the note's own cost: plan_describe's
    plan = plan_describe(data.diff, limit, overhead)
    if isinstance(plan, DescribeRefusal):
        raise limit_error(plan, limit, overhead)
    return plan


def _describe_leg(
    ctx: ReviewContext,
    req: ReviewRequest,
    pr_url: str,
    git: Git,
    patch_id: str,
    data: PromptInput,
    plan: DescribePlan | None,
) -> ReviewReport:
    unread = () if plan is None else plan.unread
    with leg_worktree(ctx, req, git, pr_url, f"kdev-describe-pr{req.pr}-") as (reviewer, worktree):
        note = unread_note(unread)
        prompt = render_describe_prompt(data, ctx.config.describe_template, note)
        try:
            output = run_reviewer_text(
                reviewer,
                prompt,
                worktree,
                ctx.environ,
                **leg_options(ctx),
            )
        finally:
            record_usage_or_warn(ctx, req.repo, req.pr, req.head_sha, patch_id, "describe-pr")
        header = HEADER.format(head=req.head_sha[:12], model=reviewer.model)
        posted = post_comment(
            ctx.posting(req.repo, req.pr),
            f"{header}\n\n{output.strip()}\n{unread_footer(plan, data.excluded)}",
            "describe",
        )
    return req.report(
        Outcome.DESCRIBED,
        patch_id=patch_id,
        artifact=posted.html_url or None,
        detail=f"comment {posted.id} posted",
    )
