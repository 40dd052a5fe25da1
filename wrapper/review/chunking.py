"""A diff over a reviewer's prompt limit, split into chunks (issue 28, D89). Pure: no I/O.

:func:`plan_chunks` reads the unified diff (``git diff`` output) as offsets into the one
string it is given: no second copy of the diff is built, and a chunk's text is rendered
only when its leg needs it (:meth:`Chunk.render`). Whole files are packed greedily, in
the diff's order. A file too big alone is split by hunks, each piece under its file's
header lines (``diff --git``, ``index``, ``---``/``+++``). A hunk too big alone is split
by lines into hunks of their own, each under a header whose ranges are recounted, so
every piece is a valid diff and every line keeps its number. A single line too big alone
refuses the whole plan (``chunk_too_large``): nothing is ever dropped or truncated.

Each chunk's estimate (:func:`wrapper.review.sizing.estimate_span`) includes the list
of the other files' paths, which the leg's prompt names.

The diff may be given as its raw bytes (``git diff`` output, D111): the plan is then the
same plan, its offsets into the bytes, its estimates those of the bytes' decoding (so a
deferred round decides its chunk count without ever decoding or copying the diff), and
a chunk renders by decoding its own slices only.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from wrapper.errors import KdevError
from wrapper.refusal import Refusal
from wrapper.review.anchoring import DiffError, parse_diff
from wrapper.review.sizing import Limit, estimate_span, estimate_tokens

CHUNK_TOO_LARGE = "chunk_too_large"
BUDGET_TOO_SMALL = "budget_too_small"
_FILE_START = "\ndiff --git "
_HUNK_HEADER = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_HUNK_HEADER_BYTES = re.compile(_HUNK_HEADER.pattern.encode())
# The diff a plan reads: its text, or its raw bytes (decoded per slice, with replacement).
Text = str | bytes
# What a recounted hunk header costs at most ("@@ -N,N +N,N @@" with 10-digit numbers).
_HEADER_ALLOWANCE = 24


@dataclass(frozen=True)
class Piece:
    """Diff text ``diff[start:end]``; with ``header`` set, a recounted hunk header that
    goes before it (the span then holds hunk lines without their own ``@@`` line)."""

    start: int
    end: int
    header: str | None = None


@dataclass(frozen=True)
class Part:
    """One file's share of a chunk: its header span, then its pieces. ``whole``: every
    hunk of the file is in this part."""

    path: str
    header: Piece
    pieces: tuple[Piece, ...]
    whole: bool
    tokens: int

    def render(self, diff: Text) -> str:
        text = [_slice(diff, self.header.start, self.header.end)]
        for piece in self.pieces:
            text.append(piece.header or "")
            text.append(_slice(diff, piece.start, piece.end))
        return "".join(text)


@dataclass(frozen=True)
class Chunk:
    """One leg's share of the diff: its parts, its estimated tokens (the paths list
    included) and the paths of the diff's other files, for the prompt to name."""

    index: int
    parts: tuple[Part, ...]
    tokens: int
    other_paths: tuple[str, ...]

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(part.path for part in self.parts))

    def render(self, diff: Text) -> str:
        """This chunk's diff text, built from ``diff`` (the string or bytes it was
        planned on)."""
        return "".join(part.render(diff) for part in self.parts)


@dataclass(frozen=True)
class ChunkPlan:
    """The chunks of a diff, in order, and the budget they were cut for."""

    chunks: tuple[Chunk, ...]
    budget: int
    total_tokens: int


@dataclass(frozen=True)
class ChunkRefusal(Refusal):
    """Why a diff cannot be cut under the budget: a reason code and one line."""

    WHAT = "the diff cannot be split under the prompt limit"

    path: str | None = None


@dataclass(frozen=True)
class _Section:
    path: str
    start: int
    header_end: int
    hunks: tuple[tuple[int, int], ...]
    end: int


def _lit(diff: Text, literal: str) -> Any:
    """``literal`` in ``diff``'s own type (ASCII, so its bytes when ``diff`` is bytes)."""
    return literal if isinstance(diff, str) else literal.encode("ascii")


