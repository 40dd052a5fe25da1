"""The review tree, written from git's objects themselves (docs/decisions.md D67).

:meth:`wrapper.git.Git.export_tree` lists the tree (``git ls-tree -r -z --full-tree``)
and hands the listing and one ``git cat-file --batch`` conversation to
:func:`write_tree`. Nothing of the repository's ``.gitattributes`` applies: no filter
driver, textconv, ``export-subst``, ``export-ignore`` or end-of-line conversion, so the
files are the head's blobs byte for byte and no program named by an attribute runs.

What is written, under a new directory:

- a regular file (``100644``/``100755``) with mode 0644/0755, streamed from cat-file in
  chunks (a blob is never held whole in memory);
- a submodule (``160000``) as the empty directory a checkout leaves for one not
  initialised;
- a symbolic link (``120000``) only when :func:`kept_links` keeps it: its target is
  relative and, resolved from the link's own directory the way the kernel would
  (following the tree's other kept links, chains included), never steps above the
  tree's root. Absolute targets, ``..`` out of the tree, chains and loops are skipped.

An entry whose path is unsafe (:func:`safe_components`: absolute, empty, ``.`` or
``..`` components, any dress of ``.git``) is skipped, as is one that collides with what
is already written (a malformed tree's duplicate). Every skip is logged at INFO with its
path and counted in the :class:`ExportReport`. Nothing is written through a link: each
directory is opened with ``O_NOFOLLOW`` from its parent's descriptor, and each file is
created with ``O_CREAT | O_EXCL | O_NOFOLLOW``; links are made last.

Only the standard library: the result is the same on every Python the project runs on.
"""

from __future__ import annotations

import errno
import logging
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from wrapper.errors import WorktreeError

log = logging.getLogger("kdev.git")

FILE_MODES = {b"100644": 0o644, b"100755": 0o755}  # ls-tree prints canonical modes
LINK_MODE = b"120000"
GITLINK_MODE = b"160000"
MAX_LINK_TARGET = 4096  # PATH_MAX: a longer target is no link the kernel would make
MAX_HOPS = 40  # the kernel's limit of links followed in one lookup (ELOOP beyond)
# Steps (components taken) to judge all the links of one tree: a real tree needs a few
# per link; thousands of 40-link chains of 2,000-component targets would need billions.
MAX_LINK_STEPS = 2_000_000
CHUNK = 64 * 1024
# What ``ls-tree`` and ``cat-file --batch`` never read anyway, for the record: no
# attributes file of the operator's either (the system's is off: GIT_ATTR_NOSYSTEM).
EXPORT_CONFIG_ARGS = ("-c", "core.attributesFile=/dev/null")
_OID = re.compile(rb"[0-9a-f]{40}|[0-9a-f]{64}")
# Characters HFS+ ignores in names (git's is_hfs_dotgit): ".g\u200cit" is ".git" there.
_HFS_IGNORED = re.compile("[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]")
# Skips caused by the tree's own content (a collision, a path through a file or link).
_COLLISIONS = frozenset(
    {errno.EEXIST, errno.ENOTDIR, errno.ELOOP, errno.EISDIR, errno.ENAMETOOLONG}
)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC

TreePath = tuple[bytes, ...]


@dataclass
class ExportReport:
    """What :func:`write_tree` wrote and skipped (counts)."""

    files: int = 0
    links: int = 0
    submodules: int = 0
    skipped_entries: int = 0  # unsafe paths, unknown modes, collisions
    skipped_links: int = 0  # links whose resolution leaves the tree


def is_dotgit(name: bytes) -> bool:
    """True for a path component git's ``verify_path`` (with ``core.protectNTFS`` and
    ``core.protectHFS``) refuses as ``.git``: any case, trailing dots or spaces (NTFS),
    the 8.3 short name ``git~1``, and HFS+'s ignored characters inside it."""
    text = _HFS_IGNORED.sub("", name.decode("utf-8", "surrogateescape")).lower()
    return text.rstrip(". ") == ".git" or text == "git~1"


