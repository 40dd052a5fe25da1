"""Cut the lifecycle bench's trace from a git history (``bench/data/lifecycle_trace.json.gz``).

``python -m bench.lifecycle_trace GIT_DIR --since DATE --until DATE [--source OWNER/NAME]
[--out FILE]`` reads
the merged pull requests of ``GIT_DIR`` (a bare mirror of a GitHub repository that
merges with merge commits) and writes, per PR, one entry per push of its lifecycle with
the *shape* of the PR's diff at that push, never its text (D94: the code of a fetched
repository is not committed here).

**Lifecycles.** A merge commit ``M`` whose subject is ``Merge pull request #N from ...``
has the base at merge time as its first parent and the PR's last head as its second.
The PR's commits are ``git rev-list --first-parent M^2 --not M^1``, oldest first. Each
commit ``c`` is a head the PR had; its diff is ``git diff B...c`` with ``B =
merge-base(M^1, c)``, the newest base commit ``c`` contains (the fork point, or the base
a merge brought in), which is the diff GitHub showed for that head. Consecutive non-merge
commits committed within :data:`PUSH_GAP` seconds of each other are one push (its last
commit). A merge commit in the chain is a push of its own, kind ``base-merge`` (the base
merged into the head). A group of commits whose committer dates are more than
:data:`REBASE_GAP` after their author dates was rewritten (rebased or amended) and
force-pushed: it becomes one push per author-date group (the states before the rebase,
taken from the rewritten commits) and then a ``force-push`` of the last state.

**Shape.** Per push, each file's block of the diff: its header lines verbatim (paths,
modes, blob ids), each hunk's ``@@ -a,b +c,d @@`` verbatim, and every other line as a
reference into a table of distinct lines: the line's ASCII character count, its
non-ASCII UTF-8 byte count and an 8-hex-digit hash of its text. That is exactly what
``wrapper.review.sizing.estimate_tokens`` counts, and the hash makes equal lines equal
again when :mod:`bench.lifecycle_data` rebuilds a same-shaped diff. Per file, the
exclusion facts kdev's own :func:`wrapper.review.exclusion_facts.gather_facts` read from
git (binary, base attributes, the generated marker of the head's start, its average
line length for ``.js``/``.css``). Per push, the real diff's patch-ids (D3's and D87's,
by kdev's own code) so the bench can check the rebuilt diffs dedup the same way.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from wrapper.git import Git
from wrapper.review.exclusion_diff import exclusion_patch_id, file_blocks
from wrapper.review.exclusion_facts import gather_facts
from wrapper.review.exclusions import MINIFIABLE, decide_all, generated_marker

PUSH_GAP = 300  # seconds between commits of one push
REBASE_GAP = 3600  # committer date this much after the author date: rewritten
DEFAULT_OUT = Path(__file__).resolve().parent / "data" / "lifecycle_trace.json.gz"
_SUBJECT = re.compile(r"^Merge pull request #(\d+) from ([^/\s]+)/")
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout


class Lines:
    """The table of distinct lines: ``[ascii_chars, non_ascii_bytes, hash]`` each."""

    def __init__(self) -> None:
        self.rows: list[list[Any]] = []
        self._index: dict[bytes, int] = {}

    def ref(self, text: str) -> int:
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
        found = self._index.get(key)
        if found is not None:
            return found
        non_ascii = sum(
            len(m.group().encode("utf-8", "surrogatepass")) for m in _NON_ASCII.finditer(text)
        )
        chars = sum(m.end() - m.start() for m in _NON_ASCII.finditer(text))
        self.rows.append([len(text) - chars, non_ascii, key.hex()[:8]])
        self._index[key] = len(self.rows) - 1
        return len(self.rows) - 1


def block_shape(block: str, lines: Lines) -> dict[str, Any]:
    """One file's block as header lines and hunks of line references."""
    header: list[str] = []
    hunks: list[list[Any]] = []
    body: list[str] = []
    for line in block.split("\n")[:-1] if block.endswith("\n") else block.split("\n"):
        if line.startswith("@@ "):
            end = line.index(" @@", 3) + 3
            rest = line[end + 1 :]  # git writes one space before the function context
            body = []
            hunks.append([line[:end], lines.ref(rest) if rest else None, body])
        elif not hunks:
            header.append(line)
        elif line.startswith("\\"):
            body.append("\\")
        else:
            body.append(f"{line[:1] or ' '}{lines.ref(line[1:])}")
    return {"header": header, "hunks": [[h, c, ",".join(b)] for h, c, b in hunks]}


def commits_of(repo: Path, merge: str) -> list[tuple[str, int, int, bool]]:
    """The PR's first-parent chain, oldest first: (sha, author time, commit time, merge)."""
    out = git(
        repo,
        "log",
        "--first-parent",
        "--reverse",
        "--format=%H %at %ct %P",
        f"{merge}^2",
        "--not",
        f"{merge}^1",
    )
    chain = []
    for row in out.splitlines():
        sha, at, ct, *parents = row.split()
        chain.append((sha, int(at), int(ct), len(parents) > 1))
    return chain


