"""Steps 2 and 5 of ``kdev review-pr``, shared with ``describe-pr``: the patch-id of
exactly the head as fired, and the freshness check."""

from __future__ import annotations

from engine.github import PullRequest
from wrapper.config import KdevConfig
from wrapper.errors import Outcome
from wrapper.git import Git
from wrapper.review.context import ReviewReport, ReviewRequest
from wrapper.review.exclusions import format_exclusions
from wrapper.review.merge_gate import NOTHING_REVIEWED
from wrapper.review.patch_id import (
    PatchInfo,
    compute_patch_id,
    fetch_head_commit,
    fetch_pr_refs,
)


def patch_of_head(
    req: ReviewRequest, pr: PullRequest, git: Git, config: KdevConfig
) -> tuple[str, PatchInfo] | ReviewReport:
    """Step 2: fetch base + ``refs/pull/N/head`` (and ``req.head_sha`` by SHA if it is
    missing), then ``(patch_id, info)`` of base...head with ``config``'s exclusions
    decided (D87). A head that cannot be had is ``skipped_stale_head``, an empty diff
    ``skipped_empty_diff``, and a diff with no reviewed path ``skipped_all_excluded``
    (its detail lists every exclusion with its rule; the patch-id, when some untrusted
    exclusion gives one); nothing is recorded."""
    base_ref, _ = fetch_pr_refs(git, pr.base_ref, req.pr)
    if not fetch_head_commit(git, req.head_sha):
        return req.report(
            Outcome.SKIPPED_STALE_HEAD,
            detail=f"{req.head_sha} cannot be fetched; current head is {pr.head_sha}",
        )
    info = compute_patch_id(git, base_ref, req.head_sha, config, req.repo)
    result = info.exclusions
    if result is not None and not result.reviewed_paths:
        listed = "; ".join(format_exclusions(result.decisions))
        return req.report(
            Outcome.SKIPPED_ALL_EXCLUDED,
            patch_id=info.patch_id,
            detail=f"{NOTHING_REVIEWED}: {listed}",
        )
    if info.patch_id is None:
        return req.report(Outcome.SKIPPED_EMPTY_DIFF)
    return info.patch_id, info


def moved_on(req: ReviewRequest, pr: PullRequest, patch_id: str) -> ReviewReport | None:
    """Step 5: ``skipped_stale_head`` when the PR's head is no longer ``req.head_sha``
    (its new head fires on a later poll); None when it still is."""
    if pr.head_sha == req.head_sha:
        return None
    return req.report(
        Outcome.SKIPPED_STALE_HEAD,
        patch_id=patch_id,
        detail=f"current head is {pr.head_sha}",
    )
