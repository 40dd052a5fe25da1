"""Where a review comment may be anchored in a pull request's diff, and GitHub's 422 words
when it may not (issue 27). Pure: it reads the text of ``git diff -U3`` for one file.

A comment's ``line`` is a line of the file on ``side`` (RIGHT: the commit's side, added
and context lines; LEFT: the merge base's side, deleted and context lines) that a hunk of
the diff shows; ``start_line``/``start_side`` open a multi-line range, which must stay in
the hunk of ``line`` and come before it. ``position`` (closing down) counts "lines down
from the first @@ hunk header" of the file, "the line just below the @@ line is position
1", continuing "through lines of whitespace and additional hunks" (GitHub's OpenAPI
description, ``pulls/create-review``, github/rest-api-description).

The refusal strings are not documented by GitHub; they are the ones reported, in the
create-review form (strings in ``errors``, one thread's messages joined as a sentence):
"Pull request review thread line must be part of the diff, Pull request review thread
start line must be part of the same hunk as the line., and Pull request review thread
diff hunk can't be blank" (parkerbxyz/suggest-changes#28, #48, #64), "... line must be
part of the diff and Pull request review thread diff hunk can't be blank"
(The-PR-Agent/pr-agent#592), "Pull request review thread start line must precede the end
line." (ubuntu/WSL#244), "Pull request review thread path is invalid"
(bufbuild/buf-breaking-action#76).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

LINE_NOT_IN_DIFF = "Pull request review thread line must be part of the diff"
START_NOT_IN_HUNK = (
    "Pull request review thread start line must be part of the same hunk as the line."
)
START_NOT_BEFORE = "Pull request review thread start line must precede the end line."
HUNK_BLANK = "Pull request review thread diff hunk can't be blank"
PATH_INVALID = "Pull request review thread path is invalid"
SIDES = ("RIGHT", "LEFT")

_HEADER = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


@dataclass(frozen=True)
class Spot:
    """One line of the diff: its position (1 = the line under the first header) and hunk."""

    position: int
    hunk: int


@dataclass
class FileDiff:
    """The hunks of one file's diff: which (side, line) each diff line shows."""

    spots: dict[tuple[str, int], Spot] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)  # from the first header on (index = position)
    at_position: dict[int, tuple[str, int]] = field(default_factory=dict)
    hunk_starts: list[int] = field(default_factory=list)  # position of each hunk's header

    @classmethod
    def parse(cls, text: str) -> FileDiff | None:
        """The diff of one file (``git diff`` output); None when it has no hunk."""
        made = cls()
        old = new = 0
        for raw in text.splitlines():
            header = _HEADER.match(raw)
            if header is None and not made.lines:
                continue  # the ``diff --git``/``index``/``---``/``+++`` preamble
            position = len(made.lines)
            made.lines.append(raw)
            if header is not None:
                old, new = int(header[1]), int(header[2])
                made.hunk_starts.append(position)
                continue
            hunk = len(made.hunk_starts) - 1
            if raw.startswith("-"):
                made._mark(("LEFT", old), position, hunk)
                old += 1
            elif raw.startswith("+"):
                made._mark(("RIGHT", new), position, hunk)
                new += 1
            elif raw.startswith(" "):
                made._mark(("LEFT", old), position, hunk, primary=False)
                made._mark(("RIGHT", new), position, hunk)
                old, new = old + 1, new + 1
        return made if made.lines else None

    def _mark(self, key: tuple[str, int], position: int, hunk: int, primary: bool = True) -> None:
        self.spots[key] = Spot(position, hunk)
        if primary:
            self.at_position[position] = key

    def hunk_text(self, position: int) -> str:
        """GitHub's ``diff_hunk``: the hunk's header down to the commented line."""
        start = max(s for s in self.hunk_starts if s <= position)
        return "\n".join(self.lines[start : position + 1])


@dataclass(frozen=True)
class Anchored:
    """A comment's place once it passed :func:`anchor`."""

    line: int
    side: str
    start_line: int | None
    start_side: str | None
    position: int
    diff_hunk: str


def sentence(parts: list[str]) -> str:
    """Rails' ``to_sentence``, as GitHub joins one thread's messages."""
    if len(parts) <= 2:
        return " and ".join(parts)
    return ", ".join(parts[:-1]) + ", and " + parts[-1]


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def anchor(diff: FileDiff | None, comment: Mapping[str, Any]) -> Anchored | list[str]:
    """Where ``comment`` (``line``/``side``/``start_line``/``start_side`` or ``position``)
    sits in ``diff`` (None: the path is not in the diff), or the messages refusing it."""
    if diff is None:
        return [PATH_INVALID]
    line, side = _int_or_none(comment.get("line")), comment.get("side") or "RIGHT"
    position = _int_or_none(comment.get("position"))
    if line is None and position is not None:
        found = diff.at_position.get(position)
        if found is None:
            return [HUNK_BLANK]
        side, line = found
    if line is None:
        return [HUNK_BLANK]
    start_line = _int_or_none(comment.get("start_line"))
    start_side = (comment.get("start_side") or side) if start_line is not None else None
    if start_line is not None and start_side == side and start_line >= line:
        return [START_NOT_BEFORE]
    end = diff.spots.get((side, line)) if side in SIDES else None
    start = None
    if start_line is not None and start_side in SIDES:
        start = diff.spots.get((str(start_side), start_line))
    if start is not None and end is not None and start.position >= end.position:
        return [START_NOT_BEFORE]
    problems = [] if end is not None else [LINE_NOT_IN_DIFF]
    if start_line is not None and (start is None or end is None or start.hunk != end.hunk):
        problems.append(START_NOT_IN_HUNK)
    if end is None:
        problems.append(HUNK_BLANK)
    if problems:
        return problems
    assert end is not None
    return Anchored(
        line, str(side), start_line, start_side, end.position, diff.hunk_text(end.position)
    )
