"""Where a finding can stand on the pull request: checked against the diff it reviewed,
the way GitHub will check it (issue 27; docs/decisions.md D84). Pure: no I/O.

:func:`parse_diff` reads a unified diff as ``git diff`` writes it (several files,
renames and copies, new and deleted files, mode changes, binary files, quoted paths,
``\\ No newline at end of file``, hunks with a zero-length side) into one
:class:`FileDiff` per file, each with its hunks. A hunk's head-side (GitHub's ``RIGHT``)
lines are its new range ``+start,count``: its added and context lines, contiguous.
Anything else is :class:`DiffError` (``diff_unparseable``): a diff kdev cannot read is
never guessed at.

:func:`place` decides, for one finding, what GitHub accepts:

- a line comment (``line``) only on a head-side line inside a hunk;
- a multi-line comment (``range``) only when ``start_line`` and ``line`` are in one
  hunk (so every line between is a head-side line of it);
- a ```` ```suggestion ```` only where a line or range comment stands and every line of
  its range is a head-side line of that one hunk;
- otherwise the review's summary (``summary``), with a reason code and its
  ``path:line``: a finding is never dropped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from wrapper.errors import KdevError
from wrapper.review.findings_contract import Finding

DIFF_UNPARSEABLE = "diff_unparseable"

# Reasons a finding stands in the summary (besides Finding.problem's).
NOT_IN_DIFF = "not_in_diff"
FILE_DELETED = "file_deleted"
BINARY_FILE = "binary_file"
NO_HUNKS = "no_hunks"
OUTSIDE_HUNKS = "outside_hunks"
RANGE_ACROSS_HUNKS = "range_across_hunks"

Kind = Literal["line", "range", "summary"]
Status = Literal["added", "deleted", "modified", "renamed", "copied"]

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(?: .*)?$")
_HEADERS = (
    "old mode ",
    "new mode ",
    "deleted file mode ",
    "new file mode ",
    "copy from ",
    "copy to ",
    "rename from ",
    "rename to ",
    "similarity index ",
    "dissimilarity index ",
    "index ",
)
_ESCAPES = {
    "a": 7,
    "b": 8,
    "t": 9,
    "n": 10,
    "v": 11,
    "f": 12,
    "r": 13,
    '"': 34,
    "\\": 92,
}


class DiffError(KdevError):
    """A diff kdev cannot read (reason ``diff_unparseable``)."""

    def __init__(self, line: int, problem: str) -> None:
        super().__init__(f"diff line {line}: {problem}", DIFF_UNPARSEABLE)


@dataclass(frozen=True)
class Hunk:
    """One hunk: its old and new ranges, and the head-side numbers of its added lines."""

    old_start: int
    old_count: int
    new_start: int
    new_count: int
    added: frozenset[int] = frozenset()

    @property
    def right_lines(self) -> range:
        """The head-side lines GitHub shows in this hunk (added and context)."""
        return range(self.new_start, self.new_start + self.new_count)

    def covers(self, line: int) -> bool:
        return self.new_count > 0 and self.new_start <= line < self.new_start + self.new_count


@dataclass(frozen=True)
class FileDiff:
    """One file of a diff. ``path`` is the head's path (a deleted file's: the base's)."""

    path: str
    old_path: str | None  # None for a new file
    status: Status
    binary: bool = False
    hunks: tuple[Hunk, ...] = ()

    def hunk_of(self, line: int) -> Hunk | None:
        return next((hunk for hunk in self.hunks if hunk.covers(line)), None)

    @property
    def right_lines(self) -> frozenset[int]:
        return frozenset(n for hunk in self.hunks for n in hunk.right_lines)


@dataclass(frozen=True)
class Placement:
    """Where ``finding`` stands: ``kind`` line/range (inline, with ``suggestion`` when
    its replacement may be one) or summary (``reason`` says why, ``detail`` in words)."""

    finding: Finding
    kind: Kind
    suggestion: bool = False
    reason: str | None = None
    detail: str = ""

    @property
    def inline(self) -> bool:
        return self.kind != "summary"


def place_all(findings: Iterable[Finding], files: dict[str, FileDiff]) -> tuple[Placement, ...]:
    """:func:`place` for each finding, in order."""
    return tuple(place(finding, files) for finding in findings)


