"""What the exclusion rules need from git (issue 28, D87): the changed entries of
``base...head`` with their blobs and whether git diffs them as binary, the first bytes
of blobs, one file of a tree, and gitattributes **as a given tree has them**.

Attributes are git's own matching, not a re-implementation: the tree's ``.gitattributes``
blobs (and nothing else) are staged into a throwaway index (``GIT_INDEX_FILE``) and
``git check-attr --cached`` reads them from there. This works on every git kdev runs
with (``check-attr --source`` needs git 2.40). The checkout's working tree, a PR's
``.gitattributes`` and the user's ``core.attributesFile`` are never read; the
repository's ``$GIT_DIR/info/attributes``, which only whoever runs kdev can write,
still applies, as it does for every git command.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from wrapper.errors import KdevError
from wrapper.git.process import GitProcess, check_option_safe

NULL_OIDS = frozenset({"0" * 40, "0" * 64})
GITLINK_MODE = "160000"
CHUNK = 65536


@dataclass(frozen=True)
class DiffEntry:
    """One changed path of ``base...head`` (``git diff --raw``): its head path (its base
    path for a deletion), the base path of a rename or copy, the status letter, the
    blob to read (the head's; the base's for a deletion; None for a submodule) and
    whether git diffs it as binary (``-`` in ``--numstat``)."""

    path: str
    old_path: str | None
    status: str
    blob: str | None
    binary: bool


class GitFacts(GitProcess):
    """The read-only git calls of :mod:`wrapper.review.exclusion_facts`."""

    def diff_entries(self, base_ref: str, head_ref: str) -> list[DiffEntry]:
        """The entries ``git diff base...head`` shows, in its order, with the flags of
        :meth:`Git.diff` (so renames and binaries are read the same way)."""
        check_option_safe(base_ref, "ref")
        check_option_safe(head_ref, "ref")
        common = ["diff", "--no-ext-diff", "--no-textconv", "-z", f"{base_ref}...{head_ref}"]
        raw = self._run([*common[:4], "--raw", "--no-abbrev", common[4], "--"]).stdout
        numstat = self._run([*common[:4], "--numstat", common[4], "--"]).stdout
        return parse_raw(raw, _binary_paths(numstat))

    def blob_starts(self, blobs: Iterable[str], limit: int) -> dict[str, bytes]:
        """The first ``limit`` bytes of each blob, read in one ``cat-file --batch``
        (the rest of a big blob is read and dropped, never held)."""
        wanted = list(dict.fromkeys(blobs))
        found: dict[str, bytes] = {}
        if not wanted:
            return found
        with self._stream(["cat-file", "--batch"], what="git cat-file") as (ask, answers):
            for oid in wanted:
                ask.write(oid.encode("ascii") + b"\n")
                ask.flush()
                header = answers.readline().split()
                if len(header) != 3 or header[1] != b"blob" or not header[2].isdigit():
                    raise KdevError(f"git cat-file: no blob {oid}", "git_failed")
                left, kept = int(header[2]), bytearray()
                while left:
                    chunk = answers.read(min(CHUNK, left))
                    if not chunk:
                        raise KdevError("git cat-file: the answer ended early", "git_failed")
                    left -= len(chunk)
                    if len(kept) < limit:
                        kept += chunk[: limit - len(kept)]
                answers.read(1)  # the newline after each answer
                found[oid] = bytes(kept)
        return found

    def file_at(self, ref: str, path: str) -> bytes | None:
        """The blob at ``path`` in the tree of ``ref`` (None: no such entry). An entry
        there that is not a regular file is ``KdevError`` ``not_a_file``."""
        check_option_safe(ref, "ref")
        listing = self._run(["ls-tree", "-z", ref, "--", path]).stdout
        for record in listing.split(b"\0"):
            meta, _, name = record.partition(b"\t")
            if name.decode("utf-8", "replace") != path:
                continue
            mode, kind, oid = meta.decode("ascii", "replace").split()
            if kind != "blob" or mode not in ("100644", "100755"):
                raise KdevError(f"{path} in {ref} is not a regular file", "not_a_file")
            return self._run(["cat-file", "blob", oid]).stdout
        return None

    def attributes_at(
        self, tree_ref: str, paths: Sequence[str], names: Sequence[str]
    ) -> dict[str, dict[str, str]]:
        """path -> attribute -> git's value (``set``, ``unset``, ``unspecified`` or the
        value), as the ``.gitattributes`` files of ``tree_ref``'s tree decide them."""
        check_option_safe(tree_ref, "ref")
        for name in names:
            check_option_safe(name, "attribute")
        result: dict[str, dict[str, str]] = {path: {} for path in paths}
        if not paths or not names:
            return result
        listing = self._run(["ls-tree", "-r", "-z", "--full-tree", tree_ref]).stdout
        staged = [
            record + b"\0"
            for record in listing.split(b"\0")
            if record.partition(b"\t")[2].rpartition(b"/")[2] == b".gitattributes"
            and record.startswith((b"100644 blob ", b"100755 blob "))
        ]
        with tempfile.TemporaryDirectory(prefix="kdev-attr-") as scratch:
            env = {"GIT_INDEX_FILE": str(Path(scratch) / "index")}
            self._run(["update-index", "-z", "--index-info"], stdin=b"".join(staged), env=env)
            answer = self._run(
                [
                    "-c",
                    "core.attributesFile=/dev/null",
                    "check-attr",
                    "--cached",
                    "-z",
                    "--stdin",
                    *names,
                ],
                stdin=b"".join(p.encode("utf-8") + b"\0" for p in paths),
                env=env,
            ).stdout
        fields = answer.split(b"\0")
        for index in range(0, len(fields) - 2, 3):
            path, name, value = (f.decode("utf-8", "replace") for f in fields[index : index + 3])
            result.setdefault(path, {})[name] = value
        return result


