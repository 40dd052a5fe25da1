"""Several engines on one PostgreSQL: do they add throughput? (issue 19)

``python -m bench --only engines [--database-url postgresql://...]``

Each round fills a fresh database with interval schedules (every second, command
``true``), far more than one engine can fire, so every engine always has due work. Then
it starts N real ``li engine run`` processes, lets them warm up, and over a measuring
window counts the fires (run rows started in it), the CPU of the engine processes
(their own and the ``true`` commands they reaped, from /proc), and the CPU of the
PostgreSQL server when this benchmark started it. Duplicates are occurrences (schedule,
``scheduled_for``) with more than one run row, over the whole round.

The rounds are 1, 2 and 4 engines in one run; the report gives fires/s and CPU per
fire as ratios against the 1-engine round (targets: 2 engines >= 1.6x, 4 >= 2.5x,
0 duplicates). On a 2-core machine the engines, their commands and the database share
two cores, so the CPU ceiling shows up in the ratios: the CPU per fire column tells
whether an engine's work per fire stayed flat (the claim is no longer contended).

Last, the daemon's idle re-sync check at 10,000 schedules: the full-table fingerprint it
used before (count and two maxima over ``schedules``) against the change counter read it
does now, and a sync after one change (counter + the changed rows). Before, every fire
anywhere moved the fingerprint (it included the newest ``last_fire_at``), so a busy
engine reloaded the whole timetable on every sync; that line is measured too (the
re-timing of the APScheduler jobs it also did is not included).

Without ``--database-url`` (or with a SQLite one) it starts a throwaway PostgreSQL
cluster (tests/pgcluster.py; Debian's postgresql package); several engines on SQLite
are refused by design (docs/engine.md).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import func, insert, select, text

from bench.common import ratio, scratch_database
from engine.store import db as dbmod
from engine.store.models import OverlapPolicy, Schedule, ScheduleRun, TriggerType

LI = str(Path(sys.executable).parent / "li")
TICK = os.sysconf("SC_CLK_TCK")
ENGINE_COUNTS = (1, 2, 4)
SYNC_SCHEDULES = 10_000
DUPLICATES_SQL = text(
    "SELECT count(*) FROM (SELECT schedule_id, trigger_context->>'scheduled_for' AS slot"
    " FROM schedule_runs GROUP BY 1, 2 HAVING count(*) > 1) AS d"
)


@dataclass(frozen=True)
class Round:
    engines: int
    fires: int
    seconds: float
    engine_cpu: float  # seconds: engine processes and the commands they reaped
    db_cpu: float | None  # seconds: the PostgreSQL server (None: not ours to measure)
    duplicates: int

    @property
    def fires_per_second(self) -> float:
        return self.fires / self.seconds if self.seconds > 0 else 0.0

    def per_fire_ms(self, cpu: float | None) -> float | None:
        return None if cpu is None or not self.fires else 1000.0 * cpu / self.fires


def _proc_cpu(pid: int, children: bool = True) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    # After the command: state is field 3, utime 14, stime 15, cutime 16, cstime 17.
    ticks = int(fields[11]) + int(fields[12])
    if children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / TICK


def _server_cpu(postmaster: int | None) -> float | None:
    """CPU of the postmaster and its backends (None when the server is not ours)."""
    if postmaster is None:
        return None
    total = _proc_cpu(postmaster, children=False)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        if f"\nPPid:\t{postmaster}\n" in status:
            total += _proc_cpu(int(entry.name), children=False)
    return total


def _schedule_rows(count: int, now: datetime) -> list[dict[str, Any]]:
    return [
        {
            "name": f"bench-engines-{index:05d}",
            "enabled": True,
            "trigger_type": TriggerType.INTERVAL.value,
            "interval_seconds": 1,
            "trigger_config": {},
            "command": "true",
            "args": [],
            "timeout_seconds": 60,
            "run_count": 0,
            "env_passthrough": [],
            "overlap": OverlapPolicy.SKIP.value,
            "next_fire_at": now + timedelta(seconds=1),
            "created_at": now,
            "updated_at": now,
        }
        for index in range(count)
    ]


def _count_runs(url: str) -> tuple[int, int]:
    """(highest run id, duplicate occurrences) now."""
    engine = dbmod.make_engine(url)
    try:
        with engine.connect() as connection:
            top = connection.scalar(select(func.coalesce(func.max(ScheduleRun.id), 0)))
            duplicates = connection.scalar(DUPLICATES_SQL)
        return int(top or 0), int(duplicates or 0)
    finally:
        engine.dispose()


def _fires_between(url: str, first: int, last: int) -> int:
    engine = dbmod.make_engine(url)
    try:
        with engine.connect() as connection:
            count = connection.scalar(
                select(func.count(ScheduleRun.id)).where(
                    ScheduleRun.id > first, ScheduleRun.id <= last
                )
            )
        return int(count or 0)
    finally:
        engine.dispose()


def _load(url: str, schedules: int) -> None:
    engine = dbmod.make_engine(url)
    try:
        rows = _schedule_rows(schedules, datetime.now(UTC))
        with engine.begin() as connection:
            for first in range(0, len(rows), 1000):
                connection.execute(insert(Schedule), rows[first : first + 1000])
    finally:
        engine.dispose()


def _start(url: str, workdir: Path, index: int) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "LI_DATABASE_URL": url,
        "LI_COMMAND_ALLOWLIST": "true",
        "LI_SHUTDOWN_GRACE": "5",
    }
    with (workdir / f"engine-{index}.log").open("w") as sink:
        return subprocess.Popen(
            [LI, "--log-level", "warning", "engine", "run"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )


def _stop(procs: list[subprocess.Popen[str]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def measure_round(
    server_url: str,
    workdir: Path,
    engines: int,
    schedules: int,
    warm: float,
    window: float,
    postmaster: int | None,
) -> Round:
    """One round: ``engines`` daemons over ``schedules`` always-due schedules."""
    with scratch_database(workdir, server_url, f"engines{engines}") as url:
        _load(url, schedules)
        procs = [_start(url, workdir, n) for n in range(engines)]
        try:
            time.sleep(warm)
            first, _ = _count_runs(url)
            cpu0 = sum(_proc_cpu(p.pid) for p in procs)
            db0 = _server_cpu(postmaster)
            began = time.monotonic()
            time.sleep(window)
            last, _ = _count_runs(url)
            cpu1 = sum(_proc_cpu(p.pid) for p in procs)
            db1 = _server_cpu(postmaster)
            seconds = time.monotonic() - began
            dead = [p.pid for p in procs if p.poll() is not None]
        finally:
            _stop(procs)
        if dead:
            raise RuntimeError(f"engine(s) {dead} died; see their logs in {workdir}")
        _, duplicates = _count_runs(url)
        return Round(
            engines=engines,
            fires=_fires_between(url, first, last),
            seconds=seconds,
            engine_cpu=cpu1 - cpu0,
            db_cpu=None if db0 is None or db1 is None else db1 - db0,
            duplicates=duplicates,
        )


@contextmanager
def postgres_server(server_url: str | None) -> Iterator[tuple[str, int | None]]:
    """(server URL, postmaster pid or None): the given server, or a throwaway cluster."""
    if server_url is not None and not dbmod.is_sqlite(server_url):
        yield server_url, None
        return
    from tests.pgcluster import PostgresCluster

    cluster = PostgresCluster()
    cluster.start()
    try:
        pid_file = cluster.data / "postmaster.pid"
        postmaster = int(pid_file.read_text().split()[0]) if pid_file.exists() else None
        yield cluster.url(), postmaster
    finally:
        cluster.stop()


def measure(
    schedules: int, warm: float, window: float, workdir: Path, server_url: str | None
) -> tuple[list[Round], SyncCost]:
    """The 1, 2 and 4 engine rounds, in that order, on one server; then the sync cost."""
    with postgres_server(server_url) as (url, postmaster):
        rounds = [
            measure_round(url, workdir, n, schedules, warm, window, postmaster)
            for n in ENGINE_COUNTS
        ]
        return rounds, measure_sync(url, workdir, SYNC_SCHEDULES)


@dataclass(frozen=True)
class SyncCost:
    schedules: int
    full_ms: float  # the old idle check: a fingerprint over the whole schedules table
    reload_ms: float  # the old sync after any fire anywhere: fingerprint + whole timetable
    counter_ms: float  # the idle check now: one row of schedule_changes
    one_change_ms: float  # a sync after one schedule changed: counter + the changed rows


def measure_sync(server_url: str, workdir: Path, schedules: int, repeats: int = 50) -> SyncCost:
    """Idle re-sync cost at ``schedules``: the old fingerprint against the counter read."""
    from engine.store.store import Store

    with scratch_database(workdir, server_url, "sync") as url:
        _load(url, schedules)
        engine = dbmod.make_engine(url)
        try:
            with engine.begin() as connection:
                connection.execute(text("ANALYZE schedules"))  # as autovacuum would
            store = Store(engine)

            def timed(call: Any) -> float:
                call()  # warm the pool and the plan
                began = time.perf_counter()
                for _ in range(repeats):
                    call()
                return 1000.0 * (time.perf_counter() - began) / repeats

            full = timed(store.fingerprint)
            reload = timed(lambda: (store.fingerprint(), store.timetable()))
            counter = timed(store.schedule_version)
            seen = store.schedule_version()
            store.set_enabled("bench-engines-00000", False)
            changed = timed(lambda: store.schedule_changes(seen))
            return SyncCost(schedules, full, reload, counter, changed)
        finally:
            engine.dispose()


def _share(value: float, baseline: float) -> str:
    return "n/a" if baseline <= 1e-12 else f"{value / baseline:.3f}x"


def sync_report(cost: SyncCost) -> list[str]:
    """Lines for the idle re-sync comparison."""
    return [
        f"re-sync check at {cost.schedules:,} schedules (ms per sync, same run):",
        f"  full-table fingerprint (before)   {cost.full_ms:8.2f}",
        f"  + timetable reload (before, busy)  {cost.reload_ms:8.2f}",
        f"  change counter, nothing changed   {cost.counter_ms:8.2f}  "
        f"({_share(cost.counter_ms, cost.full_ms)} of the fingerprint, "
        f"{_share(cost.counter_ms, cost.reload_ms)} of the reload)",
        f"  after one change: counter + rows  {cost.one_change_ms:8.2f}",
    ]


def _ms(value: float | None) -> str:
    return "   n/a" if value is None else f"{value:6.2f}"


def report(rounds: list[Round], schedules: int) -> list[str]:
    """Lines for the console: one row per round, ratios against 1 engine."""
    base = rounds[0]
    lines = [
        f"== engines: 1, 2, 4 engines on one PostgreSQL, {schedules:,} always-due schedules ==",
        "engines  fires  fires/s  ratio   engine CPU ms/fire  ratio   db CPU ms/fire  dups",
    ]
    for r in rounds:
        engine_ms = r.per_fire_ms(r.engine_cpu)
        db_ms = r.per_fire_ms(r.db_cpu)
        base_engine = base.per_fire_ms(base.engine_cpu) or 0.0
        lines.append(
            f"{r.engines:7}  {r.fires:5}  {r.fires_per_second:7.1f}  "
            f"{ratio(r.fires_per_second, base.fires_per_second):>5}   "
            f"{_ms(engine_ms):>18}  {ratio(engine_ms or 0.0, base_engine):>5}   "
            f"{_ms(db_ms):>14}  {r.duplicates:4}"
        )
    targets = {2: 1.6, 4: 2.5}
    for r in rounds[1:]:
        got = r.fires_per_second / base.fires_per_second if base.fires_per_second else 0.0
        want = targets.get(r.engines)
        if want is not None:
            verdict = "met" if got >= want and r.duplicates == 0 else "NOT met"
            lines.append(
                f"target {r.engines} engines >= {want}x fires/s, 0 duplicates: {verdict} "
                f"({got:.2f}x, {r.duplicates} duplicates; {os.cpu_count()} CPUs)"
            )
    return lines
