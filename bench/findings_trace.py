"""Cut the findings bench's trace from a git history (``bench/data/findings_trace.json``).

``python -m bench.findings_trace GIT_DIR --since REV [--upto REV] --commits N [--out FILE]``
walks the history of ``GIT_DIR`` (a work tree or a bare mirror) from ``--since`` (not
included) to ``--upto`` (default HEAD) in ``git rev-list --topo-order --reverse`` order,
and takes the first ``N`` non-merge commits that change text files. Each commit is one
case, one PR round: base = the parent, head = the commit. For every file the commit
adds or modifies, the case keeps an *excerpt*: the lines from :data:`MARGIN` lines before
the first changed line to :data:`MARGIN` lines after the last one, cut the same way from
the parent's and the commit's version (the lines cut off are equal on both sides, so the
diff of the excerpts has the commit's hunks, shifted). A case is dropped (and named on
stderr) when a file is deleted, renamed, binary or not UTF-8, when it touches more than
:data:`MAX_FILES` files, when an excerpt exceeds :data:`MAX_EXCERPT` bytes, or when it
names a path outside the repository (``tests/test_self_contained.py`` holds every
tracked file to that).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.test_self_contained import NOT_OURS, OUTSIDE

MARGIN = 12  # unchanged lines kept on each side of the changed region
MAX_FILES = 4
MAX_EXCERPT = 4096  # bytes, per file side
DEFAULT_OUT = Path(__file__).resolve().parent / "data" / "findings_trace.json"


class Dropped(Exception):
    """The commit cannot be a case; the message says why."""


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout


def excerpt(before: str, after: str) -> tuple[str, str, int]:
    """``before`` and ``after`` cut to the changed region and :data:`MARGIN` lines
    around it; also returns how many leading lines were cut."""
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    prefix = 0
    while prefix < min(len(old), len(new)) and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while (
        suffix < min(len(old), len(new)) - prefix
        and old[len(old) - 1 - suffix] == new[len(new) - 1 - suffix]
    ):
        suffix += 1
    start = max(0, prefix - MARGIN)
    tail = max(0, suffix - MARGIN)
    return "".join(old[start : len(old) - tail]), "".join(new[start : len(new) - tail]), start


def _blob(repo: Path, rev: str, path: str) -> str:
    data = subprocess.run(
        ["git", "-C", str(repo), "show", f"{rev}:{path}"], capture_output=True, check=True
    ).stdout
    if b"\0" in data:
        raise Dropped(f"{path} is binary")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise Dropped(f"{path} is not UTF-8") from None


def case_of(repo: Path, sha: str) -> dict[str, Any]:
    """One case: the commit's touched files, each as an excerpt before and after."""
    status = git(repo, "diff-tree", "-r", "--no-commit-id", "--name-status", "-M", f"{sha}^", sha)
    changes = [line.split("\t") for line in status.splitlines() if line]
    if not changes:
        raise Dropped("no file changed")
    if len(changes) > MAX_FILES:
        raise Dropped(f"{len(changes)} files")
    files: dict[str, dict[str, Any]] = {}
    for kind, *paths in changes:
        path = paths[-1]
        if kind not in ("A", "M"):
            raise Dropped(f"{path}: status {kind}")
        before = _blob(repo, f"{sha}^", path) if kind == "M" else ""
        old, new, cut = excerpt(before, _blob(repo, sha, path))
        if max(len(old.encode()), len(new.encode())) > MAX_EXCERPT:
            raise Dropped(f"{path}: excerpt over {MAX_EXCERPT} bytes")
        if any(OUTSIDE.search(NOT_OURS.sub("", line)) for line in (old + new).splitlines()):
            raise Dropped(f"{path}: names a path outside the repository")
        if old == new:
            raise Dropped(f"{path}: no text change")
        files[path] = {"before": old if kind == "M" else None, "after": new, "cut_lines": cut}
    subject = git(repo, "log", "-1", "--format=%s", sha).strip()
    return {"commit": sha, "parent": git(repo, "rev-parse", f"{sha}^").strip(),
            "subject": subject, "files": files}  # fmt: skip


def cut(repo: Path, since: str, upto: str, commits: int) -> tuple[dict[str, Any], list[str]]:
    """The trace of the first ``commits`` usable commits after ``since``, and the
    dropped ones (``sha: reason``)."""
    shas = git(
        repo, "rev-list", "--topo-order", "--no-merges", "--reverse", f"{since}..{upto}"
    ).split()
    cases: list[dict[str, Any]] = []
    dropped: list[str] = []
    for sha in shas:
        if len(cases) == commits:
            break
        try:
            cases.append(case_of(repo, sha))
        except Dropped as exc:
            dropped.append(f"{sha}: {exc}")
    trace = {
        "trace": "findings",
        "since": git(repo, "rev-parse", since).strip(),
        "upto": git(repo, "rev-parse", upto).strip(),
        "margin": MARGIN,
        "max_excerpt": MAX_EXCERPT,
        "dropped": dropped,
        "cases": cases,
    }
    return trace, dropped


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.findings_trace", description=__doc__)
    parser.add_argument("git_dir", type=Path, help="a git work tree or bare mirror")
    parser.add_argument("--since", required=True, help="start after this commit")
    parser.add_argument("--upto", default="HEAD", help="up to this commit (HEAD)")
    parser.add_argument("--commits", type=int, default=20, help="cases to take (20)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    options = parser.parse_args(argv)
    trace, dropped = cut(options.git_dir, options.since, options.upto, options.commits)
    for line in dropped:
        print(f"dropped {line}", file=sys.stderr)
    options.out.write_text(json.dumps(trace, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(trace['cases'])} cases, {len(dropped)} dropped -> {options.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