def parse_raw(raw: bytes, binary: set[str]) -> list[DiffEntry]:
    """The records of ``git diff --raw --no-abbrev -z``; ``binary``: the binary paths.
    A record git would not write is ``KdevError`` ``git_failed``."""
    entries: list[DiffEntry] = []
    fields = raw.split(b"\0")
    index = 0
    while index < len(fields) and fields[index]:
        meta = fields[index].decode("ascii", "replace").lstrip(":").split()
        if len(meta) != 5 or not meta[4][:1].isalpha():
            raise KdevError(f"git diff --raw: unexpected record {meta!r}", "git_failed")
        old_mode, new_mode, old_oid, new_oid, status = meta
        paired = status[:1] in ("R", "C")
        names = [f.decode("utf-8", "replace") for f in fields[index + 1 : index + 2 + paired]]
        if len(names) != 1 + paired or not all(names):
            raise KdevError("git diff --raw: a record without its path", "git_failed")
        index += 2 + paired
        path, old_path = names[-1], (names[0] if paired else None)
        deleted = new_oid in NULL_OIDS
        blob = old_oid if deleted else new_oid
        gitlink = (old_mode if deleted else new_mode) == GITLINK_MODE
        entries.append(
            DiffEntry(path, old_path, status[:1], None if gitlink else blob, path in binary)
        )
    return entries


def _binary_paths(numstat: bytes) -> set[str]:
    """The paths ``git diff --numstat -z`` counts as binary (``-`` for both counts)."""
    binary: set[str] = set()
    fields = numstat.split(b"\0")
    index = 0
    while index < len(fields) and fields[index]:
        added, _, rest = fields[index].partition(b"\t")
        deleted, _, name = rest.partition(b"\t")
        if name:
            path, index = name, index + 1
        else:  # a rename or copy: the counts, then the old and the new path
            path, index = fields[index + 2], index + 3
        if added == b"-" and deleted == b"-":
            binary.add(path.decode("utf-8", "replace"))
    return binary
