"""Shared plumbing for the benchmarks: throwaway databases, settings, a settable clock."""

from __future__ import annotations

import statistics
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from engine.config import Settings
from engine.store import db as dbmod


class SettableClock:
    """A thread-safe clock (aware UTC) that only moves when told to."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime.now(UTC)
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> datetime:
        with self._lock:
            self._now += timedelta(seconds=seconds)
            return self._now


def backend_name(url: str) -> str:
    """``sqlite`` or ``postgresql`` (the dialect of ``url``)."""
    return "sqlite" if dbmod.is_sqlite(url) else make_url(url).get_backend_name()


@contextmanager
def scratch_database(workdir: Path, server_url: str | None, label: str) -> Iterator[str]:
    """A blank database migrated to head; SQLite in ``workdir`` unless ``server_url``.

    With a PostgreSQL ``server_url`` a throwaway database is created beside the one the
    URL names (the role needs CREATEDB) and dropped afterwards.
    """
    if server_url is None or dbmod.is_sqlite(server_url):
        url = f"sqlite:///{workdir / f'{label}.db'}"
        _migrate(url)
        yield url
        return
    server = dbmod.make_engine(server_url)  # normalises the driver to psycopg
    admin = create_engine(server.url, isolation_level="AUTOCOMMIT")
    name = f"li_bench_{label}_{uuid.uuid4().hex[:8]}"
    rendered = server.url.set(database=name).render_as_string(hide_password=False)
    server.dispose()
    try:
        with admin.connect() as connection:
            connection.execute(text(f'CREATE DATABASE "{name}"'))
        _migrate(rendered)
        yield rendered
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def _migrate(url: str) -> None:
    engine = dbmod.make_engine(url, create_parent=True)
    try:
        dbmod.upgrade(engine)
    finally:
        engine.dispose()


def bench_settings(url: str, allow: frozenset[str] = frozenset({"true"})) -> Settings:
    """Engine settings for a benchmark: defaults except the database and allow-list."""
    return Settings(database_url=url, database_url_is_default=False, command_allowlist=allow)


def mean_ms(samples: list[float]) -> float:
    """Mean of ``samples`` (seconds) in milliseconds."""
    return statistics.fmean(samples) * 1000.0


def median_ms(samples: list[float]) -> float:
    """Median of ``samples`` (seconds) in milliseconds."""
    return statistics.median(samples) * 1000.0


def ratio(value: float, baseline: float) -> str:
    """``value / baseline`` as ``"12.3x"``, or ``"n/a"`` when the baseline is ~0."""
    if baseline <= 1e-12:
        return "n/a"
    return f"{value / baseline:.1f}x"


def seed_interval_schedules(store: Any, count: int) -> None:
    """``count`` interval schedules ``s0000``, ``s0001``, ... firing ``true`` every minute."""
    from engine.schedules.spec import ScheduleSpec
    from engine.store.enums import OverlapPolicy, TriggerType

    for number in range(count):
        store.add_schedule(
            ScheduleSpec(
                name=f"s{number:04d}",
                trigger_type=TriggerType.INTERVAL,
                interval_seconds=60,
                command="true",
                args=[],
                overlap=OverlapPolicy.SKIP,
            )
        )