def place(finding: Finding, files: dict[str, FileDiff]) -> Placement:
    """Where GitHub will accept ``finding`` on the diff ``files`` (see the module doc)."""
    if finding.problem is not None:
        return Placement(finding, "summary", reason=finding.problem, detail=finding.problem_detail)
    diff = files.get(finding.path)
    refused = _file_refusal(diff)
    if refused is not None:
        return Placement(finding, "summary", reason=refused[0], detail=refused[1])
    assert diff is not None
    hunk = diff.hunk_of(finding.line)
    if hunk is None:
        detail = f"line {finding.line} is outside the diff's hunks"
        return Placement(finding, "summary", reason=OUTSIDE_HUNKS, detail=detail)
    if finding.start_line is None:
        return Placement(finding, "line", suggestion=_suggestion(finding, hunk))
    if not hunk.covers(finding.start_line):
        detail = f"lines {finding.start_line}-{finding.line} are not within one hunk"
        return Placement(finding, "summary", reason=RANGE_ACROSS_HUNKS, detail=detail)
    return Placement(finding, "range", suggestion=_suggestion(finding, hunk))


def _file_refusal(diff: FileDiff | None) -> tuple[str, str] | None:
    if diff is None:
        return NOT_IN_DIFF, "the file is not in the diff"
    if diff.status == "deleted":
        return FILE_DELETED, "the pull request deletes the file"
    if diff.binary:
        return BINARY_FILE, "the diff shows the file as binary"
    if not any(hunk.new_count for hunk in diff.hunks):
        return NO_HUNKS, "the diff shows no head-side line of the file"
    return None


def _suggestion(finding: Finding, hunk: Hunk) -> bool:
    """A suggestion only replaces head-side lines of one hunk, every one of them."""
    if finding.replacement is None:
        return False
    first = finding.line if finding.start_line is None else finding.start_line
    return all(hunk.covers(n) for n in range(first, finding.line + 1))


# --- the diff ---------------------------------------------------------------------------


def parse_diff(text: str) -> dict[str, FileDiff]:
    """Every file of the unified diff ``text``, by its head path (a deleted file by its
    base path, unless the head has a file of that name too). Raises DiffError."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    files: dict[str, FileDiff] = {}
    index = 0
    while index < len(lines):
        if not lines[index].startswith("diff --git "):
            raise DiffError(index + 1, "expected a 'diff --git' header")
        diff, index = _file(lines, index)
        if diff.path not in files or files[diff.path].status == "deleted":
            files[diff.path] = diff
    return files


@dataclass
class _Header:
    old: str | None = None
    new: str | None = None
    status: Status = "modified"
    binary: bool = False


def _file(lines: Sequence[str], start: int) -> tuple[FileDiff, int]:
    header = _Header()
    index = _extended_headers(lines, start + 1, header)
    if index < len(lines) and lines[index].startswith("Binary files "):
        header.binary, index = True, index + 1
    elif index < len(lines) and lines[index] == "GIT binary patch":
        header.binary = True
        while index < len(lines) and not lines[index].startswith("diff --git "):
            index += 1
    elif index < len(lines) and lines[index].startswith("--- "):
        index = _old_new_lines(lines, index, header)
    hunks: list[Hunk] = []
    while index < len(lines) and lines[index].startswith("@@"):
        hunk, index = _hunk(lines, index)
        hunks.append(hunk)
    if index < len(lines) and not lines[index].startswith("diff --git "):
        raise DiffError(index + 1, "unexpected line after the file's hunks")
    if hunks and header.new is None and header.old is None:
        raise DiffError(start + 1, "hunks without '---' and '+++' lines")
    old, new = _paths(lines[start], header, start + 1)
    path = new if new is not None else old
    assert path is not None
    return FileDiff(path, old, header.status, header.binary, tuple(hunks)), index


def _extended_headers(lines: Sequence[str], index: int, header: _Header) -> int:
    while index < len(lines):
        line = lines[index]
        prefix = next((p for p in _HEADERS if line.startswith(p)), None)
        if prefix is None:
            return index
        value = line[len(prefix) :]
        if prefix == "new file mode ":
            header.status = "added"
        elif prefix == "deleted file mode ":
            header.status = "deleted"
        elif prefix in ("rename from ", "copy from "):
            header.old = _unquote(value, index + 1)
        elif prefix in ("rename to ", "copy to "):
            header.new = _unquote(value, index + 1)
            header.status = "renamed" if prefix == "rename to " else "copied"
        index += 1
    return index


def _old_new_lines(lines: Sequence[str], index: int, header: _Header) -> int:
    if index + 1 >= len(lines) or not lines[index + 1].startswith("+++ "):
        raise DiffError(index + 2, "a '---' line without its '+++' line")
    old = _side_path(lines[index][4:], "a/", index + 1)
    new = _side_path(lines[index + 1][4:], "b/", index + 2)
    header.old = old if old is not None else header.old
    header.new = new if new is not None else header.new
    if old is None and new is None:
        raise DiffError(index + 1, "both sides are /dev/null")
    return index + 2


def _side_path(value: str, prefix: str, number: int) -> str | None:
    # git ends the name with a tab when it holds a space.
    value = value.removesuffix("\t")
    if value == "/dev/null":
        return None
    name = _unquote(value, number)
    if not name.startswith(prefix):
        raise DiffError(number, f"a path without the '{prefix}' prefix")
    return name[len(prefix) :]


def _paths(line: str, header: _Header, number: int) -> tuple[str | None, str | None]:
    """The file's base and head paths (None: it has none on that side)."""
    old, new = header.old, header.new
    if old is None and new is None:
        old = new = _header_path(line[len("diff --git ") :], number)
    if header.status == "added":
        return None, new if new is not None else old
    if header.status == "deleted":
        return old if old is not None else new, None
    return (old if old is not None else new), (new if new is not None else old)


