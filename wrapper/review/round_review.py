"""Step 7 with ``review_post`` on (docs/decisions.md D86): the single reviewer asked
for findings in the contract's form, its output read under the contract, and the round
rendered for :mod:`wrapper.review.round_post`.

A command reviewer's prompt closes with the contract's ``FINDINGS_INSTRUCTION`` and the
verdict instruction; an openai backend's with its ``STRUCTURED_INSTRUCTION``, the
request carrying its ``response_format()``. Output that breaks the
contract is ReviewerFailed with the contract's reason code (no verdict is written,
nothing is posted); prose with a verdict line is a round with the prose as its summary.
The verdict is the findings' verdict.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from wrapper.config import CommandReviewer, OpenAIReviewer
from wrapper.errors import ReviewerFailed
from wrapper.review.anchoring import FileDiff, Placement, parse_diff, place_all
from wrapper.review.context import ReviewContext
from wrapper.review.exclusions import Decision
from wrapper.review.findings_contract import (
    EARLIER_VERSION,
    FINDINGS_INSTRUCTION,
    STRUCTURED_INSTRUCTION,
    ContractFailure,
    ParsedReview,
    parse_review,
    response_format,
)
from wrapper.review.findings_earlier import EARLIER_INSTRUCTION
from wrapper.review.incremental_settle import DERIVED_NOTE
from wrapper.review.prompt import VERDICT_INSTRUCTION, PromptInput, render_prompt
from wrapper.review.review_body import NotReviewed, render_round
from wrapper.review.reviewer import ReviewResult, leg_options, run_reviewer_text
from wrapper.review.round_post import FALLBACK_NOTE, RoundPayload

REFUSED = "refused_by_github"


def review_with_findings(
    ctx: ReviewContext,
    reviewer: CommandReviewer | OpenAIReviewer,
    data: PromptInput,
    worktree: Path,
    patch_id: str,
) -> tuple[ReviewResult, RoundPayload]:
    """The reviewer's verdict and the round to post (see the module doc)."""
    output, parsed = findings_leg(ctx, reviewer, data, worktree)
    return settled_result(ctx, parsed, output, reviewer.model, data, patch_id)


def settled_result(
    ctx: ReviewContext,
    parsed: ParsedReview,
    output: str,
    model: str,
    data: PromptInput,
    patch_id: str,
) -> tuple[ReviewResult, RoundPayload]:
    """The round's result and payload; in a round that keeps the findings history (D91),
    the answer settled against the earlier rounds' first (only new findings posted, the
    verdict counting the standing ones, a delta round's marked derived)."""
    if ctx.incremental is not None and parsed.mode == "findings":
        parsed = ctx.incremental.settle(parsed)
        if ctx.incremental.derived:
            output = f"{DERIVED_NOTE}\n\n{output}"
    payload = round_payload(parsed, data.diff, patch_id, data.head_sha, data.excluded)
    return ReviewResult(verdict=parsed.verdict, body=output, model=model), payload


def findings_closing(reviewer: CommandReviewer | OpenAIReviewer, version: int = 1) -> str:
    """The prompt's closing under the contract: structured (openai) or block + verdict;
    version 2 (an incremental round, D91) asks for the report on earlier findings."""
    earlier = f"\n\n{EARLIER_INSTRUCTION}" if version == EARLIER_VERSION else ""
    if isinstance(reviewer, OpenAIReviewer):
        return f"{STRUCTURED_INSTRUCTION}{earlier}"
    return f"{FINDINGS_INSTRUCTION}{earlier}\n\n{VERDICT_INSTRUCTION}"


def findings_leg(
    ctx: ReviewContext,
    reviewer: CommandReviewer | OpenAIReviewer,
    data: PromptInput,
    worktree: Path,
    preamble: str = "",
) -> tuple[str, ParsedReview]:
    """One leg under the contract on ``data``: its whole output and what it says
    (``preamble`` goes before the closing: a chunk's part note, D89). A broken contract
    is ReviewerFailed with the contract's reason."""
    structured = isinstance(reviewer, OpenAIReviewer)
    closing = f"{preamble}{findings_closing(reviewer, data.contract_version)}"
    output = run_reviewer_text(
        reviewer,
        render_prompt(data, ctx.config.prompt_template, closing),
        worktree,
        ctx.environ,
        response_format=response_format(data.contract_version) if structured else None,
        **leg_options(ctx),
    )
    parsed = parse_review(output, structured=structured, head_lines=head_line_counter(worktree))
    if isinstance(parsed, ContractFailure):
        raise ReviewerFailed(f"reviewer {reviewer.model}: {parsed.message}", parsed.reason)
    return output, parsed


def round_payload(
    parsed: ParsedReview,
    diff: str,
    patch_id: str,
    head_sha: str,
    excluded: Sequence[Decision] = (),
) -> RoundPayload:
    """The round of ``parsed`` on ``diff`` (the reviewed paths'): its summary and line
    comments, and the summary that lists every finding (for a 422). ``excluded`` (D87)
    are listed as not reviewed, each with its rule and detail."""
    files, reviewed, not_reviewed = diff_files(diff, excluded)
    placements = place_all(parsed.findings, files)
    rendered = render_round(parsed, placements, reviewed, not_reviewed)
    in_summary = [_summary_only(p) for p in placements]
    fallback = render_round(parsed, in_summary, reviewed, not_reviewed)
    return RoundPayload(
        patch_id=patch_id,
        head_sha=head_sha,
        body=rendered.body,
        comments=rendered.comments,
        fallback=f"{fallback.body}\n\n{FALLBACK_NOTE}",
    )


def diff_files(
    diff: str, excluded: Sequence[Decision] = ()
) -> tuple[dict[str, FileDiff], list[str], list[NotReviewed]]:
    """``diff`` read into files (DiffError ``diff_unparseable`` when it cannot be), the
    paths reviewed, and those not reviewed with why: ``excluded`` (D87) with its rule
    and detail, and the binary files."""
    files = parse_diff(diff)
    reviewed = [path for path, f in files.items() if not f.binary]
    not_reviewed = [NotReviewed(d.path, f"{d.rule}: {d.detail}") for d in excluded]
    listed = {d.path for d in excluded}
    not_reviewed += [
        NotReviewed(path, "binary") for path, f in files.items() if f.binary and path not in listed
    ]
    return files, reviewed, not_reviewed


def _summary_only(placement: Placement) -> Placement:
    if not placement.inline:
        return placement
    detail = "GitHub refused the review's line comments"
    return replace(placement, kind="summary", suggestion=False, reason=REFUSED, detail=detail)


def head_line_counter(worktree: Path) -> Callable[[str], int | None]:
    """A head file's line count, read from the review tree (None: no regular file of
    that path inside it; a symlink or a path leaving the tree is none)."""
    root = worktree.resolve()

    def count(path: str) -> int | None:
        candidate = worktree / path
        try:
            resolved = candidate.resolve()
            if not resolved.is_relative_to(root) or candidate.is_symlink():
                return None
            if not resolved.is_file():
                return None
            data = resolved.read_bytes()
        except (OSError, ValueError):
            return None
        return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)

    return count
