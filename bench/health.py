"""What ``li schedule health`` costs as schedules and runs grow (issue 19).

N interval schedules share R run rows, spread evenly over the last 30 days (so the 24 h
health window holds about 1/30 of them), inserted in bulk. Timed with
``time.perf_counter``: ``engine.health.status.schedule_health`` over all schedules, the same
call the CLI and the metrics sweep make, median of a few calls after one warm-up.

- **indexed**: the schema at head (migration 0008 indexes runs by schedule name);
- **before**: the same database after dropping the two name indexes, as before 0008
  (measured only at the small size: without the index it is schedules x runs).

Printed: both times and their ratio at the small size, and the indexed time at the
large size (goal: under 0.5 s at 500 schedules and 1M runs).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import insert, text

from bench.common import backend_name, scratch_database, seed_interval_schedules
from engine.health.status import schedule_health
from engine.store import db as dbmod
from engine.store.models import ScheduleRun
from engine.store.store import Store

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
SPREAD = timedelta(days=30)
INDEXES = ("ix_schedule_runs_name_id", "ix_schedule_runs_name_started")


@dataclass
class HealthSize:
    schedules: int
    runs: int
    seed_seconds: float
    indexed: float
    before: float | None = None


def _seed(store: Store, schedules: int, runs: int) -> float:
    began = time.perf_counter()
    seed_interval_schedules(store, schedules)
    step = SPREAD / max(runs, 1)
    chunk = 20_000
    with store.engine.begin() as connection:
        for start in range(0, runs, chunk):
            rows = []
            for index in range(start, min(start + chunk, runs)):
                moment = NOW - SPREAD + step * index
                rows.append(
                    {
                        "schedule_name": f"s{index % schedules:04d}",
                        "status": "failed" if index % 7 == 0 else "succeeded",
                        "started_at": moment,
                        "finished_at": moment,
                        "trigger_context": {},
                        "stdout_tail": "",
                        "stderr_tail": "",
                        "attempt": 1,
                    }
                )
            connection.execute(insert(ScheduleRun.__table__), rows)
    return time.perf_counter() - began


def _time_health(store: Store, calls: int = 3) -> float:
    schedule_health(store, now=NOW)  # warm-up
    samples = []
    for _ in range(calls):
        began = time.perf_counter()
        report = schedule_health(store, now=NOW)
        samples.append(time.perf_counter() - began)
        assert report and report[0].facts.losses is not None
    return statistics.median(samples)


def _drop_indexes(store: Store) -> None:
    with store.engine.begin() as connection:
        for name in INDEXES:
            connection.execute(text(f"DROP INDEX {name}"))


def measure_size(
    schedules: int, runs: int, workdir: Path, server_url: str | None, *, before: bool
) -> tuple[str, HealthSize]:
    with scratch_database(workdir, server_url, f"health{schedules}x{runs}") as url:
        engine = dbmod.make_engine(url)
        try:
            store = Store(engine, clock=lambda: NOW)
            seeded = _seed(store, schedules, runs)
            if engine.dialect.name == "postgresql":
                with engine.begin() as connection:
                    connection.execute(text("ANALYZE schedule_runs"))
            size = HealthSize(schedules, runs, seeded, _time_health(store))
            if before:
                _drop_indexes(store)
                size.before = _time_health(store, calls=1)
        finally:
            engine.dispose()
    return backend_name(url), size


def report(backend: str, sizes: list[HealthSize]) -> list[str]:
    lines = [f"health: li schedule health over all schedules ({backend})"]
    for size in sizes:
        line = (
            f"  {size.schedules:>5} schedules x {size.runs:>9,} runs "
            f"(seeded in {size.seed_seconds:.1f} s): indexed {size.indexed * 1000:.1f} ms"
        )
        if size.before is not None:
            line += (
                f", without the 0008 indexes {size.before * 1000:.1f} ms "
                f"(indexed/before = {size.indexed / size.before:.3f})"
            )
        lines.append(line)
    largest = sizes[-1]
    verdict = "met" if largest.indexed < 0.5 else "NOT met"
    lines.append(
        f"  goal < 500 ms at 500 x 1,000,000; at {largest.schedules} x {largest.runs:,}: "
        f"{largest.indexed * 1000:.1f} ms ({verdict} at this size)"
    )
    return lines
