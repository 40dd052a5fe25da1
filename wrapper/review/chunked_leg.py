"""A diff over the reviewer's prompt limit, reviewed as one round of chunk legs (issue
28, D89 "Wired").

:func:`size_round` plans the round before the budget gate: the reviewer's limit
(``size_policy``), the prompt's overhead without the diff, and the chunks of the diff
under what is left (:func:`wrapper.review.chunking.plan_chunks`). A plan the planner
refuses is KdevError with its reason (a FAILURE notice, never a truncated prompt); more
chunks than ``size_policy.max_chunks`` is a ``diff_too_large`` deferral, made by the
caller. :func:`run_chunked` runs one leg per chunk, each prompt holding its chunk and the
list of the diff's other files, and merges them into one verdict
(:func:`wrapper.review.chunk_merge.merge_chunks`). A roster round is planned per roster
reviewer (:func:`size_roster`, :mod:`wrapper.review.roster_chunks`, D95) and run by
:mod:`wrapper.review.roster_review`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from wrapper.config import CommandReviewer, OpenAIReviewer
from wrapper.config_repo import review_post_enabled
from wrapper.errors import KdevError
from wrapper.git import Git
from wrapper.review.budget import WINDOW
from wrapper.review.budgetgate import defer
from wrapper.review.chunk_merge import ChunkResult, MergedRound, MergeRefusal, merge_chunks
from wrapper.review.chunking import ChunkPlan, plan_within
from wrapper.review.context import ReviewContext, ReviewReport, ReviewRequest
from wrapper.review.findings_contract import ParsedReview
from wrapper.review.findings_earlier import merge_earlier
from wrapper.review.patch_id import BASE_REF_PREFIX
from wrapper.review.prompt import (
    PART_NOTE,
    VERDICT_INSTRUCTION,
    PromptInput,
    part_note,
    render_prompt,
)
from wrapper.review.reviewer import ReviewResult, leg_options, run_reviewer
from wrapper.review.sizing import Limit, estimate_tokens

if TYPE_CHECKING:
    from wrapper.review.roster_chunks import RosterRound
    from wrapper.review.round_post import RoundPayload

DIFF_TOO_LARGE = "diff_too_large"


@dataclass(frozen=True)
class SizedRound:
    """The round's plan: the reviewer's limit, the prompt's overhead (no diff) and the
    chunks (one, for a diff that fits)."""

    limit: Limit
    overhead: int
    plan: ChunkPlan

    @property
    def legs(self) -> int:
        return max(1, len(self.plan.chunks))

    @property
    def chunk_count(self) -> int:
        return len(self.plan.chunks)

    def too_large(self, max_chunks: int) -> str | None:
        """The deferral's one line when the plan has more than ``max_chunks`` chunks."""
        if len(self.plan.chunks) <= max_chunks:
            return None
        return (
            f"the diff's estimated {self.plan.total_tokens} tokens make "
            f"{len(self.plan.chunks)} chunks under a {self.limit.tokens}-token limit "
            f"({self.limit.source}); size_policy.max_chunks is {max_chunks}"
        )


def _closing(
    ctx: ReviewContext, reviewer: CommandReviewer | OpenAIReviewer, data: PromptInput
) -> str:
    if review_post_enabled(ctx.config, data.repo):
        from wrapper.review.round_review import findings_closing

        return findings_closing(reviewer, data.contract_version)
    return VERDICT_INSTRUCTION


def size_round(
    ctx: ReviewContext, data: PromptInput, raw: bytes | None = None
) -> SizedRound | None:
    """The round's plan for ``data`` (its diff whole; ``raw``, the diff's undecoded
    bytes, instead when given: the same plan, D111), or None when no single backend
    is configured (a roster round, or none: the leg reports that). Raises KdevError with
    the planner's reason when the diff cannot be cut, DiffError when unreadable."""
    reviewer = ctx.config.reviewer
    if reviewer is None or reviewer.roster:
        return None
    limit = ctx.config.size_policy.limit(reviewer.model)
    closing = _closing(ctx, reviewer, data)
    bare = render_prompt(replace(data, diff=""), ctx.config.prompt_template, closing)
    # The part note's words count too (its file list is in each chunk's own estimate).
    overhead = estimate_tokens(bare) + estimate_tokens(PART_NOTE) + 16
    diff = data.diff if raw is None else raw
    return SizedRound(limit, overhead, plan_within(diff, limit, overhead))


