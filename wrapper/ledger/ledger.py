"""The review ledger on disk: verdict files, index.json, locks, deferred markers, leg log.

Why it is built this way: docs/decisions.md D4.

Layout under ``reviews_dir`` (every directory created mode 0700, every file 0600)::

    ledger-format                       the patch-id scheme (wrapper.ledger.format)
    <owner>__<name>/                    repo validated by config.check_repo first
        legs.jsonl                      one line per leg *started*: {pr, head_sha, started_at}
        legs.window.json                the last ~25 h of legs.jsonl (wrapper.ledger.legwindow)
        posted-comments.jsonl           one line per comment kdev posted: {id, pr, purpose, ...}
        .legs.lock                      serialises the leg log (see Ledger.legs_lock)
        .slots/slot-<i>.lock            concurrency slots, i in range(cap)
        pr-<N>/
            patch-<patch_id>.md         a verdict file (grammar below)
            index.json                  {head_sha: {patch_id, verdict, reviewed_at, carried_from}}
            deferred-<head_sha>.json    a deferred:budget marker
            .lock                       the per-PR lock (Ledger.pr_lock)
            .index.lock                 serialises read-modify-write of index.json

A verdict file is exactly::

    VERDICT: APPROVE|REQUEST_CHANGES
    PR: <url>
    HEAD_SHA: <sha>
    PATCH_ID: <id>
    BASE: <branch>
    REVIEWED_AT: <ISO 8601 UTC, ending in Z>
    REVIEWER_MODEL: <model>
    ---
    <review body, verbatim>

followed by one newline that is not part of the body.

Crash safety: verdict files, index.json and markers are written to a hidden temp file in
the same directory, flushed and fsync'd, ``os.replace``d, and then the directory is
fsync'd, so a reader sees the old file or the new one, never a part. A process killed
mid-write leaves at most a hidden ``.<name>.<random>.tmp`` file, which every reader
ignores. Locks are ``fcntl.flock`` on files opened close-on-exec: the kernel releases
them when the holder dies, however it dies, and a reviewer child never inherits one.

Every refusal is a :class:`~wrapper.errors.KdevError` with a reason code:
``ConfigError`` ``invalid_repo`` / ``invalid_pr`` / ``invalid_sha`` / ``invalid_cap``
for names that must not become paths; ``LedgerError`` ``secret_in_output``,
``invalid_record``, ``index_corrupt``, ``ledger_write_failed``, ``ledger_read_failed``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import re
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from wrapper.config import check_repo
from wrapper.errors import ConfigError, LedgerError
from wrapper.leakscan import refuse_leak
from wrapper.ledger.format import upgrade_ledger, write_format_marker

if TYPE_CHECKING:
    from wrapper.ledger.legwindow import LogStamp, Window

log = logging.getLogger(__name__)

VERDICTS = ("APPROVE", "REQUEST_CHANGES")
RowKind = Literal["reviewed", "carried", "deferred"]
DEFERRED_BUDGET_STATE = "deferred:budget"
HEADER_KEYS = ("VERDICT", "PR", "HEAD_SHA", "PATCH_ID", "BASE", "REVIEWED_AT", "REVIEWER_MODEL")
SEPARATOR = "---"
MIN_SECRET_LENGTH = 8  # shorter values would match ordinary text by chance
DIR_MODE = 0o700
FILE_MODE = 0o600
LOCK_FILE = ".lock"
INDEX_FILE = "index.json"
LEGS_FILE = "legs.jsonl"
POSTED_COMMENTS_FILE = "posted-comments.jsonl"
_SHA = re.compile(r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$")  # SHA-1 or SHA-256, lowercase hex
_PR_DIR = re.compile(r"^pr-([1-9][0-9]*)$")


def utcnow() -> datetime:
    """Now, aware, in UTC, to the second (the precision the ledger files show)."""
    return datetime.now(UTC).replace(microsecond=0)


def format_timestamp(moment: datetime) -> str:
    """``moment`` as ISO 8601 in UTC ending in ``Z``; a naive datetime is a ValueError."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"{moment!r} has no time zone")
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def parse_timestamp(text: str) -> datetime:
    """The aware UTC datetime of a :func:`format_timestamp` string; else ValueError."""
    if not text.endswith("Z"):
        raise ValueError(f"{text!r} is not a UTC timestamp ending in Z")
    moment = datetime.fromisoformat(text[:-1] + "+00:00")
    if moment.tzinfo is None:
        raise ValueError(f"{text!r} has no time zone")
    return moment.astimezone(UTC)