def safe_components(path: bytes) -> TreePath | None:
    """``path`` split into its components, or None when it is not safe to write: empty,
    absolute, holding a NUL, an empty, ``.`` or ``..`` component, or a ``.git`` one."""
    if not path or path.startswith(b"/") or b"\0" in path:
        return None
    parts = tuple(path.split(b"/"))
    for part in parts:
        if part in (b"", b".", b"..") or is_dotgit(part):
            return None
    return parts


def parse_listing(listing: bytes) -> Iterator[tuple[bytes, bytes, bytes]]:
    """``(mode, oid, path)`` of each record of ``git ls-tree -r -z`` output."""
    for record in listing.split(b"\0"):
        if not record:
            continue
        meta, tab, path = record.partition(b"\t")
        fields = meta.split(b" ")
        if not tab or len(fields) != 3 or not _OID.fullmatch(fields[2]):
            raise WorktreeError("git ls-tree: an unreadable record", "worktree_failed")
        yield fields[0], fields[2], path


class _TooCostly(Exception):
    """The links of a tree took more than :data:`MAX_LINK_STEPS` steps to judge."""


class _Steps:
    def __init__(self, limit: int) -> None:
        self.left = limit

    def take(self) -> None:
        self.left -= 1
        if self.left < 0:
            raise _TooCostly


def stays_inside(
    path: TreePath, links: Mapping[TreePath, bytes], steps: _Steps | None = None
) -> bool:
    """True when the link at ``path`` (its target in ``links``) resolves, as the kernel
    resolves it with exactly ``links`` as the tree's links, without stepping above the
    root: components are taken in order, each link met is replaced by its target
    (relative to the link's own directory), ``..`` goes to the parent of where the
    resolution *is* (not where it was spelled). Absolute targets and loops (more than
    :data:`MAX_HOPS` links) do not stay inside. A missing component is passed lexically,
    so whatever is created there later cannot turn a kept link into an escape by ``..``."""
    target = links[path]
    if target.startswith(b"/"):
        return False
    pending = list(reversed(target.split(b"/")))
    here = list(path[:-1])
    hops = 1
    steps = steps or _Steps(MAX_LINK_STEPS)
    while pending:
        steps.take()
        name = pending.pop()
        if name in (b"", b"."):
            continue
        if name == b"..":
            if not here:
                return False
            here.pop()
            continue
        followed = links.get((*here, name))
        if followed is None:
            here.append(name)
            continue
        hops += 1
        if hops > MAX_HOPS or followed.startswith(b"/"):
            return False
        pending.extend(reversed(followed.split(b"/")))
    return True


def kept_links(links: Mapping[TreePath, bytes]) -> set[TreePath]:
    """The links of ``links`` that stay inside the tree (:func:`stays_inside`), decided
    together: links that escape are dropped and the rest judged again without them,
    until every one left stays inside with exactly the others left.

    A tree whose links take more than :data:`MAX_LINK_STEPS` steps in all to judge (a
    hostile one: thousands of long chains) keeps none of them."""
    kept = dict(links)
    steps = _Steps(MAX_LINK_STEPS)
    try:
        while True:
            escaping = [path for path in kept if not stays_inside(path, kept, steps)]
            if not escaping:
                return set(kept)
            for path in escaping:
                del kept[path]
    except _TooCostly:
        log.warning(
            "review tree: its %d links take over %d steps to judge; none is kept",
            len(links),
            MAX_LINK_STEPS,
        )
        return set()


