"""The per-repository PR index, ``prs.index.json``, kept beside the PR directories (issue 19).

``kdev verdicts``, ``Ledger.list_deferred`` and the sweep used to open every ``pr-N/``
directory: list it for deferred markers and read its ``index.json``. The PR index holds,
per PR directory, what those readers need without opening it: its deferred markers in
full, how many index entries it has and the newest time among them and the markers. A
reader then stats each directory instead of reading it, and reads only the PRs whose
rows it will show.

It is never believed while stale. Each entry carries a *stamp*: (inode, size, mtime and
ctime in ns) of the PR directory, of its ``index.json`` and of each of its marker files,
taken before they were read. Any writer that adds, replaces or removes one of those files
changes the directory's mtime and ctime (kdev writes by rename; an in-place edit changes
the file's own stamp), so an entry whose stamp no longer matches is read again. A stamp
taken less than :data:`RACY_NS` after a file's mtime is not trusted at all (a file system
keeps times at a clock tick's precision, so a change in the same tick could keep the same
times; git's "racily clean" problem): such an entry is read every time until it has
aged. Once the recorded mtimes are that old, any later change sets a newer one. A
missing, unreadable or corrupt index is rebuilt. No writer of markers or
verdicts maintains it, so no crash between two writes, no older kdev and no operator's
edit can leave it wrong; the reader that finds entries out of date refreshes them and
rewrites the file, under ``.prs.index.lock`` taken without waiting (a busy lock means
another reader is writing it; this one's answer does not depend on the file).
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from wrapper.errors import LedgerError
from wrapper.ledger.codec import index_from_json, marker_from_json
from wrapper.ledger.files import read_text
from wrapper.ledger.records import (
    INDEX_FILE,
    PR_DIR_RE,
    DeferredMarker,
    format_timestamp,
    parse_timestamp,
)

log = logging.getLogger("wrapper.ledger.ledger")

PR_INDEX_FILE = "prs.index.json"
PR_INDEX_LOCK = ".prs.index.lock"
FORMAT = 1
# File times at least this much older than the moment a stamp was taken are trusted to
# change on the next write (coarse kernel clock ticks, 1-2 s on some file systems).
RACY_NS = 2_000_000_000


@dataclass(frozen=True, eq=True)
class PrSummary:
    """What the PR index knows about one ``pr-N/`` directory: its entry in the file, kept
    in its JSON form so that checking ten thousand of them parses nothing but the few
    markers. ``dir`` is the directory's [inode, mtime, ctime], ``index`` index.json's
    [inode, size, mtime, ctime] (null: absent) and ``files`` the same for each marker
    file, with its name first; ``files`` and ``markers`` are left out when empty."""

    pr: int
    raw: dict[str, Any]

    @property
    def trusted(self) -> bool:
        """False: read the directory again next time (racy, or something was corrupt)."""
        return self.raw["trusted"] is True

    @property
    def rows(self) -> int:
        """index.json's entries (1 when it is corrupt: the listing reads and reports it)."""
        return int(self.raw["rows"])

    @property
    def newest(self) -> datetime | None:
        """The newest reviewed_at / carried_at / created_at of the PR's rows; None if
        unknown."""
        text = self.raw["newest"]
        try:
            return None if text is None else parse_timestamp(text)
        except (ValueError, TypeError):
            return None

    @property
    def markers(self) -> tuple[DeferredMarker, ...]:
        """The PR's markers in file-name order, the corrupt ones left out."""
        items = self.raw.get("markers", ())
        return tuple(marker_from_json(json.dumps(item)) for item in items)


def _dir_stamp(path: str) -> list[int] | None:
    try:
        result = os.stat(path)
    except FileNotFoundError:
        return None
    return [result.st_ino, result.st_mtime_ns, result.st_ctime_ns]


def _file_stamp(path: str) -> list[int] | None:
    try:
        result = os.stat(path)
    except FileNotFoundError:
        return None
    return [result.st_ino, result.st_size, result.st_mtime_ns, result.st_ctime_ns]


def _marker_names(directory: str) -> list[str]:
    with os.scandir(directory) as entries:
        return sorted(
            e.name for e in entries if e.name.startswith("deferred-") and e.name.endswith(".json")
        )


def _read_markers(directory: str, names: Sequence[str]) -> tuple[list[DeferredMarker], bool]:
    """The markers that parse, and False if any could not be used (warned about)."""
    markers: list[DeferredMarker] = []
    complete = True
    for name in names:
        path = Path(directory, name)
        try:
            text = read_text(path)  # LedgerError when it cannot be read: loud, as before
            if text is None:  # removed since the listing
                complete = False
                continue
            marker = marker_from_json(text)
            if name != f"deferred-{marker.head_sha}.json":
                raise ValueError("head_sha differs from the file name")
        except ValueError as exc:
            log.warning("ignoring corrupt deferred marker %s: %s", path, exc)
            complete = False  # warned again by every reader, as before the index
            continue
        markers.append(marker)
    return markers, complete


