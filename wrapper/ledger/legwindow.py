"""The leg log's budget window, kept beside legs.jsonl (issue 19, item 3).

``legs.window.json`` holds the repository's legs of roughly the last 25 hours and a
stamp of legs.jsonl (inode, size, mtime in ns) as it was when the window was written.
The budget decision reads it instead of the whole log, so its cost follows the legs in
the window (bounded by the budgets), not the history.

It is never silently wrong:

- it is written under the same ``.legs.lock`` as legs.jsonl, right after each append;
- it is used only while legs.jsonl still has the stamp it recorded: an append it did not
  see (a crash between the two writes, an older kdev, an operator's edit), a truncation or
  a replaced file changes the stamp, and the log is read in full and the window rebuilt;
- it is used only for questions about legs at or after its ``horizon`` (the point before
  which it dropped legs); an older ``since`` reads the log;
- a missing, unreadable or corrupt window file is rebuilt from the log.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from wrapper.ledger.codec import leg_from_json, leg_to_json
from wrapper.ledger.records import LegRecord, format_timestamp, parse_timestamp

log = logging.getLogger("wrapper.ledger.legwindow")

WINDOW_FILE = "legs.window.json"
# The budget window is 24 h; an hour more keeps a leg until well after it can matter.
KEEP = timedelta(hours=25)
FORMAT = 1


@dataclass(frozen=True)
class LogStamp:
    """What identifies one state of legs.jsonl: an append changes size and mtime."""

    inode: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, result: os.stat_result) -> LogStamp:
        return cls(result.st_ino, result.st_size, result.st_mtime_ns)


@dataclass(frozen=True)
class Window:
    stamp: LogStamp
    horizon: datetime  # legs started before this may have been dropped
    legs: tuple[LegRecord, ...]  # in log order

    def since(self, moment: datetime) -> list[LegRecord] | None:
        """The legs started at or after ``moment``; None if the window cannot tell."""
        if moment < self.horizon:
            return None
        return [leg for leg in self.legs if leg.started_at >= moment]


def stamp_of(log_path: Path) -> LogStamp | None:
    try:
        return LogStamp.of(os.stat(log_path))
    except FileNotFoundError:
        return None


def load(directory: Path, stamp: LogStamp | None) -> Window | None:
    """The window file if it describes legs.jsonl in state ``stamp``; else None."""
    if stamp is None:
        return None
    try:
        data: Any = json.loads((directory / WINDOW_FILE).read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError("unknown format")
        recorded = LogStamp(**data["log"])
        window = Window(
            recorded,
            parse_timestamp(data["horizon"]),
            tuple(leg_from_json(json.dumps(item)) for item in data["legs"]),
        )
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError, KeyError) as exc:
        log.warning("rebuilding %s from the leg log: %s", directory / WINDOW_FILE, exc)
        return None
    return window if window.stamp == stamp else None


def build(stamp: LogStamp, legs: Sequence[LegRecord], now: datetime) -> Window:
    """A window of ``legs`` (all of the log's parsed legs, in order) as of ``now``."""
    horizon = now - KEEP
    return Window(stamp, horizon, tuple(leg for leg in legs if leg.started_at >= horizon))


def extend(old: Window, stamp: LogStamp, leg: LegRecord, now: datetime) -> Window:
    """``old`` (valid for the log before the append) with ``leg`` appended."""
    horizon = max(old.horizon, now - KEEP)
    kept = tuple(item for item in old.legs if item.started_at >= horizon)
    return Window(stamp, horizon, (*kept, leg))


def save(directory: Path, window: Window, write: Callable[[Path, str], None]) -> None:
    """Writes the window file with ``write`` (the ledger's atomic write)."""
    body = {
        "format": FORMAT,
        "log": {
            "inode": window.stamp.inode,
            "size": window.stamp.size,
            "mtime_ns": window.stamp.mtime_ns,
        },
        "horizon": format_timestamp(window.horizon),
        "legs": [leg_to_json(leg) for leg in window.legs],
    }
    write(directory / WINDOW_FILE, json.dumps(body, separators=(",", ":")) + "\n")