class BlobReader:
    """The answers of one ``git cat-file --batch``: ask for a blob by its id, then read
    its content in chunks, by the size its header gives."""

    def __init__(self, requests: IO[bytes], answers: IO[bytes]) -> None:
        self._requests = requests
        self._answers = answers

    def _ask(self, oid: bytes) -> int:
        try:
            self._requests.write(oid + b"\n")
            self._requests.flush()
        except BrokenPipeError:
            raise WorktreeError("git cat-file stopped reading", "worktree_failed") from None
        header = self._answers.readline()
        if not header:  # end of file: it quit, or closed its input and quit later
            raise WorktreeError("git cat-file stopped answering", "worktree_failed")
        fields = header.split()
        if len(fields) != 3 or fields[0] != oid or fields[1] != b"blob" or not fields[2].isdigit():
            what = header[:80].decode("ascii", "replace").strip() or "an empty line"
            raise WorktreeError(f"git cat-file: unexpected answer {what!r}", "worktree_failed")
        return int(fields[2])

    def _chunks(self, size: int) -> Iterator[bytes]:
        left = size
        while left:
            chunk = self._answers.read(min(CHUNK, left))
            if not chunk:
                raise WorktreeError("git cat-file: the answer ended early", "worktree_failed")
            left -= len(chunk)
            yield chunk
        if self._answers.read(1) != b"\n":
            raise WorktreeError("git cat-file: an answer without its newline", "worktree_failed")

    def copy(self, oid: bytes, out: IO[bytes]) -> None:
        """Writes blob ``oid`` to ``out``."""
        for chunk in self._chunks(self._ask(oid)):
            out.write(chunk)

    def read(self, oid: bytes, limit: int) -> bytes | None:
        """Blob ``oid``, or None (its content read and dropped) when over ``limit`` bytes."""
        size = self._ask(oid)
        if size <= limit:
            return b"".join(self._chunks(size))
        for _ in self._chunks(size):
            pass
        return None


class _Directories:
    """Descriptors of the directory chain being written into, each opened from its
    parent's descriptor with ``O_NOFOLLOW`` (a link is never followed), created 0755 when
    missing. The chain is kept as a stack: ls-tree lists a directory's entries together."""

    def __init__(self, root_fd: int) -> None:
        self._root = root_fd
        self._stack: list[tuple[bytes, int]] = []
        self.made: set[TreePath] = set()

    def open(self, parents: TreePath) -> int | None:
        """The descriptor of directory ``parents``, or None when a component of it is
        something else than a directory (a file, a link)."""
        keep = 0
        while keep < min(len(self._stack), len(parents)) and self._stack[keep][0] == parents[keep]:
            keep += 1
        self._pop(keep)
        for index in range(keep, len(parents)):
            at = self._stack[-1][1] if self._stack else self._root
            name = parents[index]
            made = True
            try:
                os.mkdir(name, 0o755, dir_fd=at)
            except FileExistsError:
                made = False
            try:
                fd = os.open(name, _DIR_FLAGS, dir_fd=at)
            except OSError as exc:
                if exc.errno in _COLLISIONS:
                    return None
                raise
            self._stack.append((name, fd))
            if made:
                os.fchmod(fd, 0o755)
                self.made.add(parents[: index + 1])
        return self._stack[-1][1] if self._stack else self._root

    def _pop(self, keep: int) -> None:
        for _, fd in self._stack[keep:]:
            os.close(fd)
        del self._stack[keep:]

    def close(self) -> None:
        self._pop(0)


def _show(path: bytes) -> str:
    text = path.decode("utf-8", "backslashreplace")
    return text if len(text) <= 200 else text[:200] + "..."


def _skip(report: ExportReport, path: bytes, why: str) -> None:
    report.skipped_entries += 1
    log.info("review tree: skipped %r: %s", _show(path), why)


