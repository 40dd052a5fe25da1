"""A roster round under the size policy (issue 28, D89, D95).

:func:`plan_roster` sizes each roster reviewer's own prompt before the budget gate: the
backend's limit (``size_policy``), less that reviewer's prompt without a diff (its role,
instructions and context included), is the room its diff is cut for
(:func:`wrapper.review.chunking.plan_chunks`). A reviewer whose diff fits is one leg with
the prompt it always had; one over it is one leg per chunk, each holding its part note
and the list of the reviewer's other files, and its legs' outputs are merged into that
reviewer's one output (:func:`wrapper.review.chunk_merge.merge_chunks`: no chunk
missing or repeated) before the roster merges its reviewers into one verdict. Every leg
is known before any runs, so the gate counts them all (``legs``); a reviewer with more
chunks than ``size_policy.max_chunks`` defers the whole round (``too_large``).

The independent validator's diff for a finding is its file's block when that fits the
limit, else the part of the leg that reported it (``diff_for``): never a prompt over
the limit either.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from wrapper.config import CommandReviewer, KdevConfig, OpenAIReviewer
from wrapper.errors import KdevError
from wrapper.review.chunk_merge import ChunkResult, MergeRefusal, merge_chunks
from wrapper.review.chunking import Chunk, ChunkPlan, plan_within
from wrapper.review.findings import Finding
from wrapper.review.findings_contract import REQUEST_CHANGES, ParsedReview
from wrapper.review.prompt import PART_NOTE, PromptInput, part_note
from wrapper.review.roster import Roster, RosterReviewer
from wrapper.review.roster_prompt import prompt_over, reviewer_diff
from wrapper.review.sizing import Limit, estimate_tokens
from wrapper.review.validator import diffs_by_path, validator_prompt
from wrapper.review.verdict_grammar import parse_verdict

# The part note's words and its fence, beyond the estimate of the note itself.
_NOTE_MARGIN = 16


@dataclass(frozen=True)
class ReviewerPlan:
    """One roster reviewer's share of the round: its diff's chunks (None: not sized)."""

    reviewer: RosterReviewer
    plan: ChunkPlan | None = None

    @property
    def legs(self) -> int:
        return 1 if self.plan is None else max(1, len(self.plan.chunks))

    def chunk(self, index: int) -> Chunk | None:
        """Chunk ``index`` of a reviewer cut into several, else None (its whole diff)."""
        if self.plan is None or len(self.plan.chunks) < 2:
            return None
        return self.plan.chunks[index]


@dataclass(frozen=True)
class RosterRound:
    """The roster, its diff split per file, and each reviewer's legs (``limit`` None: a
    round planned without the size policy, one leg per reviewer as before D95)."""

    roster: Roster
    blocks: Mapping[str, str]
    reviewers: tuple[ReviewerPlan, ...]
    limit: Limit | None = None
    # The diff each set of files reads, joined once (reviewers of one scope share it).
    diffs: Mapping[tuple[str, ...], str] = dataclasses.field(default_factory=dict)

    @property
    def legs(self) -> int:
        """Every reviewer leg of the round (an empty roster still one: it fails loud)."""
        return max(1, sum(plan.legs for plan in self.reviewers))

    @property
    def chunk_count(self) -> int:
        """The most chunks any one reviewer's diff was cut into."""
        return max((plan.legs for plan in self.reviewers), default=1)

    def too_large(self, max_chunks: int) -> str | None:
        """The deferral's one line when a reviewer has more than ``max_chunks`` chunks."""
        for plan in self.reviewers:
            if plan.plan is not None and plan.legs > max_chunks and self.limit is not None:
                return (
                    f"roster reviewer {plan.reviewer.name}'s diff, estimated "
                    f"{plan.plan.total_tokens} tokens, makes {plan.legs} chunks under a "
                    f"{self.limit.tokens}-token limit ({self.limit.source}); "
                    f"size_policy.max_chunks is {max_chunks}"
                )
        return None

    def leg_keys(self) -> list[tuple[int, int]]:
        """(reviewer, chunk) of every leg, in roster order."""
        return [(r, c) for r, plan in enumerate(self.reviewers) for c in range(plan.legs)]

    def _diff(self, reviewer: RosterReviewer) -> str:
        known = self.diffs.get(reviewer.changed_files)
        return known if known is not None else reviewer_diff(reviewer, self.blocks)

    def prompt(self, key: tuple[int, int], data: PromptInput, template: str | None) -> str:
        """The prompt of leg ``key``: the reviewer's whole diff, or one chunk of it with
        its part note (rendered now, from the one joined diff)."""
        plan = self.reviewers[key[0]]
        reviewer, diff = plan.reviewer, self._diff(plan.reviewer)
        chunk = plan.chunk(key[1])
        if chunk is None:
            return prompt_over(reviewer, data, diff, template)
        narrowed = dataclasses.replace(reviewer, changed_files=chunk.paths)
        note = part_note(chunk.index, plan.legs, chunk.other_paths)
        return prompt_over(narrowed, data, chunk.render(diff), template, note)

    def outputs(self, raw: Sequence[str]) -> list[str]:
        """Each reviewer's one output from its legs' ``raw`` outputs (``leg_keys``
        order): a chunked reviewer's parts under "Part i of n" headers, then the merged
        verdict line. KdevError when the parts do not make one round."""
        merged: list[str] = []
        at = 0
        for plan in self.reviewers:
            legs = list(raw[at : at + plan.legs])
            at += plan.legs
            merged.append(legs[0] if plan.chunk(0) is None else _merge_parts(plan, legs))
        return merged

    def diff_for(self, raw: Sequence[str]) -> Callable[[Finding], str]:
        """The validator's diff for a finding: its file's block (else every block) when
        the validator's prompt fits the limit, else the part of the leg that reported it."""
        whole = diffs_by_path(self.blocks)
        keys = self.leg_keys()

        def diff_for(finding: Finding) -> str:
            text = whole(finding)
            bare = estimate_tokens(validator_prompt(finding, ""))
            if self.limit is None or bare + estimate_tokens(text) <= self.limit.tokens:
                return text
            for (r, c), output in zip(keys, raw, strict=True):
                plan = self.reviewers[r]
                if plan.reviewer.name == finding.agent and finding.text in output:
                    return self._source(plan, c, finding)
            return ""  # no leg said it: the validator sees no diff and cannot confirm it

        return diff_for

    def _source(self, plan: ReviewerPlan, index: int, finding: Finding) -> str:
        diff = self._diff(plan.reviewer)
        chunk = plan.chunk(index)
        if chunk is None:
            return diff
        own = [part for part in chunk.parts if part.path == finding.path]
        return "".join(part.render(diff) for part in own) or chunk.render(diff)


