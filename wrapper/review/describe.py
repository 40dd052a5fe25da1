"""``kdev describe-pr``: a PR description written by the reviewer backend, posted as a comment.

It never edits the PR body. It shares review-pr's gates and sandbox:

0. self-loop        ``--comment-id`` of a comment kdev posted -> skipped_self_comment
1. fork backstop    as review-pr (a fork passes only on an allowlisted ``--comment-id``)
2. diff             fetch base + refs/pull/N/head; an empty diff -> skipped_empty_diff
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

from wrapper.errors import ConfigError, Outcome
from wrapper.git import Git
from wrapper.ledger.deferral import cap_reopens_at
from wrapper.post import post_comment
from wrapper.review.patch_id import compute_patch_id, fetch_head_commit, fetch_pr_refs
from wrapper.review.prompt import PromptInput, render_describe_prompt
from wrapper.review.review import (
    ReviewContext,
    ReviewReport,
    ReviewRequest,
    admit,
    defer,
    leg_worktree,
    over_budget,
)
from wrapper.review.reviewer import run_reviewer_text

HEADER = "**kdev description** of {head} ({model})"


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
    head_sha = req.head_sha or pr.head_sha
    req = ReviewRequest(
        repo=req.repo,
        pr=req.pr,
        head_sha=head_sha,
        checkout=req.checkout,
        pr_url=req.pr_url,
        author=req.author,
        comment_id=req.comment_id,
    )
    pr_url = req.pr_url or pr.html_url

    git = Git(req.checkout)
    base_ref, _ = fetch_pr_refs(git, pr.base_ref, req.pr)
    if not fetch_head_commit(git, head_sha):
        detail = f"{head_sha} cannot be fetched; current head is {pr.head_sha}"
        return ReviewReport(Outcome.SKIPPED_STALE_HEAD, req.repo, req.pr, head_sha, detail=detail)
    info = compute_patch_id(git, base_ref, head_sha)
    if info.patch_id is None:
        return ReviewReport(Outcome.SKIPPED_EMPTY_DIFF, req.repo, req.pr, head_sha)
    patch_id = info.patch_id

    budgets = ctx.config.budgets
    over = over_budget(ctx, req, pr_url, patch_id, marker=False)
    if over is not None:
        return over
    with ctx.ledger.concurrency_slot(req.repo, budgets.max_concurrent_legs_per_repo) as slot:
        if slot is None:
            cap = budgets.max_concurrent_legs_per_repo
            budget = "max_concurrent_legs_per_repo"
            reopens = cap_reopens_at(ctx.config, ctx.clock())
            return defer(ctx, req, pr_url, budget, cap, cap, reopens, patch_id, marker=False)
        if pr.head_sha != head_sha:
            return ReviewReport(
                Outcome.SKIPPED_STALE_HEAD,
                req.repo,
                req.pr,
                head_sha,
                patch_id,
                detail=f"current head is {pr.head_sha}",
            )
        with ctx.ledger.legs_lock(req.repo):
            over = over_budget(ctx, req, pr_url, patch_id, marker=False)
            if over is not None:
                return over
            ctx.ledger.record_leg_start(req.repo, req.pr, head_sha)
        data = PromptInput(
            repo=req.repo,
            pr=req.pr,
            title=pr.title,
            body=pr.body,
            author=req.author or pr.user_login,
            base=pr.base_ref,
            head_sha=head_sha,
            diff=info.diff,
            pr_url=pr_url,
        )
        return _describe_leg(ctx, req, pr_url, git, patch_id, data)


def _describe_leg(
    ctx: ReviewContext,
    req: ReviewRequest,
    pr_url: str,
    git: Git,
    patch_id: str,
    data: PromptInput,
) -> ReviewReport:
    with leg_worktree(ctx, req, git, pr_url, f"kdev-describe-pr{req.pr}-") as (reviewer, worktree):
        prompt = render_describe_prompt(data, ctx.config.describe_template)
        output = run_reviewer_text(
            reviewer,
            prompt,
            worktree,
            ctx.environ,
            extra_env_names=ctx.config.reviewer_env,
            transport=ctx.reviewer_transport,
            sandbox=ctx.sandbox,
        )
        header = HEADER.format(head=req.head_sha[:12], model=reviewer.model)
        posted = post_comment(
            ctx.github,
            ctx.ledger,
            ctx.config,
            ctx.environ,
            req.repo,
            req.pr,
            f"{header}\n\n{output.strip()}\n",
            "describe",
        )
    return ReviewReport(
        Outcome.DESCRIBED,
        req.repo,
        req.pr,
        req.head_sha,
        patch_id,
        artifact=posted.html_url or None,
        detail=f"comment {posted.id} posted",
    )