def check_sha(value: str, what: str = "sha") -> str:
    """``value`` if it is a lowercase hex SHA-1/SHA-256; else ``ConfigError invalid_sha``."""
    if not isinstance(value, str) or not _SHA.match(value):
        raise ConfigError(f"{what} {value!r} is not a lowercase hex object name", "invalid_sha")
    return value


def check_pr(pr: int) -> int:
    """``pr`` if it is a positive int (bool refused); else ``ConfigError invalid_pr``."""
    if isinstance(pr, bool) or not isinstance(pr, int) or pr < 1:
        raise ConfigError(f"pull request number {pr!r} is not a positive integer", "invalid_pr")
    return pr


@dataclass(frozen=True)
class VerdictRecord:
    """The content of one verdict file."""

    verdict: str  # APPROVE | REQUEST_CHANGES (checked when written and parsed)
    pr_url: str
    head_sha: str  # the head that was reviewed
    patch_id: str
    base: str  # the base branch name
    reviewed_at: datetime  # aware
    model: str  # REVIEWER_MODEL
    body: str  # the review, verbatim


@dataclass(frozen=True)
class IndexEntry:
    """What index.json says about one head SHA."""

    patch_id: str
    verdict: str  # APPROVE | REQUEST_CHANGES
    reviewed_at: datetime  # when the verdict was reviewed (for a carried one: originally)
    carried_from: str | None = None  # None: this head was reviewed; else the reviewed head

    @property
    def kind(self) -> RowKind:
        """``reviewed`` or ``carried``."""
        return "reviewed" if self.carried_from is None else "carried"


@dataclass(frozen=True)
class DeferredMarker:
    """A ``deferred:budget`` marker: a leg that a budget held back, and until when."""

    budget: str  # daily_legs_per_repo | daily_rounds_per_pr
    count: int  # legs counted in the window
    limit: int
    reopens_at: datetime | None  # when to retry; None only in markers of an older kdev
    head_sha: str
    pr_url: str
    created_at: datetime

    def to_json(self) -> dict[str, Any]:
        """The marker file's JSON object (``state`` is always ``deferred:budget``)."""
        return {
            "state": DEFERRED_BUDGET_STATE,
            "budget": self.budget,
            "count": self.count,
            "limit": self.limit,
            "reopens_at": None if self.reopens_at is None else format_timestamp(self.reopens_at),
            "head_sha": self.head_sha,
            "pr_url": self.pr_url,
            "created_at": format_timestamp(self.created_at),
        }


@dataclass(frozen=True)
class LegRecord:
    """One reviewer leg, counted when it *started*."""

    pr: int
    head_sha: str
    started_at: datetime


@dataclass(frozen=True)
class LedgerRow:
    """One line of ``kdev verdicts``: an index entry, or a deferred marker."""

    repo: str
    pr: int
    head_sha: str
    patch_id: str | None  # None for a deferred marker
    verdict: str | None  # None for a deferred marker
    reviewed_at: datetime | None  # None for a deferred marker (see deferred.created_at)
    kind: RowKind
    carried_from: str | None = None
    deferred: DeferredMarker | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON object for ``kdev verdicts --json``; ``deferred`` is the marker or null."""
        return {
            "repo": self.repo,
            "pr": self.pr,
            "head_sha": self.head_sha,
            "patch_id": self.patch_id,
            "verdict": self.verdict,
            "reviewed_at": None if self.reviewed_at is None else format_timestamp(self.reviewed_at),
            "kind": self.kind,
            "carried_from": self.carried_from,
            "deferred": None if self.deferred is None else self.deferred.to_json(),
        }


# --- pure: the verdict file grammar -------------------------------------------------


def _header_value(key: str, value: str, *, may_be_empty: bool = False) -> str:
    if not isinstance(value, str) or any(c in value for c in "\n\r") or value != value.strip():
        raise LedgerError(f"verdict field {key} must be one trimmed line", "invalid_record")
    if not value and not may_be_empty:
        raise LedgerError(f"verdict field {key} is empty", "invalid_record")
    return value


def render_verdict(record: VerdictRecord) -> str:
    """The exact text of ``record``'s verdict file; ``LedgerError invalid_record`` if a
    header field is not a single trimmed line, the verdict unknown or a SHA malformed."""
    if record.verdict not in VERDICTS:
        raise LedgerError(f"verdict {record.verdict!r} is not one of {VERDICTS}", "invalid_record")
    try:
        check_sha(record.head_sha, "HEAD_SHA")
        check_sha(record.patch_id, "PATCH_ID")
        reviewed_at = format_timestamp(record.reviewed_at)
    except (ConfigError, ValueError) as exc:
        raise LedgerError(f"verdict record: {exc}", "invalid_record") from None
    values = (
        record.verdict,
        _header_value("PR", record.pr_url, may_be_empty=True),
        record.head_sha,
        record.patch_id,
        _header_value("BASE", record.base),
        reviewed_at,
        _header_value("REVIEWER_MODEL", record.model, may_be_empty=True),
    )
    header = "".join(f"{key}: {value}\n" for key, value in zip(HEADER_KEYS, values, strict=True))
    return f"{header}{SEPARATOR}\n{record.body}\n"


def parse_verdict(text: str) -> VerdictRecord:
    """The record of a verdict file's text; ValueError (with why) for anything else."""
    lines = text.split("\n")
    if len(lines) <= len(HEADER_KEYS) or lines[len(HEADER_KEYS)] != SEPARATOR:
        raise ValueError(f"line {len(HEADER_KEYS) + 1} is not {SEPARATOR!r}")
    values: dict[str, str] = {}
    for number, (key, line) in enumerate(zip(HEADER_KEYS, lines, strict=False), start=1):
        if line == f"{key}:":
            values[key] = ""
        elif line.startswith(f"{key}: "):
            values[key] = line[len(key) + 2 :]
        else:
            raise ValueError(f"line {number} is not {key}:")
    verdict = values["VERDICT"]
    if verdict not in VERDICTS:
        raise ValueError(f"VERDICT {verdict!r} is not one of {VERDICTS}")
    for key in ("HEAD_SHA", "PATCH_ID"):
        if not _SHA.match(values[key]):
            raise ValueError(f"{key} {values[key]!r} is not an object name")
    body = "\n".join(lines[len(HEADER_KEYS) + 1 :])
    if body.endswith("\n"):
        body = body[:-1]
    return VerdictRecord(
        verdict=verdict,
        pr_url=values["PR"],
        head_sha=values["HEAD_SHA"],
        patch_id=values["PATCH_ID"],
        base=values["BASE"],
        reviewed_at=parse_timestamp(values["REVIEWED_AT"]),
        model=values["REVIEWER_MODEL"],
        body=body,
    )


