"""What idle github_poll schedules cost: requests, rate-limit units and engine CPU.

N github_poll schedules (default 500), one per repository ``bench/r000``.. of a ghsim
simulator, each repository with one open pull request opened before the schedules were
added (so their cursors, seeded at add, are past it and nothing fires). Poll interval
60 s, command ``true``.

ghsim runs as a subprocess (``python -m ghsim``) on loopback, so the CPU measured
in this process is the engine's alone (polls, SQL, HTTP client); the simulator's CPU is
read from ``/proc`` separately. The schedules live in a scratch database, and a settable
clock shared by the Store and the Engine is moved 61 s before each
``Engine.run_once()``, so every schedule polls exactly once per pass:

1. ``Engine.start()`` on a fresh database (no ETag stored yet), then one warm-up pass: a
   full listing per repository (200), which stores the ETags;
2. K idle passes (default 5): every poll should be one conditional request answered
   304, which costs no rate limit;
3. restart (issue 19): a new engine on the same database, one pass: 0 units, since the
   ETags outlive the process; beside it a new engine after dropping every pull-list ETag
   first, as ``Engine.start()`` did before issue 19 (one unit per repository);
4. baseline, in the same run: the same N repositories listed K times by a
   :class:`engine.github.client.GitHubClient` with ``conditional=False`` (no ``If-None-Match``),
   a poller without ETags. Every answer is a 200 and costs one unit.

Requests and their statuses are counted by a transport wrapped around each client's
HTTP connection pool; rate-limit units are what ghsim itself counted, read from its
``GET /rate_limit`` (which costs nothing) before and after, with one token for the
engine and another for the baseline.

ghsim answers each keep-alive request about 40 ms late (its handler writes headers and
body separately and does not disable Nagle's algorithm, so the second write waits for
the client's delayed ACK). That is waiting, not CPU: it sets the wall times only. The
baseline and the setup therefore run on as many threads as ``Engine.run_once`` polls on.

The engine's client gets its own pacer at a very high rate: at the default 810 points
a minute one pass over 500 repositories would take 37 s of sleeping. Pacing sleeps, it
costs no CPU, so the CPU figures are unchanged by this.
"""

from __future__ import annotations

import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from bench.common import SettableClock, backend_name, bench_settings, ratio, scratch_database
from bench.ghsim_world import (
    BASELINE_TOKEN,
    ENGINE_TOKEN,
    OWNER,
    THREADS,
    CountingTransport,
    SimProcess,
    start_world,
)
from engine.config import Settings
from engine.github import GitHubClient, MemoryEtagCache, RequestPacer, SqlEtagCache
from engine.poll.config import validate_poll_config
from engine.run.daemon import Engine
from engine.schedules.spec import ScheduleSpec, check_spec
from engine.store import db as dbmod
from engine.store.models import PollState, ScheduleRun, TriggerType
from engine.store.store import Store

COMMAND = "true"
ARGS = ["{{ repo }}", "{{ pr_number }}"]
POLL_INTERVAL_SECONDS = 60
PASS_STEP_SECONDS = 61
FAST_PACE_PER_MINUTE = 6_000_000.0  # 10 us apart: pacing out of the way
TARGET_REQUESTS_PER_HOUR = 60.0  # one conditional request a poll, one poll a minute


def _fast_pacer() -> RequestPacer:
    return RequestPacer(FAST_PACE_PER_MINUTE)


def _client(settings: Settings, transport: CountingTransport, cache: Any) -> GitHubClient:
    return GitHubClient(settings, cache=cache, transport=transport, pacer=_fast_pacer())


def add_schedules(store: Store, settings: Settings, repos: list[str]) -> None:
    for index, repo in enumerate(repos):
        config = validate_poll_config(
            {"repo": repo, "poll_interval_seconds": POLL_INTERVAL_SECONDS}
        )
        spec = ScheduleSpec(
            name=f"bench-poll-{index:03d}",
            trigger_type=TriggerType.GITHUB_POLL,
            trigger_config=config.model_dump(mode="json"),
            command=COMMAND,
            args=list(ARGS),
        )
        check_spec(spec, settings.command_allowlist)
        store.add_schedule(spec)