class _Writer:
    """One export in progress: files and submodule directories as they are listed,
    link targets gathered for the end."""

    def __init__(self, root_fd: int, blobs: BlobReader) -> None:
        self.dirs = _Directories(root_fd)
        self.blobs = blobs
        self.report = ExportReport()
        self.taken: set[TreePath] = set()  # every file and submodule written
        self.links: dict[TreePath, bytes] = {}

    def entry(self, mode: bytes, oid: bytes, raw: bytes) -> None:
        parts = safe_components(raw)
        if parts is None:
            return _skip(self.report, raw, "unsafe path")
        if parts in self.taken or parts in self.links:
            return _skip(self.report, raw, "listed twice")
        if mode == LINK_MODE:
            target = self.blobs.read(oid, MAX_LINK_TARGET)
            if not target or b"\0" in target:
                return _skip(self.report, raw, "not a link target")
            self.links[parts] = target
            return None
        if mode not in FILE_MODES and mode != GITLINK_MODE:
            return _skip(self.report, raw, f"mode {mode.decode('ascii', 'replace')}")
        parent = self.dirs.open(parts[:-1])
        if parent is None:
            return _skip(self.report, raw, "a parent is not a directory")
        try:
            if mode == GITLINK_MODE:
                os.mkdir(parts[-1], 0o755, dir_fd=parent)
                made = os.open(parts[-1], _DIR_FLAGS, dir_fd=parent)
                os.fchmod(made, 0o755)
                os.close(made)
            else:
                self._file(parts[-1], parent, FILE_MODES[mode], oid)
        except OSError as exc:
            if exc.errno not in _COLLISIONS:
                raise
            return _skip(self.report, raw, "already there")
        self.taken.add(parts)
        if mode == GITLINK_MODE:
            self.report.submodules += 1
        else:
            self.report.files += 1
        return None

    def _file(self, name: bytes, parent: int, mode: int, oid: bytes) -> None:
        fd = os.open(name, _FILE_FLAGS, mode, dir_fd=parent)
        with open(fd, "wb", closefd=True) as out:
            os.fchmod(fd, mode)
            self.blobs.copy(oid, out)

    def finish_links(self) -> None:
        """Each gathered link whose place is free and which :func:`kept_links` keeps."""
        placed: dict[TreePath, bytes] = {}
        for parts, target in self.links.items():
            raw = b"/".join(parts)
            if any(parts[:end] in self.links for end in range(1, len(parts))):
                _skip(self.report, raw, "a parent is a link")
                continue
            parent = self.dirs.open(parts[:-1])
            if parent is None or parts in self.dirs.made or _exists(parts[-1], parent):
                _skip(self.report, raw, "its place is taken")
                continue
            placed[parts] = target
        kept = kept_links(placed)
        for parts, target in placed.items():
            if parts not in kept:
                self.report.skipped_links += 1
                log.info(
                    "review tree: skipped link %r: it leads out of the tree",
                    _show(b"/".join(parts)),
                )
                continue
            parent = self.dirs.open(parts[:-1])  # opened above; no link is a parent
            if parent is None:
                raise WorktreeError("review tree: a link's directory went away", "worktree_failed")
            os.symlink(target, parts[-1], dir_fd=parent)
            self.report.links += 1


def _exists(name: bytes, parent: int) -> bool:
    try:
        os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def write_tree(listing: bytes, blobs: BlobReader, dest: Path) -> ExportReport:
    """Writes the tree ``listing`` (``git ls-tree -r -z`` output) describes into the new
    directory ``dest`` (0755), the blobs read from ``blobs`` (see the module doc).

    Raises ``WorktreeError(..., "worktree_failed")`` when ``dest`` exists or cannot be
    written, or git's answers cannot be read."""
    target = Path(dest).absolute()
    try:
        target.mkdir(mode=0o755)
        target.chmod(0o755)
        root_fd = os.open(target, _DIR_FLAGS)
    except OSError as exc:
        raise WorktreeError(
            f"review tree: cannot create {target}: {exc.strerror}", "worktree_failed"
        ) from None
    writer = _Writer(root_fd, blobs)
    try:
        for mode, oid, path in parse_listing(listing):
            writer.entry(mode, oid, path)
        writer.finish_links()
    except OSError as exc:
        raise WorktreeError(
            f"review tree: cannot write: {exc.strerror}", "worktree_failed"
        ) from None
    finally:
        writer.dirs.close()
        os.close(root_fd)
    report = writer.report
    if report.skipped_entries or report.skipped_links:
        log.info(
            "review tree: %d entries and %d links skipped",
            report.skipped_entries,
            report.skipped_links,
        )
    return report
