"""The legs of a chunked diff merged into one round (issue 28, D89). Pure: no I/O.

Each chunk of :mod:`wrapper.review.chunking` is one leg; :func:`merge_chunks` folds
their results into one summary, one list of findings (an identical finding reported by
two legs counted once) and one verdict: REQUEST_CHANGES when any leg asked for changes
or any P1/P2 finding stands (:func:`~wrapper.review.findings_contract.verdict_of`).
A round with a chunk missing, or reported twice, is refused: a part of the diff no leg
read must never read as approved.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from wrapper.refusal import Refusal
from wrapper.review.findings_contract import (
    APPROVE,
    REQUEST_CHANGES,
    Finding,
    ParsedReview,
    verdict_of,
)

CHUNK_MISSING = "chunk_missing"
CHUNK_REPEATED = "chunk_repeated"


@dataclass(frozen=True)
class ChunkResult:
    """One chunk's leg: the chunk's index, the paths it covered, what the leg said."""

    index: int
    paths: tuple[str, ...]
    review: ParsedReview


@dataclass(frozen=True)
class MergedRound:
    """The round: one verdict, one summary, the findings once each, and which chunk
    covered which files (``coverage``: index -> paths, in order)."""

    verdict: str
    summary: str
    findings: tuple[Finding, ...]
    coverage: tuple[tuple[int, tuple[str, ...]], ...]
    legs: int


@dataclass(frozen=True)
class MergeRefusal(Refusal):
    """Why the chunks' results do not make one round."""

    WHAT = "the chunked round cannot be merged"


def merge_chunks(results: Sequence[ChunkResult], chunk_count: int) -> MergedRound | MergeRefusal:
    """``results`` (one per chunk ``0 .. chunk_count-1``, any order) as one round."""
    by_index: dict[int, ChunkResult] = {}
    for result in results:
        if result.index in by_index:
            return MergeRefusal(CHUNK_REPEATED, f"chunk {result.index + 1} has two results")
        by_index[result.index] = result
    missing = [index + 1 for index in range(chunk_count) if index not in by_index]
    extra = sorted(index for index in by_index if not 0 <= index < chunk_count)
    if missing or extra or chunk_count < 1:
        detail = f"chunks {missing or extra} of {chunk_count} have no result"
        return MergeRefusal(CHUNK_MISSING, detail)
    ordered = [by_index[index] for index in range(chunk_count)]
    findings = tuple(dict.fromkeys(f for result in ordered for f in result.review.findings))
    asked = any(result.review.verdict == REQUEST_CHANGES for result in ordered)
    verdict = REQUEST_CHANGES if asked or verdict_of(findings) == REQUEST_CHANGES else APPROVE
    summary = "\n\n".join(_section(result, chunk_count) for result in ordered)
    coverage = tuple((result.index, result.paths) for result in ordered)
    return MergedRound(verdict, summary, findings, coverage, chunk_count)


def _section(result: ChunkResult, count: int) -> str:
    files = ", ".join(f"`{path}`" for path in result.paths)
    return f"**Part {result.index + 1} of {count}** ({files}): {result.review.summary.strip()}"