def find_secrets(text: str, secrets: Iterable[str]) -> bool:
    """True when any secret value of at least MIN_SECRET_LENGTH characters is in ``text``."""
    return any(s and len(s) >= MIN_SECRET_LENGTH and s in text for s in secrets)


# --- pure: JSON shapes -------------------------------------------------------------------


def _index_to_json(index: dict[str, IndexEntry]) -> str:
    data = {
        head: {
            "patch_id": entry.patch_id,
            "verdict": entry.verdict,
            "reviewed_at": format_timestamp(entry.reviewed_at),
            "carried_from": entry.carried_from,
        }
        for head, entry in index.items()
    }
    return json.dumps(data, indent=2) + "\n"


def _index_from_json(text: str) -> dict[str, IndexEntry]:
    data: Any = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("the top level is not an object")
    index: dict[str, IndexEntry] = {}
    for head, raw in data.items():
        if not _SHA.match(head) or not isinstance(raw, dict):
            raise ValueError(f"entry {head!r} is malformed")
        patch_id, verdict = raw.get("patch_id"), raw.get("verdict")
        carried_from, reviewed_at = raw.get("carried_from"), raw.get("reviewed_at")
        if not isinstance(patch_id, str) or not _SHA.match(patch_id):
            raise ValueError(f"entry {head}: patch_id is malformed")
        if verdict not in VERDICTS:
            raise ValueError(f"entry {head}: verdict {verdict!r} is unknown")
        if carried_from is not None and (
            not isinstance(carried_from, str) or not _SHA.match(carried_from)
        ):
            raise ValueError(f"entry {head}: carried_from is malformed")
        if not isinstance(reviewed_at, str):
            raise ValueError(f"entry {head}: reviewed_at is missing")
        index[head] = IndexEntry(
            patch_id=patch_id,
            verdict=verdict,
            reviewed_at=parse_timestamp(reviewed_at),
            carried_from=carried_from,
        )
    return index


def _marker_to_json(marker: DeferredMarker) -> str:
    return json.dumps(marker.to_json(), indent=2) + "\n"


