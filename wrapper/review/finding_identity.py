"""Which finding is which across rounds (issue 28, incremental rounds; docs/decisions.md
D91). Pure: no I/O.

A finding's **fingerprint** is what it says about which code: its path, its title
normalised (case folded, whitespace collapsed) and the text of the head lines it is
anchored to (``start_line``..``line``; the one line when there is no range), each
without its trailing whitespace and otherwise exact: code is case-sensitive, and
indentation is meaning in Python, YAML or a Makefile (as for the patch-id, D3). The
line *number* is left out, so a finding on code that moved (lines added above it, a
rebase, a base merged in) keeps its fingerprint, and a reviewer repeating it is
recognised; code whose text changed is a new fingerprint (the finding may be fixed, and
the same problem found on the new text is a new finding). The fingerprint is versioned
(``fp1:``) so a later scheme never matches an older one by accident.

:func:`locate` finds where recorded anchored lines are at a new head: the same
normalised sequence of lines, nearest the old line when it occurs more than once.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

SCHEME = "fp1"
MAX_ANCHOR_LINES = 50  # a range longer than this is fingerprinted by its first 50 lines
_SPACE = re.compile(r"\s+")


def normalise(text: str) -> str:
    """A title: case folded, each whitespace run one space, stripped."""
    return _SPACE.sub(" ", text).strip().casefold()


def code_line(text: str) -> str:
    """A code line as the fingerprint reads it: without trailing whitespace (or CR)."""
    return text.rstrip()


def anchored_lines(lines: Sequence[str] | None, line: int, start_line: int | None) -> list[str]:
    """The head lines ``start_line``..``line`` (1-based) of a file's
    ``lines``; empty when the file or the lines are not there (a finding in the summary
    with ``unknown_path`` or ``line_past_end``)."""
    if lines is None:
        return []
    first = start_line if start_line is not None else line
    if first < 1 or line > len(lines):
        return []
    last = min(line, first + MAX_ANCHOR_LINES - 1)
    return [code_line(text) for text in lines[first - 1 : last]]


def fingerprint(path: str, title: str, anchored: Sequence[str]) -> str:
    """The finding's fingerprint (see the module doc): ``fp1:`` and 32 hex digits."""
    digest = hashlib.sha256()
    for part in (SCHEME, path, normalise(title), *anchored):
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return f"{SCHEME}:{digest.hexdigest()[:32]}"


def locate(anchored: Sequence[str], lines: Sequence[str] | None, near: int) -> int | None:
    """The line number where ``anchored`` (normalised lines) ends in ``lines`` (a head
    file's lines), nearest ``near`` (its old last line); None when the file is gone, the
    sequence is empty or the head no longer has it (its code changed)."""
    if lines is None or not anchored:
        return None
    size = len(anchored)
    normal = [code_line(text) for text in lines]
    ends = [
        start + size
        for start in range(len(normal) - size + 1)
        if normal[start : start + size] == list(anchored)
    ]
    if not ends:
        return None
    return min(ends, key=lambda end: (abs(end - near), end))