def _merge_parts(plan: ReviewerPlan, legs: Sequence[str]) -> str:
    assert plan.plan is not None
    chunks = plan.plan.chunks
    results = [
        ChunkResult(c.index, c.paths, ParsedReview("prose", _verdict(out), out))
        for c, out in zip(chunks, legs, strict=True)
    ]
    merged = merge_chunks(results, len(chunks))
    if isinstance(merged, MergeRefusal):
        raise KdevError(f"{merged.WHAT}: {merged.detail}", merged.reason)
    parts = [
        f"### Part {c.index + 1} of {len(chunks)} ({', '.join(c.paths)})\n\n{out.strip()}"
        for c, out in zip(chunks, legs, strict=True)
    ]
    return "\n\n".join([*parts, f"VERDICT: {merged.verdict}"])


def _verdict(output: str) -> str:
    # A leg without a valid verdict line never got here (run_reviewer: no_verdict).
    return parse_verdict(output) or REQUEST_CHANGES


def unsized_round(roster: Roster, blocks: Mapping[str, str]) -> RosterRound:
    """The round as before D95: one leg per reviewer, its whole diff."""
    return RosterRound(roster, blocks, tuple(ReviewerPlan(r) for r in roster.reviewers))


def plan_roster(
    config: KdevConfig, roster: Roster, blocks: Mapping[str, str], data: PromptInput
) -> RosterRound:
    """Each reviewer of ``roster`` sized under the backend's limit (see the module doc).
    KdevError with the planner's reason when a reviewer's diff cannot be cut."""
    backend = config.reviewer
    assert isinstance(backend, CommandReviewer | OpenAIReviewer)
    limit = config.size_policy.limit(backend.model)
    bare = dataclasses.replace(data, diff="")
    diffs: dict[tuple[str, ...], str] = {}
    plans: list[ReviewerPlan] = []
    for reviewer in roster.reviewers:
        diff = diffs.get(reviewer.changed_files)
        if diff is None:
            diff = reviewer_diff(reviewer, blocks)
            diff = data.diff if diff == data.diff else diff  # the whole diff: no copy
            diffs[reviewer.changed_files] = diff
        prompt = prompt_over(reviewer, bare, "", config.prompt_template)
        overhead = estimate_tokens(prompt) + estimate_tokens(PART_NOTE) + _NOTE_MARGIN
        plans.append(ReviewerPlan(reviewer, plan_within(diff, limit, overhead)))
    return RosterRound(roster, blocks, tuple(plans), limit, diffs)
