"""The prompt of an incremental round (issue 28; docs/decisions.md D91, D92). Pure: no I/O.

When a PR has a reviewed diff and its new diff differs, the round tells the reviewer:

1. **What changed since the last reviewed state**: a per-file diff of the two diffs
   (:func:`interdiff`). Each diff is split into its files; a file whose section is the
   same in both, once the lines that depend on where the base is are dropped (``index``
   blob lines, the numbers of ``@@`` headers), is unchanged; the others are shown as a
   unified diff of the old section against the new. Both inputs are ``base...head``
   diffs, so a rebase or a base merged in that leaves the change alone shows nothing.
2. **The earlier rounds' findings**, each with its state at the new head
   (:class:`EarlierFinding`): its lines unchanged (and where they are now) or its code
   changed (or its file gone), its thread resolved or outdated on GitHub, withdrawn by
   the validator.
3. **The current diff** (``full`` mode), or only the changed files' sections of it, their
   surroundings (``delta`` mode, D92).

:func:`build_incremental_prompt` gives the parts (the section holding 1 and 2, which the
prompt places before its closing instructions, and the diff); :func:`incremental_prompt_text`
the text a bench counts (the section, the fenced diff and the contract's closing).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from wrapper.review.anchoring import parse_diff
from wrapper.review.findings_contract import FINDINGS_INSTRUCTION
from wrapper.review.findings_earlier import EARLIER_INSTRUCTION
from wrapper.review.prompt import VERDICT_INSTRUCTION, fence

Mode = Literal["full", "delta"]
MODES: tuple[Mode, ...] = ("full", "delta")
MAX_BODY_SHOWN = 600  # an earlier finding's body, cut, in part 2

_HUNK_NUMBERS = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@")

CHANGES_NOTE = (
    "This pull request was reviewed before. What changed since the last reviewed diff, "
    "file by file (a diff of the two diffs: `-` lines were in the reviewed diff, `+` lines "
    "are in the current one):"
)
NO_CHANGES_NOTE = "No file's change differs from the reviewed diff's."
EARLIER_NOTE = (
    "The findings of the earlier rounds, each with its state at the new head (id, "
    "severity, place, state, title, then its text):"
)
DELTA_NOTE = (
    "This is a delta round: the diff above holds only the files that changed since the "
    "reviewed diff. Review those changes; the rest of the pull request was reviewed before."
)


@dataclass(frozen=True)
class EarlierFinding:
    """One earlier finding and its state at the new head. ``code``: ``unchanged`` (its
    lines are there, at ``line``), ``changed`` or ``gone`` (the file is not in the head);
    ``thread``: ``open``, ``resolved``, ``outdated`` or ``none`` (summary only);
    ``withdrawn``: the validator withdrew it."""

    id: str
    path: str
    line: int
    severity: str
    title: str
    body: str
    code: Literal["unchanged", "changed", "gone"] = "unchanged"
    thread: Literal["open", "resolved", "outdated", "none"] = "none"
    withdrawn: bool = False

    @property
    def state(self) -> str:
        """The state in words, as part 2 shows it."""
        words = {
            "unchanged": f"its lines are unchanged (now line {self.line})",
            "changed": "its code changed",
            "gone": "its file is no longer in the head",
        }[self.code]
        if self.thread in ("resolved", "outdated"):
            words += f"; its thread is {self.thread} on GitHub"
        if self.withdrawn:
            words += "; withdrawn by the validator"
        return words


@dataclass(frozen=True)
class Interdiff:
    """The per-file diff of two diffs: ``text`` (empty when nothing differs) and the
    head paths of the files whose change differs (``changed``, in the new diff's order,
    then those only the reviewed diff had)."""

    text: str
    changed: tuple[str, ...]


@dataclass(frozen=True)
class IncrementalPrompt:
    """An incremental round's prompt parts: ``section`` (parts 1 and 2, fenced, for
    before the closing), ``diff`` (part 3), ``mode`` and the interdiff."""

    section: str
    diff: str
    mode: Mode
    interdiff: Interdiff


def split_files(diff: str) -> list[tuple[str, str]]:
    """``diff`` as (head path, section) pairs in its order (DiffError when unreadable)."""
    sections: list[str] = []
    for line in diff.splitlines(keepends=True):
        if line.startswith("diff --git ") or not sections:
            sections.append(line)
        else:
            sections[-1] += line
    pairs = []
    for section in sections:
        files = parse_diff(section)
        pairs.append((next(iter(files), ""), section))
    return pairs


def _normalised(section: str) -> list[str]:
    """A file's section without what depends on the base: blob ids and hunk numbers."""
    kept = []
    for line in section.splitlines():
        if line.startswith("index "):
            continue
        kept.append(_HUNK_NUMBERS.sub("@@", line))
    return kept


def interdiff(previous: str, current: str) -> Interdiff:
    """The per-file diff of ``previous`` (the reviewed diff) and ``current``."""
    old = dict(split_files(previous))
    new = split_files(current)
    parts: list[str] = []
    changed: list[str] = []
    for path, section in [*new, *((p, "") for p in old if p not in dict(new))]:
        before, after = _normalised(old.get(path, "")), _normalised(section)
        if before == after:
            continue
        changed.append(path)
        lines = difflib.unified_diff(
            before, after, f"reviewed/{path}", f"current/{path}", n=3, lineterm=""
        )
        parts.append("\n".join(lines))
    return Interdiff("\n".join(parts), tuple(changed))


def _earlier_listing(earlier: Sequence[EarlierFinding]) -> str:
    entries = []
    for f in earlier:
        body = f.body if len(f.body) <= MAX_BODY_SHOWN else f.body[:MAX_BODY_SHOWN] + " [...]"
        indented = "\n".join(f"    {line}" for line in body.splitlines())
        entries.append(
            f"- {f.id} [{f.severity}] {f.path}:{f.line} ({f.state}): {f.title}\n{indented}"
        )
    return "\n".join(entries)


def build_incremental_prompt(
    previous_diff: str, new_diff: str, earlier: Sequence[EarlierFinding], mode: Mode
) -> IncrementalPrompt:
    """The parts of an incremental round's prompt (see the module doc). Every text from
    the PR or a reviewer is fenced as untrusted data."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r} is not full or delta")
    changes = interdiff(previous_diff, new_diff)
    parts = [CHANGES_NOTE, fence(changes.text, "changes-since-review")]
    if not changes.text:
        parts = [NO_CHANGES_NOTE]
    if earlier:
        parts += [EARLIER_NOTE, fence(_earlier_listing(earlier), "earlier-findings")]
    diff = new_diff
    if mode == "delta":
        wanted = set(changes.changed)
        diff = "".join(section for path, section in split_files(new_diff) if path in wanted)
        parts.append(DELTA_NOTE)
    return IncrementalPrompt("\n\n".join(parts) + "\n\n", diff, mode, changes)


def incremental_prompt_text(
    previous_diff: str, new_diff: str, earlier: Sequence[EarlierFinding], mode: Mode
) -> str:
    """The text an incremental round sends beside the PR's title and body: the fenced
    diff (part 3), parts 1 and 2, and the contract's closing with the report on earlier
    findings (what a bench counts; ``kdev review-pr`` renders the same parts through its
    prompt template)."""
    built = build_incremental_prompt(previous_diff, new_diff, earlier, mode)
    closing = f"{FINDINGS_INSTRUCTION}\n\n{EARLIER_INSTRUCTION}\n\n{VERDICT_INSTRUCTION}"
    return f"{fence(built.diff, 'diff')}\n\n{built.section}{closing}\n"