def _marker_from_json(text: str) -> DeferredMarker:
    data: Any = json.loads(text)
    if not isinstance(data, dict) or data.get("state") != DEFERRED_BUDGET_STATE:
        raise ValueError(f"state is not {DEFERRED_BUDGET_STATE!r}")
    budget, count, limit = data.get("budget"), data.get("count"), data.get("limit")
    head_sha, pr_url = data.get("head_sha"), data.get("pr_url")
    reopens_at, created_at = data.get("reopens_at"), data.get("created_at")
    if not isinstance(budget, str) or not isinstance(pr_url, str):
        raise ValueError("budget or pr_url is not a string")
    if not all(type(n) is int for n in (count, limit)):
        raise ValueError("count or limit is not an integer")
    if not isinstance(head_sha, str) or not _SHA.match(head_sha):
        raise ValueError("head_sha is malformed")
    if not isinstance(created_at, str) or not (reopens_at is None or isinstance(reopens_at, str)):
        raise ValueError("created_at or reopens_at is malformed")
    return DeferredMarker(
        budget=budget,
        count=cast(int, count),
        limit=cast(int, limit),
        reopens_at=None if reopens_at is None else parse_timestamp(reopens_at),
        head_sha=head_sha,
        pr_url=pr_url,
        created_at=parse_timestamp(created_at),
    )


def _leg_from_json(line: str) -> LegRecord:
    data: Any = json.loads(line)
    if not isinstance(data, dict):
        raise ValueError("not an object")
    pr, head_sha, started_at = data.get("pr"), data.get("head_sha"), data.get("started_at")
    if type(pr) is not int or pr < 1:
        raise ValueError("pr is not a positive integer")
    if not isinstance(head_sha, str) or not isinstance(started_at, str):
        raise ValueError("head_sha or started_at is not a string")
    return LegRecord(pr=pr, head_sha=head_sha, started_at=parse_timestamp(started_at))


# --- I/O helpers -----------------------------------------------------------------------


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _open_lock_file(path: Path) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)


def _write_failed(path: Path, exc: OSError) -> LedgerError:
    return LedgerError(f"cannot write {path}: {exc.strerror or exc}", "ledger_write_failed")


