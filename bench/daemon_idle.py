"""Daemon start-up time and idle CPU with many schedules loaded, against none.

For each schedule count (0 as the baseline, then e.g. 10,000) a fresh database is
filled with interval schedules due every hour (the first fire 10 to 60 minutes ahead,
so nothing fires while measuring), then the daemon runs in a child process
(:mod:`bench.daemon_child`). Reported per child:

- ready: seconds from spawning the process to the end of the first sync (the timer
  holds one job per schedule), split into interpreter + imports, ``Engine.start()``
  and the first sync;
- idle CPU: user + system CPU of the child over the idle window after the first sync,
  as a percentage of one core (sync polls, heartbeats, the APScheduler thread);
- child CPU total: the child's whole life from ``getrusage(RUSAGE_CHILDREN)`` in this
  process, as a cross-check; peak RSS as the child reports it.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import func, insert, select

from bench.common import backend_name, ratio, scratch_database
from bench.daemon_child import URL_VARIABLE
from engine.config import Settings
from engine.store import db as dbmod
from engine.store.models import OverlapPolicy, Schedule, TriggerType
from engine.store.store import Store

PROJECT_ROOT = Path(__file__).resolve().parent.parent
INTERVAL_SECONDS = 3600
FIRST_FIRE_MIN_SECONDS = 600  # no schedule is due within ten minutes of loading
FIRST_FIRE_SPREAD_SECONDS = 3000
INSERT_BATCH = 2000
CHILD_TIMEOUT_MARGIN_SECONDS = 180.0


@dataclass(frozen=True)
class DaemonRun:
    """One child's measurements (seconds unless named otherwise)."""

    schedules: int
    load_seconds: float  # inserting the schedules (this process, before the child)
    imported: float  # launch -> main() entered: interpreter start-up and imports
    started: float  # launch -> Engine.start() returned
    ready: float  # launch -> first sync done
    timer_jobs: int
    idle_cpu: float
    idle_wall: float
    peak_rss_kib: int
    total_cpu: float  # the child's whole life, from RUSAGE_CHILDREN

    @property
    def idle_cpu_percent(self) -> float:
        return 100.0 * self.idle_cpu / self.idle_wall if self.idle_wall > 0 else 0.0

    @property
    def first_sync(self) -> float:
        return self.ready - self.started


def _schedule_rows(count: int, now: datetime) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for index in range(count):
        offset = FIRST_FIRE_MIN_SECONDS + index * FIRST_FIRE_SPREAD_SECONDS / max(count, 1)
        rows.append(
            {
                "name": f"bench-idle-{index:05d}",
                "enabled": True,
                "trigger_type": TriggerType.INTERVAL.value,
                "interval_seconds": INTERVAL_SECONDS,
                "trigger_config": {},
                "command": "true",
                "args": [],
                "timeout_seconds": 3600,
                "run_count": 0,
                "env_passthrough": [],
                "overlap": OverlapPolicy.SKIP.value,
                "next_fire_at": now + timedelta(seconds=offset),
                "created_at": now,
                "updated_at": now,
            }
        )
    return rows


def load_schedules(url: str, count: int) -> float:
    """Bulk-insert ``count`` hourly schedules (none due soon); returns the seconds taken."""
    sa_engine = dbmod.make_engine(url)
    try:
        started = time.perf_counter()
        now = datetime.now(UTC)
        rows = _schedule_rows(count, now)
        with sa_engine.begin() as connection:
            for first in range(0, len(rows), INSERT_BATCH):
                connection.execute(insert(Schedule), rows[first : first + INSERT_BATCH])
        elapsed = time.perf_counter() - started
        store = Store(sa_engine)
        with sa_engine.connect() as connection:
            stored = connection.scalar(select(func.count(Schedule.id)))
        if stored != count:
            raise RuntimeError(f"expected {count} schedules in the database, found {stored}")
        due = store.due_schedules(now + timedelta(seconds=FIRST_FIRE_MIN_SECONDS - 1))
        if due:
            raise RuntimeError(f"{len(due)} schedules would fire during the measurement")
        return elapsed
    finally:
        sa_engine.dispose()


