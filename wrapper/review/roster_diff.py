"""Pure helpers of roster mode: a diff split per file (each reviewer sees the files it
won), and whether a reviewer's output has a finding that blocks the merge."""

from __future__ import annotations

import re


def _diff_path(block: list[str]) -> str | None:
    for line in block:
        if line.startswith("+++ b/"):
            return line[6:]
    for line in block:
        if line.startswith("--- a/"):
            return line[6:]
    rest = block[0][len("diff --git ") :]
    half = (len(rest) - 5) // 2
    if rest.startswith("a/") and rest[2 + half : 5 + half] == " b/":
        return rest[5 + half :]
    return None


def split_diff(diff: str) -> dict[str, str]:
    """``git diff`` output split per file: path (the new path; the old one for a
    deletion) -> that file's whole block, header included, in diff order."""
    blocks: list[list[str]] = []
    for line in diff.splitlines(keepends=True):
        if line.startswith("diff --git ") or not blocks:
            blocks.append([])
        blocks[-1].append(line)
    result: dict[str, str] = {}
    for block in blocks:
        if not block[0].startswith("diff --git "):
            continue
        path = _diff_path([line.rstrip("\n") for line in block])
        if path is not None:
            result[path] = "".join(block)
    return result


_SEVERE = re.compile(
    r"^\s*(?:[-*+]\s+|\d+[.)]\s+)?(?:\[P[12]\]|\*\*P[12]\*\*|P[12]\b)"
    r"|^\s*VERDICT:\s*REQUEST_CHANGES\s*$",
    re.MULTILINE,
)


def has_blocking_finding(output: str) -> bool:
    """True when a reviewer's ``output`` has a P1/P2 finding or asks for changes.

    A finding is a line that starts (after optional whitespace and a list marker such as
    ``-``, ``*`` or ``1.``) with ``P1``/``P2`` as a word, ``[P1]``/``[P2]`` or
    ``**P1**``/``**P2**``; or the reviewer's own ``VERDICT: REQUEST_CHANGES`` line.
    A ``P1`` in the middle of a sentence is not a finding.
    """
    return _SEVERE.search(output) is not None
