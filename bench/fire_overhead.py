"""What the engine adds to firing a trivial command, against spawning it directly.

Three timings, taken in interleaved rounds in one process so machine noise hits all:

- baseline: ``subprocess.run(["true"])``, the cheapest way to run the command;
- runner: :func:`engine.run.runner.run_action` alone (allow-list re-check, PATH lookup,
  new session, piped output read by two threads, deadline loop), no database;
- engine: :func:`engine.run.actions.fire_schedule` end to end (claim transaction, argv
  rendering, ``set_run_argv``, spawn through the runner, ``mark_started``,
  ``finish_run``, reading the run row back).

One interval schedule is fired over and over; a settable clock is moved one interval
before each fire so the occurrence is due (clock moves are outside the timed span).
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from bench.common import (
    SettableClock,
    backend_name,
    bench_settings,
    mean_ms,
    median_ms,
    ratio,
    scratch_database,
)
from engine.run.actions import fire_schedule
from engine.run.runner import RunRequest, run_action
from engine.schedules.spec import ScheduleSpec, check_spec
from engine.store import db as dbmod
from engine.store.models import OverlapPolicy, RunStatus, TriggerType
from engine.store.store import Store

COMMAND = "true"
INTERVAL_SECONDS = 60
ROUNDS = 4  # baseline/runner/engine alternate in this many blocks
WARMUP = 5  # untimed calls of each kind before the first round
TARGET_OVERHEAD_MS = 10.0
OWNER = "bench-fire-overhead"


@dataclass(frozen=True)
class FireOverheadResult:
    backend: str
    fires: int
    baseline: list[float]  # seconds per subprocess.run(["true"])
    runner: list[float]  # seconds per run_action (no database)
    engine: list[float]  # seconds per fire_schedule

    @property
    def baseline_ms(self) -> float:
        return mean_ms(self.baseline)

    @property
    def runner_ms(self) -> float:
        return mean_ms(self.runner)

    @property
    def engine_ms(self) -> float:
        return mean_ms(self.engine)

    @property
    def overhead_ms(self) -> float:
        return self.engine_ms - self.baseline_ms

    @property
    def target_met(self) -> bool:
        return self.overhead_ms < TARGET_OVERHEAD_MS


def _spawn_directly() -> float:
    started = time.perf_counter()
    subprocess.run([COMMAND], check=True)
    return time.perf_counter() - started


class _Firer:
    """Fires one ``true`` schedule through the engine, one due occurrence at a time."""

    def __init__(self, url: str) -> None:
        self.settings = bench_settings(url, frozenset({COMMAND}))
        self.clock = SettableClock()
        self.sa_engine = dbmod.make_engine(url)
        self.store = Store(self.sa_engine, self.clock)
        spec = ScheduleSpec(
            name="bench-true",
            trigger_type=TriggerType.INTERVAL,
            interval_seconds=INTERVAL_SECONDS,
            command=COMMAND,
            overlap=OverlapPolicy.SKIP,
        )
        check_spec(spec, self.settings.command_allowlist)
        self.schedule_id = self.store.add_schedule(spec).id
        self.request = RunRequest(
            argv=[COMMAND],
            cwd=None,
            env=self.settings.base_environment(),
            timeout_seconds=3600.0,
            allowlist=self.settings.command_allowlist,
            kill_grace_seconds=self.settings.kill_grace_seconds,
        )

    def fire(self) -> float:
        self.clock.advance(INTERVAL_SECONDS)
        started = time.perf_counter()
        run = fire_schedule(self.store, self.settings, self.schedule_id, OWNER)
        elapsed = time.perf_counter() - started
        if run is None or run.status != RunStatus.SUCCEEDED.value:
            detail = "not claimed" if run is None else f"{run.status} ({run.reason})"
            raise RuntimeError(f"benchmark fire did not succeed: {detail}")
        return elapsed

    def run_only(self) -> float:
        started = time.perf_counter()
        outcome = run_action(self.request)
        elapsed = time.perf_counter() - started
        if outcome.status is not RunStatus.SUCCEEDED:
            raise RuntimeError(f"run_action did not succeed: {outcome.status} ({outcome.reason})")
        return elapsed

    def close(self) -> None:
        self.sa_engine.dispose()


def measure(fires: int, workdir: Path, server_url: str | None = None) -> FireOverheadResult:
    """Time ``fires`` direct spawns, runner calls and engine fires (interleaved)."""
    with scratch_database(workdir, server_url, "fire") as url:
        firer = _Firer(url)
        try:
            for _ in range(WARMUP):
                _spawn_directly()
                firer.run_only()
                firer.fire()
            baseline: list[float] = []
            runner: list[float] = []
            engine: list[float] = []
            per_round = [fires // ROUNDS + (1 if i < fires % ROUNDS else 0) for i in range(ROUNDS)]
            for count in per_round:
                baseline.extend(_spawn_directly() for _ in range(count))
                runner.extend(firer.run_only() for _ in range(count))
                engine.extend(firer.fire() for _ in range(count))
        finally:
            firer.close()
        return FireOverheadResult(backend_name(url), fires, baseline, runner, engine)


def report(result: FireOverheadResult) -> list[str]:
    """The printed lines for one measurement."""
    base, runner, engine = result.baseline_ms, result.runner_ms, result.engine_ms
    verdict = "met" if result.target_met else "not met"
    target = f"target: overhead under {TARGET_OVERHEAD_MS:.0f} ms a fire on SQLite: "
    if result.backend == "sqlite":
        target += verdict
    else:
        target += f"n/a on {result.backend} (under the same bar it would be {verdict})"

    def row(label: str, value: float, unit: str, note: str) -> str:
        return f"  {label:<30}{value:8.2f} {unit:<9}{note}"

    return [
        f"fire overhead ({result.backend}, {result.fires} fires of `{COMMAND}` each kind)",
        row(
            "baseline subprocess.run", base, "ms/spawn", f"median {median_ms(result.baseline):.2f}"
        ),
        row(
            "runner run_action, no DB",
            runner,
            "ms/run",
            f"median {median_ms(result.runner):.2f}; {ratio(runner, base)} baseline",
        ),
        row("engine fire_schedule", engine, "ms/fire", f"median {median_ms(result.engine):.2f}"),
        row(
            "overhead = engine - baseline",
            result.overhead_ms,
            "ms/fire",
            f"runner {runner - base:.2f} + store/argv {engine - runner:.2f}",
        ),
        f"  {'ratio engine/baseline':<30}{ratio(engine, base):>8}",
        f"  {target}",
    ]