def parse_child_output(text: str) -> dict[str, list[str]]:
    """``{key: [values...]}`` of the child's ``key value...`` lines (last one wins)."""
    parsed: dict[str, list[str]] = {}
    for line in text.splitlines():
        words = line.split()
        if words:
            parsed[words[0]] = words[1:]
    return parsed


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_child(url: str, schedules: int, load_seconds: float, idle_seconds: float) -> DaemonRun:
    """Run the daemon child on ``url`` for ``idle_seconds`` after its first sync."""
    cpu_before = _children_cpu()
    launched = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "bench.daemon_child", str(idle_seconds), repr(launched)],
        cwd=PROJECT_ROOT,
        env={**os.environ, URL_VARIABLE: url},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=idle_seconds + CHILD_TIMEOUT_MARGIN_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        stdout, stderr = process.communicate()
        raise RuntimeError(f"daemon child timed out; stderr:\n{stderr[-2000:]}") from None
    total_cpu = _children_cpu() - cpu_before
    lines = parse_child_output(stdout)
    if process.returncode != 0 or "idle" not in lines or "ready" not in lines:
        raise RuntimeError(
            f"daemon child failed (exit {process.returncode});\nstdout:\n{stdout[-2000:]}"
            f"\nstderr:\n{stderr[-2000:]}"
        )
    ready = lines["ready"]
    errors = int(ready[3])
    if errors or "engine_error" in lines:
        raise RuntimeError(f"the engine recorded errors; stdout:\n{stdout[-2000:]}")
    # On PostgreSQL interval work has no timer job: the dispatcher claims it in batches.
    expected = schedules if dbmod.is_sqlite(url) else 0
    if int(ready[2]) != expected:
        raise RuntimeError(f"the first sync timed {ready[2]} jobs, not {expected}")
    idle = lines["idle"]
    return DaemonRun(
        schedules=schedules,
        load_seconds=load_seconds,
        imported=float(lines["imported"][0]),
        started=float(lines["started"][0]),
        ready=float(ready[0]),
        timer_jobs=int(ready[2]),
        idle_cpu=float(idle[0]),
        idle_wall=float(idle[1]),
        peak_rss_kib=int(idle[2]),
        total_cpu=total_cpu,
    )


def measure(
    schedules: int, idle_seconds: float, workdir: Path, server_url: str | None = None
) -> tuple[str, DaemonRun, DaemonRun]:
    """``(backend, baseline with 0 schedules, run with ``schedules``)``."""
    runs: list[DaemonRun] = []
    backend = "sqlite"
    for count in (0, schedules):
        with scratch_database(workdir, server_url, f"idle{count}") as url:
            backend = backend_name(url)
            load_seconds = load_schedules(url, count)
            runs.append(run_child(url, count, load_seconds, idle_seconds))
    return backend, runs[0], runs[1]


def report(backend: str, base: DaemonRun, loaded: DaemonRun) -> list[str]:
    """The printed lines: one column per child, then the ratio loaded/baseline."""

    def row(label: str, first: str, second: str, rate: str = "") -> str:
        return f"  {label:<28}{first:>12}{second:>16}{rate:>10}".rstrip()

    defaults = Settings()
    timing = (
        f"{loaded.idle_wall:.1f} s idle window, sync every {defaults.sync_interval_seconds:g} s,"
        f" heartbeat every {defaults.heartbeat_interval_seconds:g} s"
    )
    return [
        f"daemon start-up and idle CPU ({backend}; {timing})",
        row("", "0 schedules", f"{loaded.schedules:,} sched.", "ratio"),
        row("bulk insert (s)", f"{base.load_seconds:.3f}", f"{loaded.load_seconds:.3f}"),
        row(
            "start-up: ready after (s)",
            f"{base.ready:.3f}",
            f"{loaded.ready:.3f}",
            ratio(loaded.ready, base.ready),
        ),
        row("  interpreter + imports", f"{base.imported:.3f}", f"{loaded.imported:.3f}"),
        row(
            "  Engine.start()",
            f"{base.started - base.imported:.3f}",
            f"{loaded.started - loaded.imported:.3f}",
        ),
        row(
            "  first sync",
            f"{base.first_sync:.3f}",
            f"{loaded.first_sync:.3f}",
            ratio(loaded.first_sync, base.first_sync),
        ),
        row("timer jobs after first sync", str(base.timer_jobs), str(loaded.timer_jobs)),
        row(
            "idle CPU (% of one core)",
            f"{base.idle_cpu_percent:.2f}",
            f"{loaded.idle_cpu_percent:.2f}",
            ratio(loaded.idle_cpu_percent, base.idle_cpu_percent),
        ),
        row("  idle CPU seconds", f"{base.idle_cpu:.3f}", f"{loaded.idle_cpu:.3f}"),
        row(
            "child CPU, whole life (s)",
            f"{base.total_cpu:.3f}",
            f"{loaded.total_cpu:.3f}",
            ratio(loaded.total_cpu, base.total_cpu),
        ),
        row(
            "peak RSS (MiB)",
            f"{base.peak_rss_kib / 1024:.1f}",
            f"{loaded.peak_rss_kib / 1024:.1f}",
            ratio(loaded.peak_rss_kib, base.peak_rss_kib),
        ),
    ]