def _slice(diff: Text, start: int, end: int) -> str:
    """``diff[start:end]`` as text (bytes decoded with replacement, as the whole would)."""
    part = diff[start:end]
    return part if isinstance(part, str) else part.decode("utf-8", "replace")


def _line_ends(diff: Text, start: int, end: int, needle: str) -> Iterator[int]:
    """Offsets just past each ``\\n`` in [start, end) that is followed by ``needle``."""
    found = _lit(diff, "\n" + needle)
    at = diff.find(found, start, end)
    while at != -1:
        yield at + 1
        at = diff.find(found, at + 1, end)


def sections(diff: Text) -> Iterator[_Section]:
    """Each file of ``diff`` as offsets. Raises DiffError on a diff kdev cannot read."""
    if not diff:
        return
    if not diff.startswith(_lit(diff, "diff --git ")):
        raise DiffError(1, "expected a 'diff --git' header")
    starts = [0, *_line_ends(diff, 0, len(diff), "diff --git ")]
    for number, start in enumerate(starts):
        end = starts[number + 1] if number + 1 < len(starts) else len(diff)
        hunk_starts = list(_line_ends(diff, start, end, "@@"))
        header_end = hunk_starts[0] if hunk_starts else end
        bounds = [*hunk_starts, end]
        hunks = tuple(zip(bounds, bounds[1:], strict=False))
        # The header alone names the file (a section has exactly one "diff --git").
        path = next(iter(parse_diff(_slice(diff, start, header_end))))
        yield _Section(path, start, header_end, hunks, end)


def _hunk_header(diff: Text, start: int, end: int) -> re.Match[str] | re.Match[bytes] | None:
    if isinstance(diff, str):
        return _HUNK_HEADER.match(diff, start, end)
    return _HUNK_HEADER_BYTES.match(diff, start, end)


def _split_hunk(
    diff: Text, start: int, end: int, room: int, path: str
) -> list[tuple[Piece, int]] | ChunkRefusal:
    """The hunk ``diff[start:end]`` as one piece when it fits ``room`` tokens, else as
    recounted hunks of its lines, each fitting; a line too big alone is refused."""
    tokens = estimate_span(diff, start, end)
    if tokens <= room:
        return [(Piece(start, end), tokens)]
    newline, backslash, signs = _lit(diff, "\n"), _lit(diff, "\\"), _lit(diff, " -\n")
    line_end = diff.find(newline, start, end)
    found = _hunk_header(diff, start, end if line_end == -1 else line_end)
    if found is None or line_end == -1:
        raise DiffError(diff.count(newline, 0, start) + 1, "a malformed hunk header")
    zero = _lit(diff, "0")
    old = int(found.group(1)) - (0 if found.group(2) == zero else 1)
    new = int(found.group(3)) - (0 if found.group(4) == zero else 1)
    room -= _HEADER_ALLOWANCE
    pieces: list[tuple[Piece, int]] = []
    body = at = line_end + 1
    used = olds = news = 0
    while at < end:
        stop = diff.find(newline, at, end)
        stop = end if stop == -1 else stop + 1
        while stop < end and diff.startswith(backslash, stop):  # "\ No newline" stays on
            nxt = diff.find(newline, stop, end)
            stop = end if nxt == -1 else nxt + 1
        cost = estimate_span(diff, at, stop)
        if cost > room:
            return ChunkRefusal(
                CHUNK_TOO_LARGE,
                f"{path}: one line of {cost} tokens exceeds the {room} tokens left for it",
                path,
            )
        if used + cost > room:
            pieces.append(_recounted(body, at, old, olds, new, news, used))
            old, new, body, used, olds, news = old + olds, new + news, at, 0, 0, 0
        sign = diff[at : at + 1]
        olds += sign in signs
        news += sign in _lit(diff, " +\n")
        used += cost
        at = stop
    pieces.append(_recounted(body, end, old, olds, new, news, used))
    return pieces


def _recounted(
    start: int, end: int, old: int, olds: int, new: int, news: int, used: int
) -> tuple[Piece, int]:
    """A piece of hunk lines under a header counting them (``old``/``new``: the lines
    before the piece on each side; a side with no lines names the line before, as git)."""
    header = f"@@ -{old + (1 if olds else 0)},{olds} +{new + (1 if news else 0)},{news} @@\n"
    return Piece(start, end, header), used + estimate_tokens(header)


