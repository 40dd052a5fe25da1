"""``li schedule list`` on a SQLite database at the newest schema, without SQLAlchemy,
alembic or pydantic (issue 25): importing those alone costs several times what the
whole command may.

:func:`quick_schedules` answers only when it can prove the full path
(``Settings.from_env``, ``open_store``, ``Store.list_schedules``) would give the same
rows: the environment is one ``Settings`` plainly accepts (:mod:`engine.plainenv`), the
URL is a plain ``sqlite:///FILE`` of an existing file, and that database's
``alembic_version`` says it is at :data:`engine.store.schemahead.HEAD_REVISION`. It
opens the file as :mod:`engine.store.db` does (the same pragmas, ``BEGIN IMMEDIATE``)
and reads the rows of ``Store.list_schedules`` (ordered by name), decoded as the ORM
decodes them: JSON columns parsed, booleans as bools, timestamps as aware UTC.
Otherwise - a missing file, a blank or old schema, a sqlite3 error of any kind, an
environment only ``Settings`` can judge - it returns None and the verb takes the full
path, which migrates, or fails with the reason code it always gave.
tests/engine/test_quicklist.py compares both paths row for row.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engine.plainenv import plain_database_url
from engine.store.schemahead import HEAD_REVISION, VERSION_TABLE

# engine.store.db's connection settings (tests/engine/test_quicklist.py compares them).
BUSY_TIMEOUT_MS = 10_000
PRAGMAS = (
    f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}",
    "PRAGMA journal_mode = WAL",
    "PRAGMA foreign_keys = ON",
    "PRAGMA synchronous = NORMAL",
)
# A URL whose file SQLAlchemy reads exactly as written: no query, escape or odd character.
_PLAIN_SQLITE_URL = re.compile(r"sqlite:///([A-Za-z0-9_./-]+)")
JSON_COLUMNS = ("trigger_config", "args", "env_passthrough")
TIME_COLUMNS = ("next_fire_at", "last_fire_at", "lease_until", "created_at", "updated_at")


@dataclass(frozen=True)
class ScheduleView:
    """The columns of a ``schedules`` row that ``li schedule list`` (and ``--json``) show,
    with the Python values the ORM's :class:`engine.store.models.Schedule` gives."""

    name: str
    enabled: bool
    trigger_type: str
    cron_expr: str | None
    timezone: str | None
    interval_seconds: int | None
    trigger_config: dict[str, Any]
    command: str
    args: list[str]
    cwd: str | None
    timeout_seconds: int
    max_runs: int | None
    run_count: int
    env_passthrough: list[str]
    retry_max_attempts: int
    retry_backoff_seconds: int
    overlap: str
    managed_by: str | None
    next_fire_at: datetime | None
    last_fire_at: datetime | None
    lease_owner: str | None
    lease_until: datetime | None
    created_at: datetime
    updated_at: datetime


COLUMNS = tuple(ScheduleView.__dataclass_fields__)


def sqlite_file(url: str) -> Path | None:
    """The file of a plain ``sqlite:///FILE`` URL; None for any other form."""
    match = _PLAIN_SQLITE_URL.fullmatch(url)
    return Path(match.group(1)) if match else None


def quick_schedules(environ: Mapping[str, str]) -> list[ScheduleView] | None:
    """Every schedule, ordered by name, when the fast path applies (module doc); else None."""
    url = plain_database_url(environ)
    path = None if url is None else sqlite_file(url)
    if path is None or not path.is_file():
        return None
    try:
        connection = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
    except sqlite3.Error:
        return None
    try:
        rows = _read(connection)
        return None if rows is None else [_view(row) for row in rows]
    except (sqlite3.Error, ValueError, TypeError):
        return None  # the full path says what is wrong, with its reason code
    finally:
        connection.close()


def _read(connection: sqlite3.Connection) -> list[tuple[Any, ...]] | None:
    for pragma in PRAGMAS:
        connection.execute(pragma)
    connection.execute("BEGIN IMMEDIATE")
    try:
        revisions = connection.execute(f"SELECT version_num FROM {VERSION_TABLE}").fetchall()
        if revisions != [(HEAD_REVISION,)]:
            return None
        names = ", ".join(COLUMNS)
        return connection.execute(f"SELECT {names} FROM schedules ORDER BY name").fetchall()
    finally:
        connection.execute("COMMIT")


def _view(row: tuple[Any, ...]) -> ScheduleView:
    values = dict(zip(COLUMNS, row, strict=True))
    for name in JSON_COLUMNS:
        if values[name] is not None:
            values[name] = json.loads(values[name])
    for name in TIME_COLUMNS:
        if values[name] is not None:
            values[name] = _utc(values[name])
    values["enabled"] = bool(values["enabled"]) if values["enabled"] is not None else None
    return ScheduleView(**values)


def _utc(stored: object) -> datetime:
    """A SQLite timestamp as the ORM's UTCDateTime reads it: naive UTC made aware."""
    if not isinstance(stored, str):
        raise TypeError(f"timestamp stored as {type(stored).__name__}")
    moment = datetime.fromisoformat(stored)
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
