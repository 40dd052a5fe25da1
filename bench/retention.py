"""Storage with and without retention (issue 19): a run-history soak, then one prune.

N interval schedules share R run rows spread evenly over the last D days (default 90),
each with output tails of the size a real review run leaves (about 2 KB together), as
the engine writes them. The **baseline** is that database as it is: what the engine
kept before retention. Then :func:`engine.store.retention.prune` runs with the default
policy (30 days, at least the newest 1,000 runs per schedule) and the database is
compacted (SQLite ``VACUUM``; PostgreSQL ``VACUUM FULL``), as an operator would after a
first prune of a long history; steady state needs no compaction because the freed pages
are reused.

Printed: rows and bytes before and after, their ratios, the prune's time and rate, and
the bound retention promises: rows kept <= max(runs in 30 days, 1,000 x schedules).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import func, insert, select, text

from bench.common import backend_name, scratch_database, seed_interval_schedules
from engine.store import db as dbmod
from engine.store.models import ScheduleRun
from engine.store.retention import RunRetention, prune
from engine.store.store import Store

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
TAIL = "x" * 700  # stdout and stderr tails: a row of ~2.1 KB, as the issue measured


@dataclass
class RetentionSize:
    backend: str
    schedules: int
    runs: int
    days: int
    rows_before: int
    bytes_before: int
    rows_after: int
    bytes_after: int
    prune_seconds: float
    bound: int


def _seed(store: Store, schedules: int, runs: int, days: int) -> None:
    seed_interval_schedules(store, schedules)
    spread = timedelta(days=days)
    step = spread / max(runs, 1)
    with store.engine.begin() as connection:
        for start in range(0, runs, 20_000):
            rows = [
                {
                    "schedule_name": f"s{index % schedules:04d}",
                    "status": "succeeded",
                    "started_at": NOW - spread + step * index,
                    "finished_at": NOW - spread + step * index,
                    "trigger_context": {"scheduled_for": "2026-01-01T00:00:00Z"},
                    "argv": ["kdev", "review-pr", "--repo", "octo/widgets", "--pr", "7"],
                    "stdout_tail": TAIL,
                    "stderr_tail": TAIL,
                    "attempt": 1,
                }
                for index in range(start, min(start + 20_000, runs))
            ]
            connection.execute(insert(ScheduleRun.__table__), rows)


def _rows(store: Store) -> int:
    with store.engine.connect() as connection:
        return int(connection.scalar(select(func.count()).select_from(ScheduleRun)) or 0)


def _bytes(store: Store, url: str, path: Path | None) -> int:
    if path is not None:
        raw = store.engine.raw_connection()
        try:
            driver = raw.driver_connection
            assert driver is not None
            driver.isolation_level = None  # VACUUM cannot run inside a transaction
            driver.execute("VACUUM")
        finally:
            raw.close()
        return path.stat().st_size
    with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.execute(text("VACUUM FULL"))
        return int(connection.scalar(text("SELECT pg_database_size(current_database())")) or 0)


def measure(schedules: int, runs: int, days: int, workdir: Path, url: str | None) -> RetentionSize:
    """Seed, measure, prune with the defaults, measure again."""
    with scratch_database(workdir, url, f"retention{runs}") as database:
        engine = dbmod.make_engine(database)
        try:
            store = Store(engine, clock=lambda: NOW)
            _seed(store, schedules, runs, days)
            path = Path(database.removeprefix("sqlite:///")) if dbmod.is_sqlite(database) else None
            rows_before, bytes_before = _rows(store), _bytes(store, database, path)
            policy = RunRetention()
            began = time.perf_counter()
            prune(store.in_transaction, policy, NOW)
            seconds = time.perf_counter() - began
            rows_after, bytes_after = _rows(store), _bytes(store, database, path)
        finally:
            engine.dispose()
    in_window = runs * min(policy.keep_days, days) // days
    bound = max(in_window, policy.keep_per_schedule * schedules)
    return RetentionSize(
        backend_name(database),
        schedules,
        runs,
        days,
        rows_before,
        bytes_before,
        rows_after,
        bytes_after,
        seconds,
        min(bound, runs),
    )


def report(size: RetentionSize) -> list[str]:
    mb = 1024 * 1024
    pruned = size.rows_before - size.rows_after
    return [
        f"retention ({size.backend}): {size.schedules} schedules, {size.runs:,} runs over "
        f"{size.days} days, default policy (30 days, newest 1,000 per schedule kept)",
        f"  baseline, no retention: {size.rows_before:,} rows, {size.bytes_before / mb:.1f} MB",
        f"  after one prune:        {size.rows_after:,} rows, {size.bytes_after / mb:.1f} MB "
        f"(rows x{size.rows_after / max(size.rows_before, 1):.2f}, "
        f"bytes x{size.bytes_after / max(size.bytes_before, 1):.2f} of the baseline)",
        f"  bound kept: {size.bound:,} rows; within bound: {size.rows_after <= size.bound}",
        f"  prune: {pruned:,} rows in {size.prune_seconds:.1f} s "
        f"({pruned / max(size.prune_seconds, 1e-9):,.0f} rows/s)",
    ]
