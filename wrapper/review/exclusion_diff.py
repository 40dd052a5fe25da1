"""Where exclusions meet the diff and the patch-id (issue 28, D87). Pure: no git here.

- :func:`reviewed_diff`: what the reviewer reads, the diff without every excluded file.
- :func:`patch_id_diff`: what the patch-id is computed over (D3 otherwise unchanged):
  the diff without the files excluded by a **trusted** rule (:data:`TRUSTED_RULES`),
  the rules that only the base branch or the operator decide (the base tree's
  ``linguist-generated``/``linguist-vendored``, kdev.yaml's and the base tree's
  ``exclude``). A push that changes only such files keeps the patch-id, so the verdict
  carries forward (D3's head index), as GitHub collapses those files too. A file the
  PR itself can steer into an exclusion (a lockfile, a vendored path, a minified
  name, a generated marker, a binary) still counts: a push that touches only one
  gets a new patch-id and a new round, whose verdict lists it as excluded. A lockfile
  bump is a supply-chain change; a ``// @generated`` line costs an attacker nothing.
- :func:`exclusion_patch_id`: the patch-id of :func:`patch_id_diff`, given git's
  ``patch-id`` as a function (``Git.patch_id``).

Each file's block is read by :func:`wrapper.review.anchoring.parse_diff`; a file of the
diff with no decision, or a decision with no file, is ``KdevError``
``exclusions_mismatch`` (the decisions were made for another diff): never a guess.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from wrapper.errors import KdevError
from wrapper.review.anchoring import parse_diff
from wrapper.review.exclusions import (
    RULE_CONFIG,
    RULE_LINGUIST_GENERATED,
    RULE_LINGUIST_VENDORED,
    Decision,
)

TRUSTED_RULES = frozenset({RULE_LINGUIST_GENERATED, RULE_LINGUIST_VENDORED, RULE_CONFIG})
MISMATCH = "exclusions_mismatch"


def file_spans(diff: bytes) -> Iterator[tuple[str, int, int]]:
    """``(path, start, end)`` for each file of ``git diff`` output, in order: the path as
    :func:`parse_diff` names it from the block's header (lines end at ``\\n`` only: a
    ``\\r`` inside a line never starts a file), the block as ``diff[start:end]``. Only
    the header is parsed and nothing is copied: a 50 MB file's lines held as a list, and
    its block copied, were a review's peak memory (D94)."""
    start = 0
    while start < len(diff):
        end = diff.find(b"\ndiff --git ", start)
        end = len(diff) if end < 0 else end + 1
        hunks = diff.find(b"\n@@ ", start, end)
        header = diff[start : end if hunks < 0 else hunks + 1]
        (path,) = parse_diff(header.decode("utf-8", "replace"))
        yield path, start, end
        start = end


def file_blocks(diff: bytes) -> Iterator[tuple[str, bytes]]:
    """``(path, block)`` for each file of ``git diff`` output (:func:`file_spans`), the
    block with its header, byte for byte."""
    for path, start, end in file_spans(diff):
        yield path, diff[start:end]


def _kept(diff: bytes, decisions: Iterable[Decision], drop: Callable[[Decision], bool]) -> bytes:
    by_path = {decision.path: decision for decision in decisions}
    seen: set[str] = set()
    view = memoryview(diff)
    kept: list[memoryview] = []
    for path, start, end in file_spans(diff):
        decision = by_path.get(path)
        if decision is None:
            raise KdevError(f"the diff's file {path!r} has no exclusion decision", MISMATCH)
        seen.add(path)
        if not drop(decision):
            kept.append(view[start:end])
    missing = sorted(set(by_path) - seen)
    if missing:
        raise KdevError(f"decided paths not in the diff: {', '.join(missing[:5])}", MISMATCH)
    if sum(len(part) for part in kept) == len(diff):
        return diff  # nothing dropped: the diff itself, not a copy
    return b"".join(kept)


def reviewed_diff(diff: bytes, decisions: Iterable[Decision]) -> bytes:
    """``diff`` with only the reviewed files: what the reviewer is given."""
    return _kept(diff, decisions, lambda d: not d.reviewed)


def patch_id_diff(diff: bytes, decisions: Iterable[Decision]) -> bytes:
    """``diff`` without the files a trusted rule excluded: what the patch-id covers
    (``diff`` itself, byte for byte, when no trusted rule excluded anything)."""
    return _kept(diff, decisions, lambda d: d.rule in TRUSTED_RULES)


def exclusion_patch_id(
    diff: bytes, decisions: Iterable[Decision], patch_id: Callable[[bytes], str | None]
) -> str | None:
    """The patch-id of :func:`patch_id_diff` (None when nothing is left in it: every
    change is in files the base or the operator excluded)."""
    return patch_id(patch_id_diff(diff, decisions))