def _file_parts(diff: Text, section: _Section, room: int) -> list[Part] | ChunkRefusal:
    """``section`` as one part when it fits ``room``, else parts of its hunks (and of
    recounted pieces of its hunks), each under the file's header and fitting ``room``."""
    tokens = estimate_span(diff, section.start, section.end)
    header = Piece(section.start, section.header_end)
    whole = tuple(Piece(start, end) for start, end in section.hunks)
    if tokens <= room:
        return [Part(section.path, header, whole, True, tokens)]
    header_tokens = estimate_span(diff, section.start, section.header_end)
    left = room - header_tokens
    if left <= _HEADER_ALLOWANCE:
        return ChunkRefusal(
            CHUNK_TOO_LARGE, f"{section.path}: its header alone exceeds the budget", section.path
        )
    pieces: list[tuple[Piece, int]] = []
    for start, end in section.hunks:
        split = _split_hunk(diff, start, end, left, section.path)
        if isinstance(split, ChunkRefusal):
            return split
        pieces.extend(split)
    parts: list[Part] = []
    group: list[Piece] = []
    used = 0
    for piece, cost in pieces:
        if group and used + cost > left:
            parts.append(Part(section.path, header, tuple(group), False, header_tokens + used))
            group, used = [], 0
        group.append(piece)
        used += cost
    parts.append(Part(section.path, header, tuple(group), False, header_tokens + used))
    return parts


def plan_chunks(diff: Text, budget: int) -> ChunkPlan | ChunkRefusal:
    """``diff`` cut into chunks of at most ``budget`` estimated tokens each (see the
    module doc); one chunk when it fits whole. Raises DiffError on an unreadable diff."""
    files = list(sections(diff))
    total = estimate_span(diff)
    paths = tuple(dict.fromkeys(section.path for section in files))
    if total <= budget:
        only = Chunk(0, tuple(_whole(diff, s) for s in files), total, ()) if files else None
        return ChunkPlan((only,) if only else (), budget, total)
    listing = estimate_tokens("".join(f"- {path}\n" for path in paths))
    room = budget - listing
    if room <= 2 * _HEADER_ALLOWANCE:
        return ChunkRefusal(
            BUDGET_TOO_SMALL,
            f"the list of the diff's {len(paths)} files alone takes {listing} of {budget} tokens",
        )
    groups: list[list[Part]] = [[]]
    used = 0
    for section in files:
        parts = _file_parts(diff, section, room)
        if isinstance(parts, ChunkRefusal):
            return parts
        for part in parts:
            if groups[-1] and used + part.tokens > room:
                groups.append([])
                used = 0
            groups[-1].append(part)
            used += part.tokens
    chunks = []
    for index, group in enumerate(groups):
        own = {part.path for part in group}
        others = tuple(path for path in paths if path not in own)
        tokens = listing + sum(part.tokens for part in group)
        chunks.append(Chunk(index, tuple(group), tokens, others))
    return ChunkPlan(tuple(chunks), budget, total)


def _whole(diff: Text, section: _Section) -> Part:
    header = Piece(section.start, section.header_end)
    pieces = tuple(Piece(start, end) for start, end in section.hunks)
    return Part(section.path, header, pieces, True, estimate_span(diff, section.start, section.end))


def plan_within(diff: Text, limit: Limit, overhead: int) -> ChunkPlan:
    """``diff``'s chunks under ``limit`` less ``overhead`` (the prompt without a diff);
    KdevError with the planner's reason when it cannot be cut (never a truncation)."""
    plan = plan_chunks(diff, limit.tokens - overhead)
    if isinstance(plan, ChunkRefusal):
        raise limit_error(plan, limit, overhead)
    return plan


def limit_error(refusal: Refusal, limit: Limit, overhead: int) -> KdevError:
    """``refusal`` of a prompt under ``limit`` as the KdevError the round fails with,
    naming the limit, its source and the prompt's ``overhead`` without a diff."""
    return KdevError(
        f"{refusal.WHAT}: {refusal.detail} ({limit.tokens}-token limit, {limit.source}; "
        f"{overhead} tokens of prompt without the diff)",
        refusal.reason,
    )
