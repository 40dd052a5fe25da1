"""Retention of the ledger's two append-only logs (issue 19): ``legs.jsonl`` and
``posted-comments.jsonl``. Why these periods: docs/decisions.md, "Retention for trigger
keys, removals and kdev's ledger logs".

What is kept:

- **legs.jsonl**: every leg started within :data:`LEGS_KEEP` (7 days) of now, and every
  leg stamped in the future (clock skew). The longest window that reads the log is the
  24 h budget window (``wrapper.review.budget.WINDOW``, ``wrapper.sweep.decide.
  BUDGET_WINDOW``), so a budget decision after a prune is exactly the one before it.
- **posted-comments.jsonl**: every record of a pull request on which kdev posted within
  :data:`POSTED_KEEP` (365 days). The records recognise kdev's own comments (the
  self-loop closure, the author loop's triage) for as long as the pull request is in
  use; a pull request is kept whole or dropped whole, so a long-lived one keeps all of
  its records while kdev still posts there.

A line that no reader can use (torn by a writer killed mid-append, no valid id) is
dropped; a record whose time cannot be read is kept.

How: a compaction reads the log, writes the kept lines to a temp file in the same
directory, fsyncs it and renames it over the log (``LedgerFiles.atomic_write``), all
under the lock the log's writers hold. A crash before the rename leaves the log as it
was (and a hidden temp file every reader ignores); after it, the compacted log. Nothing
is lost either way.

When: on append, under the lock the append already holds, once the log is at least
:data:`PRUNE_MIN_BYTES` and its last compaction (the time in ``.<log>.pruned``) is at
least :data:`PRUNE_EVERY` old: at most one compaction a day per log, and none for a
small log. A failed compaction is logged and the append still stands.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from wrapper.errors import LedgerError
from wrapper.ledger import jsonl
from wrapper.ledger.codec import leg_from_json
from wrapper.ledger.files import log, read_text
from wrapper.ledger.records import LegRecord, format_timestamp, parse_timestamp

LEGS_KEEP = timedelta(days=7)
POSTED_KEEP = timedelta(days=365)
PRUNE_EVERY = timedelta(days=1)
PRUNE_MIN_BYTES = 64 * 1024

Write = Callable[[Path, str], None]


@dataclass(frozen=True)
class Compacted:
    """What one compaction of one log did (``kept`` lines, ``dropped`` lines)."""

    log: str
    kept: int
    dropped: int

    def to_json(self) -> dict[str, Any]:
        return {"log": self.log, "kept": self.kept, "dropped": self.dropped}


def marker_path(log_path: Path) -> Path:
    """``.<log name>.pruned``: when the log was last compacted."""
    return log_path.with_name(f".{log_path.name}.pruned")


def due(log_path: Path, size: int, now: datetime) -> bool:
    """Whether an append that left the log at ``size`` bytes should compact it now."""
    if size < PRUNE_MIN_BYTES:
        return False
    try:
        text = read_text(marker_path(log_path))
        last = parse_timestamp(text.strip()) if text is not None else None
    except (ValueError, LedgerError):
        last = None
    return last is None or now - last >= PRUNE_EVERY or last > now


def kept_legs(lines: Sequence[str], now: datetime) -> tuple[list[str], list[LegRecord]]:
    """The lines of legs.jsonl to keep, and their legs, in log order."""
    horizon = now - LEGS_KEEP
    keep: list[str] = []
    legs: list[LegRecord] = []
    for line in lines:
        try:
            leg = leg_from_json(line)
        except ValueError:
            continue
        if leg.started_at >= horizon:
            keep.append(line)
            legs.append(leg)
    return keep, legs


def _posted(line: str) -> tuple[int | None, datetime | None] | None:
    """``(pr, posted_at)`` of a usable record (None where unreadable); None: unusable."""
    try:
        data: Any = json.loads(line)
    except ValueError:
        return None
    if not isinstance(data, dict) or type(data.get("id")) is not int or data["id"] < 1:
        return None
    pr = data.get("pr") if type(data.get("pr")) is int else None
    try:
        posted_at = parse_timestamp(data["posted_at"])
    except (KeyError, TypeError, ValueError):
        posted_at = None
    return pr, posted_at


def kept_posted(lines: Sequence[str], now: datetime) -> list[str]:
    """The lines of posted-comments.jsonl to keep, in log order."""
    horizon = now - POSTED_KEEP
    records = [(line, _posted(line)) for line in lines]
    newest: dict[int, datetime] = {}
    pinned: set[int] = set()  # a PR with a record whose time cannot be read stays whole
    for _line, record in records:
        if record is None:
            continue
        pr, posted_at = record
        if pr is None:
            continue
        if posted_at is None:
            pinned.add(pr)
        elif pr not in newest or posted_at > newest[pr]:
            newest[pr] = posted_at
    keep: list[str] = []
    for line, record in records:
        if record is None:
            continue
        pr = record[0]
        if pr is None or pr in pinned or newest[pr] >= horizon:
            keep.append(line)
    return keep


def compact(log_path: Path, keep: Callable[[list[str]], list[str]], write: Write) -> Compacted:
    """Rewrite ``log_path`` with the lines ``keep`` returns, atomically with ``write``.
    The caller holds the log's lock. Nothing is written when nothing would be dropped."""
    numbered, stat = jsonl.read_lines(log_path)
    lines = [text for _number, text in numbered]
    kept = keep(lines) if stat is not None else []
    if stat is not None and len(kept) < len(lines):
        write(log_path, "".join(line + "\n" for line in kept))
    return Compacted(log_path.name, len(kept), len(lines) - len(kept))


def mark(log_path: Path, now: datetime, write: Write) -> None:
    """Record ``now`` as the log's last compaction."""
    write(marker_path(log_path), format_timestamp(now) + "\n")


def report(done: Compacted) -> None:
    if done.dropped:
        log.info("pruned %d line(s) of %s, kept %d", done.dropped, done.log, done.kept)


def after_append(log_path: Path, size: int, now: datetime, prune: Callable[[], Compacted]) -> None:
    """Compact the log an append just left at ``size`` bytes when it is :func:`due`, under
    the caller's lock; a failed compaction is a warning, never the append's failure (the
    line is already recorded, the prune waits for the next append)."""
    if not due(log_path, size, now):
        return
    try:
        report(prune())
    except LedgerError as exc:
        log.warning("cannot prune %s: %s", log_path, exc)
