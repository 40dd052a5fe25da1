"""The findings bench's scripted reviewer: a ``kdev-findings`` block at chosen places.

``python -P -m bench.findings_reviewer`` reads the prompt on stdin, reads the diff in its
``untrusted-diff`` fence with its own small parser (not kdev's anchoring), and emits for
every file of the diff, for each of its first :data:`HUNKS` hunks:

- ``changed``: a finding on the hunk's first added line;
- ``context``: one on the hunk's first unchanged (context) line, when it has one;
- ``suggestion``: the hunk's last added line with a replacement (the line with
  :data:`SUFFIX` appended), and, in the file's first hunk with four or more added lines,
  a two-line range suggestion on its second and third added lines;

and for the file as a whole ``outside``: a finding on the first head line before the
first hunk and on the first one after the last hunk (the head file is read from the
working directory, the PR's worktree, for its length), when such lines exist. For the
round it adds ``missing``: a finding on a path the head does not have. Each title starts
with ``[kind]``. The block, as emitted, is appended as one JSON line to the file named
by ``KDEV_BENCH_FINDINGS_LOG``, so the bench counts against what was asked, not against
kdev's report.
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wrapper.stub_reviewer import diff_section

HUNKS = 3
SUFFIX = "  [bench suggestion]"
LOG_ENV = "KDEV_BENCH_FINDINGS_LOG"
MISSING_PATH = "no/such/file.py"
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


@dataclass
class Hunk:
    start: int
    count: int
    added: list[tuple[int, str]] = field(default_factory=list)
    context: list[int] = field(default_factory=list)


@dataclass
class FileHunks:
    path: str
    hunks: list[Hunk] = field(default_factory=list)


def read_diff(diff: str) -> list[FileHunks]:
    """The head-side lines of each file's hunks (added lines with their text)."""
    files: list[FileHunks] = []
    line = 0
    current: Hunk | None = None
    for text in diff.splitlines():
        if text.startswith("diff --git "):
            current = None
            continue
        if current is None and text.startswith("+++ "):
            target = text[4:]
            if target != "/dev/null":
                files.append(FileHunks(target.removeprefix("b/")))
            continue
        opened = _HUNK.match(text)
        if opened is not None and files:
            count = 1 if opened.group(2) is None else int(opened.group(2))
            current = Hunk(int(opened.group(1)), count)
            files[-1].hunks.append(current)
            line = current.start
        elif current is not None and text.startswith("+"):
            current.added.append((line, text[1:]))
            line += 1
        elif current is not None and text.startswith(" "):
            current.context.append(line)
            line += 1
    return files


def _finding(kind: str, path: str, line: int, **extra: Any) -> dict[str, Any]:
    return {
        "path": path,
        "line": line,
        "start_line": None,
        "severity": "P3",
        "title": f"[{kind}] {path}:{line}",
        "body": f"Scripted {kind} finding at {path}:{line}.",
        "replacement": None,
        **extra,
    }


def _line_count(path: str) -> int:
    try:
        data = Path(path).read_bytes()
    except OSError:
        return 0
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def _outside(file: FileHunks) -> list[dict[str, Any]]:
    covered = {n for h in file.hunks for n in range(h.start, h.start + h.count)}
    ranged = [h for h in file.hunks if h.count]
    if not ranged:
        return []
    first, last = ranged[0].start, ranged[-1].start + ranged[-1].count
    before = next((n for n in range(1, first) if n not in covered), None)
    after = last if last <= _line_count(file.path) and last not in covered else None
    return [_finding("outside", file.path, n) for n in (before, after) if n is not None]


def _file_findings(file: FileHunks) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    ranged = False
    for hunk in file.hunks[:HUNKS]:
        if not hunk.added:
            continue
        found.append(_finding("changed", file.path, hunk.added[0][0]))
        if hunk.context:
            found.append(_finding("context", file.path, hunk.context[0]))
        line, text = hunk.added[-1]
        found.append(_finding("suggestion", file.path, line, replacement=text + SUFFIX + "\n"))
        if not ranged and len(hunk.added) >= 4 and _consecutive(hunk.added[1:3]):
            (first, one), (second, two) = hunk.added[1:3]
            replacement = f"{one}{SUFFIX}\n{two}{SUFFIX}\n"
            found.append(
                _finding("suggestion", file.path, second, start_line=first, replacement=replacement)
            )
            ranged = True
    return found + _outside(file)


def _consecutive(pair: list[tuple[int, str]]) -> bool:
    return pair[1][0] == pair[0][0] + 1


def findings_for(diff: str) -> list[dict[str, Any]]:
    """Every finding the scripted reviewer emits for ``diff`` (see the module doc)."""
    found = [f for file in read_diff(diff) for f in _file_findings(file)]
    return [*found, _finding("missing", MISSING_PATH, 1)]


def main() -> int:
    prompt = sys.stdin.read()
    findings = findings_for(diff_section(prompt))
    block = {"kdev_findings": 1, "summary": "Scripted findings.", "findings": findings}
    log = os.environ.get(LOG_ENV)
    if log:
        with open(log, "a", encoding="utf-8") as out:
            out.write(json.dumps(block) + "\n")
    print("\n".join(["```kdev-findings", json.dumps(block), "```", "", "VERDICT: APPROVE"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
