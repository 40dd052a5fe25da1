"""A round too large for its chunks, deferred before its diff is ever decoded (issue 28,
D111).

Step 4 of ``kdev review-pr`` first plans the round on the diff's raw bytes
(:attr:`wrapper.review.patch_id.PatchInfo.for_reviewer_raw`; the planner reads bytes as
offsets, :mod:`wrapper.review.chunking`): the same plan, chunk for chunk, as on the
decoded text. Above ``size_policy.max_chunks`` the round is deferred ``diff_too_large``
right there, so a 50 MB diff is held once, as git's bytes, and neither decoded nor
rendered into a prompt. A round this cannot decide alone is left to the usual path
(:func:`wrapper.review.chunked_leg.plan_or_defer`), whose diff is then bounded by the
limit times ``max_chunks``: a roster round (planned per reviewer, D95) and an incremental
round with a reviewed diff before it (its prompt is rebuilt before sizing, D91).
"""

from __future__ import annotations

from dataclasses import replace

from engine.github import PullRequest
from wrapper.review.chunked_leg import defer_too_large, size_round
from wrapper.review.context import ReviewContext, ReviewReport, ReviewRequest
from wrapper.review.leg import prompt_input
from wrapper.review.patch_id import PatchInfo


def _rebuilt_before_sizing(ctx: ReviewContext, req: ReviewRequest) -> bool:
    """True when an incremental round may replace the diff the round is sized on."""
    from wrapper.ledger.findings_history import history_path
    from wrapper.review.incremental import applies

    if not applies(ctx.config, req.repo):
        return False
    return history_path(ctx.ledger, req.repo, req.pr).exists()


def defer_undecoded(
    ctx: ReviewContext,
    req: ReviewRequest,
    pr: PullRequest,
    pr_url: str,
    patch_id: str,
    info: PatchInfo,
) -> ReviewReport | None:
    """The ``diff_too_large`` deferral of ``info``'s reviewed diff, planned on its bytes;
    None when the round fits its chunks or is not one this can plan (see the module doc).
    Raises as :func:`~wrapper.review.chunked_leg.size_round` does."""
    reviewer = ctx.config.reviewer
    if reviewer is None or reviewer.roster or _rebuilt_before_sizing(ctx, req):
        return None
    excluded = info.exclusions.excluded if info.exclusions is not None else ()
    bare = replace(prompt_input(req, pr, req.head_sha, "", pr_url), excluded=excluded)
    sized = size_round(ctx, bare, info.for_reviewer_raw)
    if sized is None:
        return None
    return defer_too_large(ctx, req, pr_url, patch_id, sized)