# == the measurement ======================================================================


@dataclass(frozen=True)
class PassSet:
    """Some passes (or baseline rounds) and what they cost."""

    passes: int
    polls: int  # schedules polled (engine) or listings fetched (baseline)
    statuses: list[int]  # of the pull-list requests
    units: int  # rate-limit units, as ghsim counted them
    cpu: float  # this process's CPU seconds
    sim_cpu: float | None  # the simulator's CPU seconds
    wall: float

    @property
    def requests(self) -> int:
        return len(self.statuses)

    def count(self, status: int) -> int:
        return sum(1 for s in self.statuses if s == status)


@dataclass(frozen=True)
class PollBenchResult:
    backend: str
    repos: int
    idle_passes: int
    setup_sim: float
    setup_schedules: float
    warmup: PassSet
    idle: PassSet
    baseline: PassSet
    restart: PassSet  # a new engine process, nothing changed (issue 19)
    restart_old: PassSet  # the same, ETags dropped first as Engine.start() used to
    fired: int  # runs recorded during the warm-up and idle passes
    poll_errors: int  # schedules whose last poll recorded an error
    engine_errors: list[str]
    polls_recorded: int  # sum of poll_state.polls after the idle passes

    @property
    def requests_per_poll(self) -> float:
        return self.idle.requests / self.idle.polls if self.idle.polls else 0.0

    @property
    def requests_per_repo_hour(self) -> float:
        return self.requests_per_poll * 3600 / POLL_INTERVAL_SECONDS


def _sim_delta(before: float | None, after: float | None) -> float | None:
    return None if before is None or after is None else after - before


def _engine_passes(
    engine: Engine,
    clock: SettableClock,
    sim: SimProcess,
    transport: CountingTransport,
    passes: int,
    repos: int,
) -> PassSet:
    mark = len(transport.seen)
    units = sim.core_used(ENGINE_TOKEN)
    sim_cpu = sim.cpu_seconds()
    wall = time.perf_counter()
    cpu = time.process_time()
    for _ in range(passes):
        clock.advance(PASS_STEP_SECONDS)
        engine.run_once()
    cpu = time.process_time() - cpu
    wall = time.perf_counter() - wall
    sim_cpu = _sim_delta(sim_cpu, sim.cpu_seconds())
    units = sim.core_used(ENGINE_TOKEN) - units
    return PassSet(passes, passes * repos, transport.pulls_since(mark), units, cpu, sim_cpu, wall)


def _baseline(settings: Settings, sim: SimProcess, repos: list[str], rounds: int) -> PassSet:
    transport = CountingTransport()
    token_settings = settings.model_copy(update={"github_token": BASELINE_TOKEN})
    with _client(token_settings, transport, MemoryEtagCache()) as client:
        client.list_pulls(repos[0], conditional=False)  # connection and imports warm
        mark = len(transport.seen)
        units = sim.core_used(BASELINE_TOKEN)
        sim_cpu = sim.cpu_seconds()
        wall = time.perf_counter()
        cpu = time.process_time()
        # As many threads as Engine.run_once polls on, so the wall times compare.
        with ThreadPoolExecutor(THREADS) as pool:
            for _ in range(rounds):
                listed = pool.map(lambda repo: client.list_pulls(repo, conditional=False), repos)
                list(listed)
        cpu = time.process_time() - cpu
        wall = time.perf_counter() - wall
        sim_cpu = _sim_delta(sim_cpu, sim.cpu_seconds())
        units = sim.core_used(BASELINE_TOKEN) - units
    return PassSet(
        rounds, rounds * len(repos), transport.pulls_since(mark), units, cpu, sim_cpu, wall
    )