def pushes_of(chain: list[tuple[str, int, int, bool]]) -> list[tuple[str, str]]:
    """The lifecycle's pushes as (head sha, kind), see the module doc."""
    groups: list[list[tuple[str, int, int, bool]]] = []
    for commit in chain:
        last = groups[-1][-1] if groups else None
        if last and not commit[3] and not last[3] and commit[2] - last[2] <= PUSH_GAP:
            groups[-1].append(commit)
        else:
            groups.append([commit])
    pushes: list[tuple[str, str]] = []
    for number, group in enumerate(groups):
        if group[0][3]:
            pushes.append((group[0][0], "base-merge"))
            continue
        rewritten = all(ct - at > REBASE_GAP for _, at, ct, _ in group)
        if not rewritten:
            pushes.append((group[-1][0], "push" if number else "open"))
            continue
        start = len(pushes)
        previous = None
        for sha, at, _ct, _merge in group:
            if previous is not None and at - previous <= PUSH_GAP and pushes[start:]:
                pushes[-1] = (sha, pushes[-1][1])
            else:
                pushes.append((sha, "push" if pushes else "open"))
            previous = at
        pushes.append((group[-1][0], "force-push"))
    return pushes


def facts_row(fact: Any) -> dict[str, Any]:
    row: dict[str, Any] = {"path": fact.path}
    if fact.binary:
        row["binary"] = True
    for name in ("linguist_generated", "linguist_vendored"):
        if getattr(fact, name) is not None:
            row[name] = getattr(fact, name)
    marker = generated_marker(fact.head_text)
    if marker:
        row["marker"] = marker
    if fact.path.endswith(MINIFIABLE) and fact.head_text:
        lines = fact.head_text.split("\n")
        if lines[-1] == "":
            lines.pop()
        if lines:
            row["avg_line"] = [sum(len(x) for x in lines), len(lines)]
    return row


def push_shape(repo: Path, gitk: Git, merge: str, head: str, lines: Lines) -> dict[str, Any]:
    base = git(repo, "merge-base", f"{merge}^1", head).strip()
    raw = gitk.diff(base, head)
    shape: dict[str, Any] = {"head": head, "files": []}
    if not raw:
        return shape
    facts = gather_facts(gitk, base, head)
    decisions = decide_all(facts)
    shape["patch_id"] = gitk.patch_id(raw)
    shape["patch_id_excl"] = exclusion_patch_id(raw, decisions, gitk.patch_id)
    by_path = {fact.path: fact for fact in facts}
    for path, block in file_blocks(raw):
        entry = block_shape(block.decode("utf-8", "replace"), lines)
        entry["facts"] = facts_row(by_path[path])
        shape["files"].append(entry)
    return shape


def cut(repo: Path, since: str, until: str, source: str = "") -> dict[str, Any]:
    gitk = Git(repo)
    lines = Lines()
    log = git(
        repo,
        "log",
        "--merges",
        "--first-parent",
        "--reverse",
        "--format=%H%x00%B%x01",
        f"--since={since}",
        f"--until={until}",
        "HEAD",
    )
    prs = []
    for record in log.split("\x01"):
        if "\x00" not in record:
            continue
        merge, message = record.strip().split("\x00", 1)
        subject, _, rest = message.partition("\n")
        found = _SUBJECT.match(subject)
        if not found:
            continue
        title = rest.strip().split("\n", 1)[0]
        pushes = []
        for head, kind in pushes_of(commits_of(repo, merge)):
            shape = push_shape(repo, gitk, merge, head, lines)
            shape["kind"] = kind
            pushes.append(shape)
        prs.append(
            {
                "number": int(found.group(1)),
                "merge": merge,
                "title": lines.ref(title),
                "author": lines.ref(found.group(2)),
                "pushes": pushes,
            }
        )
        print(f"#{found.group(1)}: {len(pushes)} pushes", file=sys.stderr)
    return {
        "source": source,
        "head": git(repo, "rev-parse", "HEAD").strip(),
        "since": since,
        "until": until,
        "push_gap": PUSH_GAP,
        "rebase_gap": REBASE_GAP,
        "lines": lines.rows,
        "prs": prs,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.lifecycle_trace")
    parser.add_argument("git_dir", type=Path)
    parser.add_argument("--since", required=True)
    parser.add_argument("--until", required=True)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--source", default="", help="where GIT_DIR came from (owner/name)")
    args = parser.parse_args(argv)
    trace = cut(args.git_dir, args.since, args.until, args.source)
    data = json.dumps(trace, separators=(",", ":"), sort_keys=True).encode()
    args.out.write_bytes(gzip.compress(data, 9, mtime=0))
    print(
        f"{len(trace['prs'])} PRs, {len(trace['lines'])} distinct lines, "
        f"{args.out.stat().st_size} bytes",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