def _header_path(rest: str, number: int) -> str:
    """The one path of a ``diff --git a/P b/P`` line (no rename: both sides are P)."""
    if rest.startswith('"'):
        first, tail = _quoted(rest, number)
        second = _unquote(tail[1:], number) if tail.startswith(" ") else ""
    else:
        half = (len(rest) - 1) // 2
        first, second = rest[:half], rest[half + 1 :]
        if rest[half : half + 1] != " ":
            first = second = ""
    if not (first.startswith("a/") and second.startswith("b/") and first[2:] == second[2:]):
        raise DiffError(number, "cannot read the path of the 'diff --git' line")
    return first[2:]


def _unquote(value: str, number: int) -> str:
    """A path as git writes it: as is, or C-quoted (``"a/\\303\\251.txt"``)."""
    if not value.startswith('"'):
        return value
    name, tail = _quoted(value, number)
    if tail:
        raise DiffError(number, "text after a quoted path")
    return name


def _quoted(value: str, number: int) -> tuple[str, str]:
    """The C-quoted string that opens ``value``, and what follows its closing quote."""
    out = bytearray()
    index = 1
    while index < len(value):
        char = value[index]
        if char == '"':
            return out.decode("utf-8", errors="replace"), value[index + 1 :]
        if char != "\\":
            out += char.encode("utf-8")
            index += 1
            continue
        escape = value[index + 1 : index + 2]
        if escape in _ESCAPES:
            out.append(_ESCAPES[escape])
            index += 2
        elif re.fullmatch(r"[0-3][0-7]{2}", value[index + 1 : index + 4]):
            out.append(int(value[index + 1 : index + 4], 8))
            index += 4
        else:
            raise DiffError(number, "a bad escape in a quoted path")
    raise DiffError(number, "a quoted path without its closing quote")


def _hunk(lines: Sequence[str], index: int) -> tuple[Hunk, int]:
    found = _HUNK.match(lines[index])
    if found is None:
        raise DiffError(index + 1, "a malformed hunk header")
    old_start, new_start = int(found.group(1)), int(found.group(3))
    old_count = 1 if found.group(2) is None else int(found.group(2))
    new_count = 1 if found.group(4) is None else int(found.group(4))
    old_left, new_left, number = old_count, new_count, new_start
    added: set[int] = set()
    index += 1
    while old_left > 0 or new_left > 0:
        if index >= len(lines):
            raise DiffError(index, "the diff ends inside a hunk")
        line = lines[index]
        sign = line[:1]
        if sign in (" ", "") and old_left > 0 and new_left > 0:
            old_left, new_left, number = old_left - 1, new_left - 1, number + 1
        elif sign == "+" and new_left > 0:
            added.add(number)
            new_left, number = new_left - 1, number + 1
        elif sign == "-" and old_left > 0:
            old_left -= 1
        elif sign != "\\":
            raise DiffError(index + 1, "a hunk's lines do not match its header's counts")
        index += 1
    if index < len(lines) and lines[index].startswith("\\"):
        index += 1  # "\ No newline at end of file" after the hunk's last line
    return Hunk(old_start, old_count, new_start, new_count, frozenset(added)), index