def _restart_pass(
    settings: Settings,
    store: Store,
    clock: SettableClock,
    sim: SimProcess,
    names: list[str],
    *,
    drop: bool,
) -> PassSet:
    """A new engine process on the same database, one pass (issue 19). ``drop``: first
    drop every pull-list ETag, as ``Engine.start()`` did before issue 19 (the baseline)."""
    transport = CountingTransport()
    client = _client(settings, transport, SqlEtagCache(store.engine))
    if drop:
        for repo in names:
            client.forget_pulls(repo)
    engine = Engine(settings, store, github=client)
    engine.start()
    try:
        return _engine_passes(engine, clock, sim, transport, 1, len(names))
    finally:
        engine.close()


def measure(
    repos: int, idle_passes: int, workdir: Path, server_url: str | None = None
) -> PollBenchResult:
    """Set up ``repos`` repositories and schedules, then warm-up, idle and baseline."""
    names = [f"{OWNER}/r{index:03d}" for index in range(repos)]
    scratch = Path(tempfile.mkdtemp(prefix="poll-", dir=workdir))
    started = time.perf_counter()
    sim = start_world(scratch, names)
    setup_sim = time.perf_counter() - started
    try:
        with scratch_database(scratch, server_url, "poll") as url:
            settings = bench_settings(url, frozenset({COMMAND})).model_copy(
                update={"github_api_url": sim.url, "github_token": ENGINE_TOKEN}
            )
            # The pull requests were opened just now (simulator time is real time);
            # the schedules are added a minute later, so their seeded cursors are past
            # every pull request and no poll fires: the passes measure idle polling.
            start = (datetime.now(UTC) + timedelta(minutes=1)).replace(microsecond=0)
            clock = SettableClock(start)
            sa_engine = dbmod.make_engine(url)
            try:
                store = Store(sa_engine, clock)
                began = time.perf_counter()
                add_schedules(store, settings, names)
                setup_schedules = time.perf_counter() - began
                transport = CountingTransport()
                client = _client(settings, transport, SqlEtagCache(sa_engine))
                engine = Engine(settings, store, github=client)
                engine.start()
                try:
                    warmup = _engine_passes(engine, clock, sim, transport, 1, repos)
                    idle = _engine_passes(engine, clock, sim, transport, idle_passes, repos)
                finally:
                    engine.close()
                restart = _restart_pass(settings, store, clock, sim, names, drop=False)
                restart_old = _restart_pass(settings, store, clock, sim, names, drop=True)
                with sa_engine.connect() as connection:
                    fired = int(connection.scalar(select(func.count(ScheduleRun.id))) or 0)
                    polls = int(connection.scalar(select(func.sum(PollState.polls))) or 0)
                    poll_errors = int(
                        connection.scalar(
                            select(func.count(PollState.schedule_id)).where(
                                PollState.last_error_reason.is_not(None)
                            )
                        )
                        or 0
                    )
            finally:
                sa_engine.dispose()
            baseline = _baseline(settings, sim, names, idle_passes)
            backend = backend_name(url)
    finally:
        sim.stop()
    return PollBenchResult(
        backend=backend,
        repos=repos,
        idle_passes=idle_passes,
        setup_sim=setup_sim,
        setup_schedules=setup_schedules,
        warmup=warmup,
        idle=idle,
        baseline=baseline,
        restart=restart,
        restart_old=restart_old,
        fired=fired,
        poll_errors=poll_errors,
        engine_errors=list(engine.errors),
        polls_recorded=polls,
    )


# == the report ===========================================================================


def _ms_per(seconds: float | None, count: int) -> str:
    if seconds is None or count == 0:
        return "n/a"
    return f"{seconds * 1000 / count:.2f}"


def _core_percent(cpu: float, polls: int, repos: int) -> float:
    """CPU share of ``repos`` schedules polling every POLL_INTERVAL_SECONDS."""
    if polls == 0:
        return 0.0
    return 100.0 * (cpu / polls) * repos / POLL_INTERVAL_SECONDS


def _responses(passes: PassSet) -> str:
    other = passes.requests - passes.count(200) - passes.count(304)
    text = f"{passes.count(200)} x 200, {passes.count(304)} x 304"
    return text + (f", {other} other" if other else "")


