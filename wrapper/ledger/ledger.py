"""The review ledger on disk: verdict files, index.json, locks, deferred markers, leg log.

Why it is built this way: docs/decisions.md D4.

Layout under ``reviews_dir`` (every directory created mode 0700, every file 0600)::

    ledger-format                       the patch-id scheme (wrapper.ledger.format)
    <owner>__<name>/                    repo validated by config.check_repo first
        legs.jsonl                      one line per leg *started*: {pr, head_sha, started_at}
        legs.window.json                the last ~25 h of legs.jsonl (wrapper.ledger.legwindow)
        prs.index.json                  a summary of each pr-N/ (wrapper.ledger.prindex)
        posted-comments.jsonl           one line per comment kdev posted: {id, pr, purpose, ...}
        .legs.jsonl.pruned              when legs.jsonl was last compacted (wrapper.ledger.logprune)
        .posted-comments.jsonl.pruned   the same for posted-comments.jsonl
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
    PR: <number>
    PR_URL: <url>
    HEAD_SHA: <sha>
    PATCH_ID: <id>
    BASE: <branch>
    REVIEWED_AT: <ISO 8601 UTC, ending in Z>
    REVIEWER_MODEL: <model>
    USAGE: <the round's legs in one line>   (optional: wrapper.usage.summary, D103)
    ---
    <review body, verbatim>

followed by one newline that is not part of the body. Files of the old header
(``PR: <url>`` and no ``PR_URL`` line) and files without ``USAGE`` still parse.

Crash safety: verdict files, index.json and markers are written to a hidden temp file in
the same directory, flushed and fsync'd, ``os.replace``d, and then the directory is
fsync'd, so a reader sees the old file or the new one, never a part. A process killed
mid-write leaves at most a hidden ``.<name>.<random>.tmp`` file, which every reader
ignores. Locks are ``fcntl.flock`` on files opened close-on-exec: the kernel releases
them when the holder dies, however it dies, and a reviewer child never inherits one.

The parts live in their own modules: :mod:`~wrapper.ledger.records` (the dataclasses,
names and checks), :mod:`~wrapper.ledger.codec` (the file grammars),
:mod:`~wrapper.ledger.files` (paths, atomic writes, flocks), :mod:`~wrapper.ledger.jsonl`
(the one JSONL append), :mod:`~wrapper.ledger.locks`, :mod:`~wrapper.ledger.deferred`,
:mod:`~wrapper.ledger.legs` and :mod:`~wrapper.ledger.posted`; :class:`Ledger` is them
together with the verdict files, index.json and the listing of ``kdev verdicts``.

Every refusal is a :class:`~wrapper.errors.KdevError` with a reason code:
``ConfigError`` ``invalid_repo`` / ``invalid_pr`` / ``invalid_sha`` / ``invalid_cap``
for names that must not become paths; ``LedgerError`` ``secret_in_output``,
``invalid_record``, ``index_corrupt``, ``ledger_write_failed``, ``ledger_read_failed``.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from wrapper.errors import LedgerError
from wrapper.leakscan import refuse_leak
from wrapper.ledger.codec import (
    find_secrets,
    index_from_json,
    index_to_json,
    parse_verdict,
    render_verdict,
)
from wrapper.ledger.deferred import DeferredMarkers
from wrapper.ledger.files import fsync_dir, log, read_text, write_failed
from wrapper.ledger.legs import LegLog
from wrapper.ledger.listing import LedgerPage, Query, page_ledger
from wrapper.ledger.posted import PostedComments
from wrapper.ledger.records import (
    DEFERRED_BUDGET_STATE,
    INDEX_FILE,
    MIN_SECRET_LENGTH,
    VERDICTS,
    DeferredMarker,
    IndexEntry,
    LedgerRow,
    LegRecord,
    RowKind,
    VerdictRecord,
    check_pr,
    check_sha,
    format_timestamp,
    parse_timestamp,
    utcnow,
)

__all__ = [
    "DEFERRED_BUDGET_STATE",
    "MIN_SECRET_LENGTH",
    "DeferredMarker",
    "IndexEntry",
    "Ledger",
    "LedgerRow",
    "LegRecord",
    "RowKind",
    "VerdictRecord",
    "check_pr",
    "check_sha",
    "find_secrets",
    "format_timestamp",
    "parse_timestamp",
    "parse_verdict",
    "render_verdict",
    "utcnow",
]


class Ledger(LegLog, DeferredMarkers, PostedComments):
    """The ledger under ``reviews_dir`` (see the module docstring for the layout).

    ``clock`` gives aware UTC datetimes (leg starts, default timestamps).
    ``before_replace``, if given, is called with the temp file's path after it is
    fsync'd and before it is renamed into place: a seam for crash tests.
    """

    # --- verdict files -----------------------------------------------------------------

    def find_verdict(self, repo: str, pr: int, patch_id: str) -> VerdictRecord | None:
        """The verdict for ``patch_id``, or None when there is none.

        A file that does not parse, or whose PATCH_ID differs from its name, is not a
        verdict: None, and a warning is logged.
        """
        path = self.verdict_path(repo, pr, patch_id)
        try:
            text = read_text(path)
            if text is None:
                return None
            record = parse_verdict(text)
            if record.patch_id != patch_id:
                raise ValueError(f"PATCH_ID {record.patch_id} differs from the file name")
            if record.pr is None:  # an old header: the number is the directory's
                record = replace(record, pr=pr)
            elif record.pr != pr:
                raise ValueError(f"PR {record.pr} differs from the directory pr-{pr}")
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
        if record.pr is None:
            record = replace(record, pr=pr)
        elif record.pr != pr:
            raise LedgerError(
                f"verdict for {repo}#{pr} not written: its PR is {record.pr}", "invalid_record"
            )
        text = render_verdict(record)
        values = list(secrets)
        if find_secrets(text, values):
            raise LedgerError(
                f"verdict for {repo}#{pr} not written: it contains a known secret value",
                "secret_in_output",
            )
        refuse_leak(text, values, f"verdict for {repo}#{pr} (not written)")
        self.ensure_dir(path.parent)
        self.atomic_write(path, text)
        return path

    # --- index.json ----------------------------------------------------------------------

    def read_index(self, repo: str, pr: int) -> dict[str, IndexEntry]:
        """index.json of the PR (head_sha -> entry); {} when absent.

        ``LedgerError index_corrupt`` when it exists but is not a valid index.
        """
        path = self.pr_dir(repo, pr) / INDEX_FILE
        try:
            text = read_text(path)
            return {} if text is None else index_from_json(text)
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
            if entry.carried_at is not None:
                format_timestamp(entry.carried_at)
        except ValueError as exc:
            raise LedgerError(f"index entry: {exc}", "invalid_record") from None
        directory = self.pr_dir(repo, pr)
        self.ensure_dir(directory)
        with self.flock(directory / ".index.lock", fcntl.LOCK_EX):
            index = self.read_index(repo, pr)
            index[head_sha] = entry
            self.atomic_write(directory / INDEX_FILE, index_to_json(index))

    def remove_patch(self, repo: str, pr: int, patch_id: str) -> int:
        """For ``--force``: deletes the verdict file of ``patch_id`` and every index entry
        with that patch_id; returns how many entries were removed."""
        path = self.verdict_path(repo, pr, patch_id)
        directory = path.parent
        if not directory.is_dir():
            return 0
        with self.flock(directory / ".index.lock", fcntl.LOCK_EX):
            try:
                path.unlink(missing_ok=True)
                fsync_dir(directory)
            except OSError as exc:
                raise write_failed(path, exc) from None
            index = self.read_index(repo, pr)
            kept = {head: e for head, e in index.items() if e.patch_id != patch_id}
            removed = len(index) - len(kept)
            if removed:
                self.atomic_write(directory / INDEX_FILE, index_to_json(kept))
        return removed

    # --- listing -------------------------------------------------------------------------

    def list_ledger(
        self,
        repo: str | None = None,
        pr: int | None = None,
        *,
        since: datetime | None = None,
    ) -> list[LedgerRow]:
        """The rows of ``kdev verdicts``: one per index entry (kind reviewed or carried)
        and one per deferred marker (kind deferred), ordered by repo, pr, then time; only
        those at or after ``since`` if given. A PR whose index is corrupt is skipped with
        a warning.
        """
        return self.page_ledger(Query(repo=repo, pr=pr, since=since)).rows

    def page_ledger(self, query: Query) -> LedgerPage:
        """One page of :meth:`list_ledger` (wrapper.ledger.listing): read through the PR
        index, so only the PR directories that hold the page's rows are opened."""
        return page_ledger(self, query)