def scan_pr(pr: int, directory: str, began_ns: int) -> PrSummary:
    """Reads ``directory`` (one ``pr-N/``) into its summary; ``began_ns`` is the wall clock
    (``time.time_ns``) before anything was stat'd or read."""
    dir_stamp = _dir_stamp(directory)
    if dir_stamp is None:
        raise FileNotFoundError(directory)
    names = _marker_names(directory)
    index_stamp = _file_stamp(f"{directory}/{INDEX_FILE}")
    files: list[list[Any]] = [
        [name, *stamp] for name in names if (stamp := _file_stamp(f"{directory}/{name}"))
    ]
    mtimes = [dir_stamp[1], *(item[3] for item in files)]
    if index_stamp is not None:
        mtimes.append(index_stamp[2])
    markers, trusted = _read_markers(directory, names)
    trusted = trusted and all(mtime < began_ns - RACY_NS for mtime in mtimes)
    moments = [marker.created_at for marker in markers]
    rows = 0
    try:
        text = read_text(Path(directory, INDEX_FILE))
        if text is not None:
            index = index_from_json(text)
            rows = len(index)
            moments += [entry.carried_at or entry.reviewed_at for entry in index.values()]
    except (ValueError, LedgerError):
        trusted = False  # the listing reads it and reports it, every time
        rows = 1
    newest = max(moments, default=None)
    raw: dict[str, Any] = {
        "dir": dir_stamp,
        "index": index_stamp,
        "trusted": trusted,
        "rows": rows,
        "newest": None if newest is None else format_timestamp(newest),
    }
    if files:
        raw["files"] = files
    if markers:
        raw["markers"] = [marker.to_json() for marker in markers]
    return PrSummary(pr, raw)


def still_valid(raw: dict[str, Any], directory: str, *, with_index: bool = True) -> bool:
    """True if the entry ``raw`` may be believed for ``directory`` as it is now.

    ``with_index=False`` leaves index.json's own stamp out (for markers only: an index.json
    edited in place changes no marker). A marker or index.json added or removed changes
    the directory's stamp, which is always compared. A malformed entry is not valid.
    """
    try:
        if raw["trusted"] is not True or type(raw["rows"]) is not int:
            return False
        if _dir_stamp(directory) != raw["dir"]:
            return False
        if with_index and _file_stamp(f"{directory}/{INDEX_FILE}") != raw["index"]:
            return False
        for name, *stamp in raw.get("files", ()):
            if "/" in name or _file_stamp(f"{directory}/{name}") != stamp:
                return False
        for marker in raw.get("markers", ()):  # few: only a PR with deferred heads has any
            marker_from_json(json.dumps(marker))
    except (ValueError, TypeError, KeyError, IndexError):
        return False
    return True


def pr_dirs(repo_dir: Path) -> list[tuple[int, str]]:
    """The ``pr-N`` directories of a repository directory (number, path), by number."""
    found = []
    try:
        with os.scandir(repo_dir) as entries:
            for entry in entries:
                name = entry.name
                if name.startswith("pr-") and PR_DIR_RE.match(name):
                    if entry.is_dir(follow_symlinks=False):
                        found.append((int(name[3:]), entry.path))
    except FileNotFoundError:
        return []
    found.sort()
    return found


def load(repo_dir: Path) -> dict[str, Any]:
    """The PR index's entries as written (PR number as text -> entry); {} when it is
    missing or cannot be used."""
    path = repo_dir / PR_INDEX_FILE
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError("unknown format")
        prs = data["prs"]
        if not isinstance(prs, dict):
            raise ValueError("prs is not an object")
        return prs
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, TypeError, KeyError) as exc:
        log.warning("rebuilding %s: %s", path, exc)
        return {}


def render(summaries: dict[int, PrSummary]) -> str:
    body = {"format": FORMAT, "prs": {str(pr): s.raw for pr, s in sorted(summaries.items())}}
    return json.dumps(body, separators=(",", ":")) + "\n"


def refresh(
    repo_dir: Path,
    save: Callable[[dict[int, PrSummary]], None],
    *,
    with_index: bool = True,
) -> dict[int, PrSummary]:
    """The summary of every PR directory of ``repo_dir`` as it is now: the PR index's
    entries that still match their directory, the others read again. ``save`` is called
    with the result when it differs from the file. ``with_index``: see :func:`still_valid`.
    """
    began_ns = time.time_ns()
    old = load(repo_dir)
    fresh: dict[int, PrSummary] = {}
    changed = False
    for pr, directory in pr_dirs(repo_dir):
        raw = old.get(str(pr))
        if isinstance(raw, dict) and still_valid(raw, directory, with_index=with_index):
            fresh[pr] = PrSummary(pr, raw)
            continue
        try:
            summary = scan_pr(pr, directory, began_ns)
        except FileNotFoundError:  # removed while listing
            changed = True
            continue
        changed = changed or summary.raw != raw
        fresh[pr] = summary
    if changed or len(fresh) != len(old):
        save(fresh)
    return fresh


def iter_markers(summaries: dict[int, PrSummary]) -> Iterator[tuple[int, DeferredMarker]]:
    for pr in sorted(summaries):
        if summaries[pr].raw.get("markers"):
            for marker in summaries[pr].markers:
                yield pr, marker