def report(result: PollBenchResult) -> list[str]:
    """The printed lines for one measurement."""
    idle, warmup, base = result.idle, result.warmup, result.baseline
    n, k = result.repos, result.idle_passes

    def row(label: str, value: str, note: str = "") -> str:
        return f"  {label:<34}{value:>10}  {note}".rstrip()

    def verdict(ok: bool) -> str:
        return "met" if ok else "NOT met"

    per_hour = result.requests_per_repo_hour
    lines = [
        f"github_poll idle polling ({result.backend}; {n} repositories x 1 open PR, poll "
        f"interval {POLL_INTERVAL_SECONDS} s, ghsim subprocess on loopback)",
        row(
            "setup (s)",
            f"{result.setup_sim + result.setup_schedules:.1f}",
            f"ghsim + {n} PRs {result.setup_sim:.1f}, {n} schedules added "
            f"{result.setup_schedules:.1f}",
        ),
        row(
            "warm-up pass: requests",
            str(warmup.requests),
            f"{_responses(warmup)}; {warmup.units} units (first polls: no ETag yet)",
        ),
        row(
            "idle passes: polls",
            str(idle.polls),
            f"{k} passes x {n}; poll_state.polls {result.polls_recorded} (warm-up "
            f"included); commands fired: {result.fired}",
        ),
        row("idle: requests to /pulls", str(idle.requests), _responses(idle)),
        row(
            "restart, nothing changed: units",
            str(result.restart.units),
            f"{_responses(result.restart)}; target 0: {verdict(result.restart.units == 0)}; "
            f"as before issue 19 (ETags dropped at start): {result.restart_old.units} units, "
            f"{_responses(result.restart_old)}",
        ),
        row(
            "idle: requests / repo / hour",
            f"{per_hour:.1f}",
            f"{result.requests_per_poll:.2f} a poll, one poll a minute; target "
            f"{TARGET_REQUESTS_PER_HOUR:.0f}: {verdict(abs(per_hour - 60.0) < 1e-9)}",
        ),
        row(
            "idle: rate-limit units",
            str(idle.units),
            f"as ghsim counted; 200s seen: {idle.count(200)}; target 0: "
            f"{verdict(idle.units == 0 and idle.count(200) == 0)}",
        ),
        row(
            "engine CPU per idle poll (ms)",
            _ms_per(idle.cpu, idle.polls),
            f"{idle.cpu:.2f} s CPU in this process / {idle.polls} polls",
        ),
        row(
            "  as % of one core",
            f"{_core_percent(idle.cpu, idle.polls, n):.2f}",
            f"{n} repositories polled once a minute",
        ),
        row(
            "ghsim CPU per idle request (ms)",
            _ms_per(idle.sim_cpu, idle.requests),
            "the simulator's process, its git calls included",
        ),
        row(
            "wall per idle pass (s)",
            f"{idle.wall / max(k, 1):.2f}",
            f"{n} polls on {THREADS} threads; ghsim answers ~40 ms late (Nagle)",
        ),
        row(
            "warm-up CPU per poll (ms)",
            _ms_per(warmup.cpu, warmup.polls),
            "full listings (200), ETags stored",
        ),
        f"  rate-limit units, {n} repositories x {k} polls each (same run)",
        row("  engine (ETags, If-None-Match)", str(idle.units), _responses(idle)),
        row("  baseline (conditional=False)", str(base.units), _responses(base)),
        row(
            "  ratio engine/baseline",
            ratio(idle.units, base.units),
            f"saved {base.units - idle.units} units",
        ),
        row(
            "baseline client CPU/request (ms)",
            _ms_per(base.cpu, base.requests),
            f"GitHubClient alone, no database; ghsim "
            f"{_ms_per(base.sim_cpu, base.requests)} ms/request",
        ),
    ]
    problems = []
    if result.poll_errors:
        problems.append(f"{result.poll_errors} schedules recorded a poll error")
    if result.engine_errors:
        problems.append(f"engine errors: {result.engine_errors[-1]}")
    if idle.polls != idle.requests:
        problems.append(f"{idle.polls} polls expected, {idle.requests} pull-list requests sent")
    if problems:
        lines.append("  WARNING: " + "; ".join(problems))
    return lines