def size_roster(ctx: ReviewContext, git: Git, data: PromptInput) -> RosterRound | None:
    """A roster round's plan (:func:`wrapper.review.roster_chunks.plan_roster`: each
    reviewer's legs under the limit, D95), the roster read from the base branch; None
    when the reviewer is no roster."""
    reviewer = ctx.config.reviewer
    if reviewer is None or not reviewer.roster:
        return None
    # The roster (markdown-it, its grammar) is loaded only for a roster round (D35).
    from wrapper.review.roster_chunks import plan_roster
    from wrapper.review.roster_review import load_base_roster

    roster, blocks = load_base_roster(git, f"{BASE_REF_PREFIX}{data.base}", data.diff)
    return plan_roster(ctx.config, roster, blocks, data)


def plan_or_defer(
    ctx: ReviewContext,
    req: ReviewRequest,
    pr_url: str,
    patch_id: str,
    data: PromptInput,
    git: Git,
) -> SizedRound | RosterRound | ReviewReport | None:
    """Step 4's size check: the round's plan (:func:`size_round`, or a roster's:
    :func:`size_roster`), or the ``diff_too_large`` deferral (a marker
    re-checked daily, a notice naming the estimate, the limit's source and the setting;
    the merge gate's pending) above ``max_chunks``."""
    sized = size_round(ctx, data) or size_roster(ctx, git, data)
    if sized is None:
        return None
    return defer_too_large(ctx, req, pr_url, patch_id, sized) or sized


def defer_too_large(
    ctx: ReviewContext,
    req: ReviewRequest,
    pr_url: str,
    patch_id: str,
    sized: SizedRound | RosterRound,
) -> ReviewReport | None:
    """The ``diff_too_large`` deferral of ``sized`` above ``max_chunks``, else None."""
    max_chunks = ctx.config.size_policy.max_chunks
    why = sized.too_large(max_chunks)
    if why is None:
        return None
    count = sized.chunk_count
    reopens = ctx.clock() + WINDOW
    return defer(ctx, req, pr_url, DIFF_TOO_LARGE, count, max_chunks, reopens, patch_id, why=why)


def run_chunked(
    ctx: ReviewContext,
    reviewer: CommandReviewer | OpenAIReviewer,
    data: PromptInput,
    worktree: Path,
    patch_id: str,
    sized: SizedRound,
) -> tuple[ReviewResult, RoundPayload | None]:
    """One leg per chunk of ``sized`` (every leg already counted by the caller), merged
    into one verdict; with ``review_post`` on, one round holding every chunk's findings."""
    findings_mode = review_post_enabled(ctx.config, data.repo)
    chunks = sized.plan.chunks
    results: list[ChunkResult] = []
    bodies: list[str] = []
    for chunk in chunks:
        part = replace(data, diff=chunk.render(data.diff))
        note = part_note(chunk.index, len(chunks), chunk.other_paths)
        if findings_mode:
            from wrapper.review.round_review import findings_leg

            output, parsed = findings_leg(ctx, reviewer, part, worktree, note)
        else:
            leg = run_reviewer(
                reviewer,
                render_prompt(part, ctx.config.prompt_template, note + VERDICT_INSTRUCTION),
                worktree,
                ctx.environ,
                **leg_options(ctx),
            )
            output = leg.body
            parsed = ParsedReview("prose", leg.verdict, leg.body)
        bodies.append(output)
        results.append(ChunkResult(chunk.index, chunk.paths, parsed))
    merged = merge_chunks(results, len(chunks))
    if isinstance(merged, MergeRefusal):
        raise KdevError(f"{merged.WHAT}: {merged.detail}", merged.reason)
    earlier = merge_earlier([r.review.earlier for r in results])
    result, payload = _merged_result(merged, bodies, reviewer.model, findings_mode, data, patch_id)
    if payload is None or ctx.incremental is None:
        return result, payload
    from wrapper.review.round_review import settled_result

    parsed = ParsedReview(
        "findings", merged.verdict, merged.summary, merged.findings, earlier=earlier
    )
    return settled_result(ctx, parsed, result.body, reviewer.model, data, patch_id)


def _merged_result(
    merged: MergedRound,
    bodies: list[str],
    model: str,
    findings_mode: bool,
    data: PromptInput,
    patch_id: str,
) -> tuple[ReviewResult, RoundPayload | None]:
    """The round's one result: the legs' outputs under "Part i of n" headers, then the
    merged verdict line; with findings, the round of every chunk's findings."""
    count = len(bodies)
    parts = [f"## Part {i} of {count}\n\n{body.strip()}" for i, body in enumerate(bodies, 1)]
    body = "\n\n".join([*parts, f"VERDICT: {merged.verdict}"])
    result = ReviewResult(verdict=merged.verdict, body=body, model=model)
    if not findings_mode:
        return result, None
    from wrapper.review.round_review import round_payload

    parsed = ParsedReview("findings", merged.verdict, merged.summary, merged.findings)
    return result, round_payload(parsed, data.diff, patch_id, data.head_sha, data.excluded)