def _read_text(path: Path) -> str | None:
    """The file's text, None if it does not exist; LedgerError if it cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8: {exc.reason}") from None
    except OSError as exc:
        raise LedgerError(f"cannot read {path}: {exc.strerror}", "ledger_read_failed") from None


class Ledger:
    """The ledger under ``reviews_dir`` (see the module docstring for the layout).

    ``clock`` gives aware UTC datetimes (leg starts, default timestamps).
    ``before_replace``, if given, is called with the temp file's path after it is
    fsync'd and before it is renamed into place: a seam for crash tests.
    """

    def __init__(
        self,
        reviews_dir: Path,
        *,
        clock: Callable[[], datetime] = utcnow,
        before_replace: Callable[[Path], None] | None = None,
    ) -> None:
        self.reviews_dir = Path(reviews_dir)
        upgrade_ledger(self.reviews_dir)  # never match --stable ids against --verbatim ones
        self.clock = clock
        self._before_replace = before_replace
        self._held = threading.local()  # re-entrant legs_lock bookkeeping, per thread

    # --- paths --------------------------------------------------------------------------

    def repo_dir(self, repo: str) -> Path:
        """``<reviews_dir>/<owner>__<name>``; ``ConfigError invalid_repo`` for a bad name."""
        owner, name = check_repo(repo)
        return self.reviews_dir / f"{owner}__{name}"

    def pr_dir(self, repo: str, pr: int) -> Path:
        """``<reviews_dir>/<owner>__<name>/pr-<N>`` (not created)."""
        return self.repo_dir(repo) / f"pr-{check_pr(pr)}"

    def verdict_path(self, repo: str, pr: int, patch_id: str) -> Path:
        """Where the verdict for ``patch_id`` lives (whether or not it exists)."""
        return self.pr_dir(repo, pr) / f"patch-{check_sha(patch_id, 'patch_id')}.md"

    def _deferred_path(self, repo: str, pr: int, head_sha: str) -> Path:
        return self.pr_dir(repo, pr) / f"deferred-{check_sha(head_sha, 'head_sha')}.json"

    def _ensure_dir(self, directory: Path) -> None:
        """Creates ``directory`` and any missing ancestor with mode 0700."""
        missing: list[Path] = []
        current = directory
        while not current.is_dir() and current != current.parent:
            missing.append(current)
            current = current.parent
        for path in reversed(missing):
            try:
                os.mkdir(path, DIR_MODE)
            except FileExistsError:
                if not path.is_dir():
                    raise LedgerError(
                        f"{path} exists and is not a directory", "ledger_write_failed"
                    ) from None
            except OSError as exc:
                raise _write_failed(path, exc) from None
        if self.reviews_dir in missing:
            try:
                write_format_marker(self.reviews_dir)
            except OSError as exc:
                raise _write_failed(self.reviews_dir, exc) from None

    def _atomic_write(self, path: Path, text: str) -> None:
        """temp file in the same directory -> flush + fsync -> os.replace -> fsync dir."""
        try:
            fd, temp_name = tempfile.mkstemp(
                dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"
            )
        except OSError as exc:
            raise _write_failed(path, exc) from None
        temp = Path(temp_name)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(text.encode("utf-8"))
                handle.flush()
                os.fsync(handle.fileno())
            if self._before_replace is not None:
                self._before_replace(temp)
            os.replace(temp, path)
            _fsync_dir(path.parent)
        except OSError as exc:
            temp.unlink(missing_ok=True)
            raise _write_failed(path, exc) from None
        except BaseException:
            temp.unlink(missing_ok=True)
            raise

    @contextlib.contextmanager
    def _flock(self, path: Path, operation: int) -> Iterator[bool]:
        """Holds flock ``operation`` on ``path``; yields False if LOCK_NB found it busy."""
        try:
            fd = _open_lock_file(path)
        except OSError as exc:
            raise _write_failed(path, exc) from None
        try:
            try:
                fcntl.flock(fd, operation)
                acquired = True
            except BlockingIOError:
                acquired = False
            except OSError as exc:
                raise LedgerError(
                    f"cannot lock {path}: {exc.strerror}", "ledger_write_failed"
                ) from None
            yield acquired
        finally:
            os.close(fd)  # closing the only descriptor releases the lock

    # --- verdict files -----------------------------------------------------------------

    def find_verdict(self, repo: str, pr: int, patch_id: str) -> VerdictRecord | None:
        """The verdict for ``patch_id``, or None when there is none.

        A file that does not parse, or whose PATCH_ID differs from its name, is not a
        verdict: None, and a warning is logged.
        """
        path = self.verdict_path(repo, pr, patch_id)
        try:
            text = _read_text(path)
            if text is None:
                return None
            record = parse_verdict(text)
            if record.patch_id != patch_id:
                raise ValueError(f"PATCH_ID {record.patch_id} differs from the file name")
        except ValueError as exc:
            log.warning("ignoring corrupt verdict file %s: %s", path, exc)
            return None
        return record

    def write_verdict(
        self, repo: str, pr: int, record: VerdictRecord, *, secrets: Iterable[str] = ()
    ) -> Path:
        """Writes ``record`` atomically to its verdict path and returns that path.

        Refuses with ``LedgerError secret_in_output`` (writing nothing) when any secret
        value of at least MIN_SECRET_LENGTH characters appears in the rendered file, and
        ``secret_leak`` when one appears encoded (:func:`wrapper.leakscan.find_leak`).
        """
        path = self.verdict_path(repo, pr, record.patch_id)
        text = render_verdict(record)
        values = list(secrets)
        if find_secrets(text, values):
            raise LedgerError(
                f"verdict for {repo}#{pr} not written: it contains a known secret value",
                "secret_in_output",
            )
        refuse_leak(text, values, f"verdict for {repo}#{pr} (not written)")
        self._ensure_dir(path.parent)
        self._atomic_write(path, text)
        return path

    # --- index.json ----------------------------------------------------------------------

    def read_index(self, repo: str, pr: int) -> dict[str, IndexEntry]:
        """index.json of the PR (head_sha -> entry); {} when absent.

        ``LedgerError index_corrupt`` when it exists but is not a valid index.
        """
        path = self.pr_dir(repo, pr) / INDEX_FILE
        try:
            text = _read_text(path)
            return {} if text is None else _index_from_json(text)
        except ValueError as exc:
            raise LedgerError(f"{path} is not a valid index: {exc}", "index_corrupt") from None

    def record_index(self, repo: str, pr: int, head_sha: str, entry: IndexEntry) -> None:
        """Sets index.json[head_sha] = entry: read-modify-write under ``.index.lock``,
        written atomically."""
        check_sha(head_sha, "head_sha")
        check_sha(entry.patch_id, "patch_id")
        if entry.carried_from is not None:
            check_sha(entry.carried_from, "carried_from")
        if entry.verdict not in VERDICTS:
            raise LedgerError(f"verdict {entry.verdict!r} is unknown", "invalid_record")
        try:
            format_timestamp(entry.reviewed_at)
        except ValueError as exc:
            raise LedgerError(f"index entry: {exc}", "invalid_record") from None
        directory = self.pr_dir(repo, pr)
        self._ensure_dir(directory)
        with self._flock(directory / ".index.lock", fcntl.LOCK_EX):
            index = self.read_index(repo, pr)
            index[head_sha] = entry
            self._atomic_write(directory / INDEX_FILE, _index_to_json(index))

    def remove_patch(self, repo: str, pr: int, patch_id: str) -> int:
        """For ``--force``: deletes the verdict file of ``patch_id`` and every index entry
        with that patch_id; returns how many entries were removed."""
        path = self.verdict_path(repo, pr, patch_id)
        directory = path.parent
        if not directory.is_dir():
            return 0
        with self._flock(directory / ".index.lock", fcntl.LOCK_EX):
            try:
                path.unlink(missing_ok=True)
                _fsync_dir(directory)
            except OSError as exc:
                raise _write_failed(path, exc) from None
            index = self.read_index(repo, pr)
            kept = {head: e for head, e in index.items() if e.patch_id != patch_id}
            removed = len(index) - len(kept)
            if removed:
                self._atomic_write(directory / INDEX_FILE, _index_to_json(kept))
        return removed

    # --- locks -----------------------------------------------------------------------------

    @contextlib.contextmanager
    def pr_lock(self, repo: str, pr: int) -> Iterator[None]:
        """Holds the PR's advisory lock (``pr-N/.lock``), blocking until it is free.

        Exclusive across processes; the kernel releases it when the holder exits or is
        killed. Not re-entrant: do not nest it for the same PR.
        """
        directory = self.pr_dir(repo, pr)
        self._ensure_dir(directory)
        with self._flock(directory / LOCK_FILE, fcntl.LOCK_EX):
            yield

    @contextlib.contextmanager
    def concurrency_slot(self, repo: str, cap: int) -> Iterator[int | None]:
        """Takes the first free slot of ``cap`` for the repository, without waiting.

        Yields the slot index held (released on exit from the block or when the process
        dies), or None when all ``cap`` slots are busy.
        """
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
            raise ConfigError(f"concurrency cap {cap!r} is not a positive integer", "invalid_cap")
        slots = self.repo_dir(repo) / ".slots"
        self._ensure_dir(slots)
        for index in range(cap):
            with self._flock(
                slots / f"slot-{index}.lock", fcntl.LOCK_EX | fcntl.LOCK_NB
            ) as acquired:
                if acquired:
                    yield index
                    return
        yield None

    @contextlib.contextmanager
    def legs_lock(self, repo: str) -> Iterator[None]:
        """Holds the repository's leg-log lock (``.legs.lock``), blocking.

        Re-entrant within one thread, so a caller can read the log, decide the budget
        and record the leg start as one step that no other process interleaves with.
        """
        directory = self.repo_dir(repo)
        held: dict[Path, int] | None = getattr(self._held, "counts", None)
        if held is None:
            held = self._held.counts = {}
        if held.get(directory, 0):
            held[directory] += 1
            try:
                yield
            finally:
                held[directory] -= 1
            return
        self._ensure_dir(directory)
        with self._flock(directory / ".legs.lock", fcntl.LOCK_EX):
            held[directory] = 1
            try:
                yield
            finally:
                held[directory] = 0

    # --- deferred markers --------------------------------------------------------------

    def write_deferred(self, repo: str, pr: int, head_sha: str, marker: DeferredMarker) -> Path:
        """Writes the ``deferred:budget`` marker of ``head_sha`` atomically; returns its path."""
        path = self._deferred_path(repo, pr, head_sha)
        if marker.head_sha != head_sha:
            raise LedgerError(f"marker head {marker.head_sha} is not {head_sha}", "invalid_record")
        try:
            text = _marker_to_json(marker)
        except ValueError as exc:
            raise LedgerError(f"deferred marker: {exc}", "invalid_record") from None
        self._ensure_dir(path.parent)
        self._atomic_write(path, text)
        return path

    def list_deferred(self, repo: str | None = None) -> list[tuple[str, int, DeferredMarker]]:
        """Every deferred marker (of ``repo`` only, if given), ordered by repo, pr, time.

        A marker that does not parse is skipped with a warning.
        """
        found: list[tuple[str, int, DeferredMarker]] = []
        for name, repo_path in self._repos(repo):
            for pr, pr_path in self._prs(repo_path):
                found.extend((name, pr, marker) for marker in self._markers(pr_path))
        found.sort(key=lambda t: (t[0], t[1], t[2].created_at, t[2].head_sha))
        return found

    def clear_deferred(self, repo: str, pr: int, head_sha: str) -> bool:
        """Deletes the marker of ``head_sha``; True if there was one."""
        path = self._deferred_path(repo, pr, head_sha)
        try:
            path.unlink()
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise _write_failed(path, exc) from None
        _fsync_dir(path.parent)
        return True

    def _markers(self, pr_path: Path) -> Iterator[DeferredMarker]:
        for path in sorted(pr_path.glob("deferred-*.json")):
            try:
                text = _read_text(path)
                if text is None:
                    continue
                marker = _marker_from_json(text)
                if path.name != f"deferred-{marker.head_sha}.json":
                    raise ValueError("head_sha differs from the file name")
            except ValueError as exc:
                log.warning("ignoring corrupt deferred marker %s: %s", path, exc)
                continue
            yield marker

    # --- leg log ---------------------------------------------------------------------------

    def record_leg_start(self, repo: str, pr: int, head_sha: str) -> None:
        """Appends ``{pr, head_sha, started_at: clock()}`` to legs.jsonl, fsync'd, under
        the leg-log lock."""
        check_pr(pr)
        check_sha(head_sha, "head_sha")
        line = json.dumps(
            {"pr": pr, "head_sha": head_sha, "started_at": format_timestamp(self.clock())}
        )
        path = self.repo_dir(repo) / LEGS_FILE
        with self.legs_lock(repo):
            try:
                fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
                try:
                    before = os.fstat(fd)
                    size = before.st_size
                    # A writer killed mid-line left no newline: start on a fresh line.
                    torn = size > 0 and os.pread(fd, 1, size - 1) != b"\n"
                    os.write(fd, (("\n" if torn else "") + line + "\n").encode("utf-8"))
                    os.fsync(fd)
                    after = os.fstat(fd)
                finally:
                    os.close(fd)
                if size == 0:
                    _fsync_dir(path.parent)
            except OSError as exc:
                raise _write_failed(path, exc) from None
            self._window_after_append(repo, before, after, _leg_from_json(line))

    def _window_after_append(
        self, repo: str, before: os.stat_result, after: os.stat_result, leg: LegRecord
    ) -> None:
        """Brings legs.window.json up to the log just appended to (wrapper.ledger.legwindow),
        under the leg-log lock; rebuilt from the log when it did not match before."""
        from wrapper.ledger import legwindow

        directory = self.repo_dir(repo)
        now = self.clock()
        old = legwindow.load(directory, legwindow.LogStamp.of(before))
        if old is not None:
            window = legwindow.extend(old, legwindow.LogStamp.of(after), leg, now)
        else:
            legs, stamp = self._read_legs(directory / LEGS_FILE)
            window = legwindow.build(stamp or legwindow.LogStamp.of(after), legs, now)
        self._save_window(directory, window)

    def _save_window(self, directory: Path, window: Window) -> None:
        from wrapper.ledger import legwindow

        try:
            legwindow.save(directory, window, self._atomic_write)
        except LedgerError as exc:  # the log is the truth; the window is rebuilt later
            log.warning("cannot write the leg window in %s: %s", directory, exc)

    def legs_since(self, repo: str, since: datetime) -> list[LegRecord]:
        """The legs of ``repo`` started at or after ``since``, in log order.

        Read from legs.window.json when it matches the log and covers ``since``
        (wrapper.ledger.legwindow); otherwise from the whole log, and the window is rebuilt.
        A line that does not parse (a writer killed mid-append) is skipped with a warning.
        """
        from wrapper.ledger import legwindow

        directory = self.repo_dir(repo)
        path = directory / LEGS_FILE
        if not directory.is_dir():
            return []
        with self.legs_lock(repo):
            stamp = legwindow.stamp_of(path)
            if stamp is None:
                return []
            window = legwindow.load(directory, stamp)
            found = window.since(since) if window is not None else None
            if found is not None:
                return found
            legs, stamp = self._read_legs(path)
            if stamp is not None:
                self._save_window(directory, legwindow.build(stamp, legs, self.clock()))
        return [leg for leg in legs if leg.started_at >= since]

    def _read_legs(self, path: Path) -> tuple[list[LegRecord], LogStamp | None]:
        """Every parseable leg of the log, in order, and the log's stamp as read."""
        from wrapper.ledger import legwindow

        try:
            with open(path, "rb") as handle:
                stamp = legwindow.LogStamp.of(os.fstat(handle.fileno()))
                raw = handle.read()
        except FileNotFoundError:
            return [], None
        except OSError as exc:
            raise LedgerError(f"cannot read {path}: {exc.strerror}", "ledger_read_failed") from None
        legs: list[LegRecord] = []
        for number, line in enumerate(raw.decode("utf-8", "replace").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                legs.append(_leg_from_json(line))
            except ValueError as exc:
                log.warning("ignoring line %d of %s: %s", number, path, exc)
        return legs, stamp

    # --- comments kdev posted -------------------------------------------------------------

    def record_posted_comment(self, repo: str, pr: int, comment_id: int, purpose: str) -> None:
        """Appends ``{id, pr, purpose, posted_at}`` to posted-comments.jsonl, fsync'd, under
        its lock: every comment kdev posts is recorded, so ``--comment-id`` of one of them
        is ``skipped_self_comment`` (the self-loop closure)."""
        check_pr(pr)
        if isinstance(comment_id, bool) or not isinstance(comment_id, int) or comment_id < 1:
            raise LedgerError(f"comment id {comment_id!r} is not positive", "invalid_record")
        line = json.dumps(
            {
                "id": comment_id,
                "pr": pr,
                "purpose": purpose,
                "posted_at": format_timestamp(self.clock()),
            }
        )
        directory = self.repo_dir(repo)
        self._ensure_dir(directory)
        path = directory / POSTED_COMMENTS_FILE
        with self._flock(directory / ".posted.lock", fcntl.LOCK_EX):
            try:
                fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
                try:
                    size = os.fstat(fd).st_size
                    torn = size > 0 and os.pread(fd, 1, size - 1) != b"\n"
                    os.write(fd, (("\n" if torn else "") + line + "\n").encode("utf-8"))
                    os.fsync(fd)
                finally:
                    os.close(fd)
                if size == 0:
                    _fsync_dir(directory)
            except OSError as exc:
                raise _write_failed(path, exc) from None

    def posted_comment_ids(self, repo: str) -> frozenset[int]:
        """The ids of every comment kdev recorded posting on ``repo`` (unparsable lines,
        e.g. a writer killed mid-append, are skipped with a warning)."""
        path = self.repo_dir(repo) / POSTED_COMMENTS_FILE
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return frozenset()
        except OSError as exc:
            raise LedgerError(f"cannot read {path}: {exc.strerror}", "ledger_read_failed") from None
        ids: set[int] = set()
        for number, text in enumerate(raw.decode("utf-8", "replace").splitlines(), start=1):
            if not text.strip():
                continue
            try:
                data: Any = json.loads(text)
                value = data.get("id") if isinstance(data, dict) else None
                if type(value) is not int or value < 1:
                    raise ValueError("id is not a positive integer")
            except ValueError as exc:
                log.warning("ignoring line %d of %s: %s", number, path, exc)
                continue
            ids.add(value)
        return frozenset(ids)

    # --- listing -------------------------------------------------------------------------

    def list_ledger(self, repo: str | None = None, pr: int | None = None) -> list[LedgerRow]:
        """The rows of ``kdev verdicts``: one per index entry (kind reviewed or carried)
        and one per deferred marker (kind deferred), ordered by repo, pr, then time.

        A PR whose index is corrupt is skipped with a warning.
        """
        if pr is not None:
            check_pr(pr)
        rows: list[LedgerRow] = []
        for name, repo_path in self._repos(repo):
            for number, pr_path in self._prs(repo_path):
                if pr is not None and number != pr:
                    continue
                try:
                    index = self.read_index(name, number)
                except LedgerError as exc:
                    log.warning("skipping %s#%d: %s", name, number, exc)
                    index = {}
                rows.extend(
                    LedgerRow(
                        repo=name,
                        pr=number,
                        head_sha=head,
                        patch_id=entry.patch_id,
                        verdict=entry.verdict,
                        reviewed_at=entry.reviewed_at,
                        kind=entry.kind,
                        carried_from=entry.carried_from,
                    )
                    for head, entry in index.items()
                )
                rows.extend(
                    LedgerRow(
                        repo=name,
                        pr=number,
                        head_sha=marker.head_sha,
                        patch_id=None,
                        verdict=None,
                        reviewed_at=None,
                        kind="deferred",
                        deferred=marker,
                    )
                    for marker in self._markers(pr_path)
                )

        def order(row: LedgerRow) -> tuple[str, int, datetime, str]:
            moment = row.reviewed_at or (row.deferred.created_at if row.deferred else None)
            return (row.repo, row.pr, moment or datetime.min.replace(tzinfo=UTC), row.head_sha)

        rows.sort(key=order)
        return rows

    def _repos(self, repo: str | None) -> Iterator[tuple[str, Path]]:
        if repo is not None:
            path = self.repo_dir(repo)
            if path.is_dir():
                yield repo, path
            return
        if not self.reviews_dir.is_dir():
            return
        for path in sorted(self.reviews_dir.iterdir()):
            owner, sep, name = path.name.partition("__")
            if not sep or not path.is_dir():
                continue
            try:
                check_repo(f"{owner}/{name}")
            except ConfigError:
                continue
            yield f"{owner}/{name}", path

    @staticmethod
    def _prs(repo_path: Path) -> Iterator[tuple[int, Path]]:
        found = []
        for path in repo_path.iterdir():
            match = _PR_DIR.match(path.name)
            if match and path.is_dir():
                found.append((int(match.group(1)), path))
        yield from sorted(found)
