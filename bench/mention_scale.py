"""Mention mode at scale (issue 19): do due polls run on time, at what request rate?

The goal is 500 ``mentions`` schedules polled every 2 minutes with 200 ms of GitHub
latency: three requests a pass (pulls and the two comment feeds), 750 a minute. The
benchmark keeps that load per minute but may shrink it in time: N repositories at an
interval of ``N / 500 x 120`` seconds send the same 750 requests a minute (default 100
repositories every 24 s; ``--repos 500 --interval 120`` is the full size).

The world: ghsim as a subprocess (bench.poll's), one repository per schedule with one
open pull request, and every request answered 200 ms late (an injected delay fault, on
top of ghsim's own ~40 ms keep-alive delay). Each configuration gets a fresh database
with N ``mentions`` schedules added at once (so they are all due together: the worst
case) and a real daemon (``Engine.run_forever``: APScheduler, the poll pool, the pacer):

- **baseline**: the settings before issue 19, 2 poll threads and 600 requests a minute;
- **derived**: the defaults now, ``LI_POLL_THREADS`` and ``LI_GITHUB_RATE`` unset
  (7 threads, 810 points a minute, from GitHub's documented limits).

After one warm-up interval (the first passes read everything and store the ETags), the
window is ``--intervals`` intervals. A due poll is an occurrence whose due time
(``next_fire_at`` when the pass was started) falls in the window; it ran on time when
its pass started less than one interval after that due time (before the next one was
due). Since a late pass also pushes the next due time back, the share is taken against
the occurrences a punctual engine would have had: N x intervals. Requests a minute are
those the engine's client sent in the window; the share of the secondary limit is their
points (all reads: 1 each) against GitHub's 900 a minute.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from bench.common import backend_name, bench_settings, scratch_database
from bench.ghsim_world import BASELINE_TOKEN, ENGINE_TOKEN, OWNER, CountingTransport, start_world
from engine.config import Settings
from engine.github import GitHubClient, RequestPacer, SqlEtagCache
from engine.github.limits import REST_POINTS_PER_MINUTE
from engine.poll.config import validate_poll_config
from engine.poll.pollpass import PassReport
from engine.run.daemon import Engine
from engine.schedules.spec import ScheduleSpec, check_spec
from engine.store import db as dbmod
from engine.store.models import TriggerType
from engine.store.store import Store

LATENCY_SECONDS = 0.2
WARMUP_LIMIT_INTERVALS = 5
GOAL_REPOS, GOAL_INTERVAL = 500, 120
MENTIONS = {
    "handle": "bench-bot",
    "allowlist": [1],
    "self_user_id": 2,
    "verbs": ["review"],
    "default_verb": "review",
}


@dataclass
class PassRecord:
    schedule_id: int
    due: datetime
    started: datetime
    seconds: float


class RecordingEngine(Engine):
    """The real engine, noting each poll pass's due time, start and duration."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.passes: list[PassRecord] = []
        self._passes_lock = threading.Lock()

    def poll(self, schedule_id: int, *, manual: bool = False) -> PassReport | None:
        timing = self.store.timing_of(schedule_id)
        started, clock = datetime.now(UTC), time.perf_counter()
        report = super().poll(schedule_id, manual=manual)
        if report is not None and timing is not None and timing[0] is not None:
            record = PassRecord(schedule_id, timing[0], started, time.perf_counter() - clock)
            with self._passes_lock:
                self.passes.append(record)
        return report


@dataclass
class ConfigResult:
    label: str
    threads: int
    rate: int
    repos: int
    interval: int
    window: float
    due: int  # occurrences a punctual engine would have had in the window
    on_time: int
    late: int
    requests: int
    statuses: dict[int, int] = field(default_factory=dict)
    lags: list[float] = field(default_factory=list)
    pass_seconds: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def on_time_share(self) -> float:
        return min(1.0, self.on_time / self.due) if self.due else 0.0

    @property
    def per_minute(self) -> float:
        return self.requests / self.window * 60 if self.window else 0.0

    @property
    def secondary_share(self) -> float:
        return self.per_minute / REST_POINTS_PER_MINUTE


def _add_schedules(store: Store, settings: Settings, repos: list[str], interval: int) -> None:
    for index, repo in enumerate(repos):
        config = validate_poll_config(
            {
                "repo": repo,
                "poll_interval_seconds": interval,
                "event": "mentions",
                "mentions": MENTIONS,
            }
        )
        spec = ScheduleSpec(
            name=f"bench-mention-{index:03d}",
            trigger_type=TriggerType.GITHUB_POLL,
            trigger_config=config.model_dump(mode="json"),
            command="true",
            args=["{{ repo }}", "{{ pr_number }}"],
        )
        check_spec(spec, settings.command_allowlist)
        store.add_schedule(spec)


def run_config(
    label: str,
    overrides: Mapping[str, object],
    token: str,
    sim_url: str,
    repos: list[str],
    interval: int,
    intervals: int,
    workdir: Path,
    server_url: str | None,
) -> ConfigResult:
    """One configuration: fresh database, schedules, a daemon for warm-up plus window."""
    with scratch_database(workdir, server_url, f"mention_{label}") as url:
        base = bench_settings(url)
        settings = base.model_copy(
            update={"github_api_url": sim_url, "github_token": token, **overrides}
        )
        db = dbmod.make_engine(url)
        store = Store(db)
        _add_schedules(store, settings, repos, interval)
        transport = CountingTransport()
        client = GitHubClient(
            settings,
            cache=SqlEtagCache(db),
            transport=transport,
            pacer=RequestPacer(settings.github_requests_per_minute),
        )
        engine = RecordingEngine(settings, store, github=client)
        engine.start()
        stop = threading.Event()
        daemon = threading.Thread(target=engine.run_forever, args=(stop,), daemon=True)
        daemon.start()
        try:
            # Warm-up: every schedule's first pass (full listings, ETags stored).
            deadline = time.monotonic() + WARMUP_LIMIT_INTERVALS * interval
            while len({p.schedule_id for p in engine.passes}) < len(repos):
                if time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            mark, began = len(transport.seen), datetime.now(UTC)
            time.sleep(interval * intervals)
            ended, seen = datetime.now(UTC), transport.seen[mark:]
            # A pass due in the window may start up to an interval later and still count.
            time.sleep(interval)
            errors = list(engine.errors)
        finally:
            logging.disable(logging.WARNING)  # passes cut off by the stop are not findings
            stop.set()
            daemon.join(timeout=120)
            engine.close()
            db.dispose()
            logging.disable(logging.NOTSET)
    window = (ended - began).total_seconds()
    due = [p for p in engine.passes if began <= p.due < ended]
    lags = [(p.started - p.due).total_seconds() for p in due]
    statuses: dict[int, int] = {}
    for _, status in seen:
        statuses[status] = statuses.get(status, 0) + 1
    return ConfigResult(
        label=label,
        threads=settings.poll_threads,
        rate=settings.github_requests_per_minute,
        repos=len(repos),
        interval=interval,
        window=window,
        due=len(repos) * intervals,
        on_time=sum(1 for lag in lags if lag < interval),
        late=sum(1 for lag in lags if lag >= interval),
        requests=len(seen),
        statuses=statuses,
        lags=lags,
        pass_seconds=[p.seconds for p in due],
        errors=errors,
    )


def measure(
    repos: int, interval: int | None, intervals: int, workdir: Path, server_url: str | None
) -> tuple[str, list[ConfigResult]]:
    """Baseline and derived settings against one ghsim with injected latency."""
    interval = interval or max(10, round(repos * GOAL_INTERVAL / GOAL_REPOS))
    names = [f"{OWNER}/m{index:03d}" for index in range(repos)]
    scratch = Path(tempfile.mkdtemp(prefix="mentions-", dir=workdir))
    sim = start_world(scratch, names)
    try:
        sim.rpc("inject_fault", "*", r"^/repos/", delay=LATENCY_SECONDS, times=None)
        configs = [
            ("baseline", {"poll_threads_setting": 2, "github_requests_per_minute": 600}),
            ("derived", {}),
        ]
        tokens = {"baseline": BASELINE_TOKEN, "derived": ENGINE_TOKEN}
        results = [
            run_config(
                label,
                overrides,
                tokens[label],
                sim.url,
                names,
                interval,
                intervals,
                workdir,
                server_url,
            )
            for label, overrides in configs
        ]
    finally:
        sim.stop()
    return backend_name(server_url or "sqlite://"), results


def _pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def report(backend: str, results: list[ConfigResult]) -> list[str]:
    first = results[0]
    load = first.repos * 3 / first.interval * 60
    lines = [
        f"mention mode at scale ({backend}; {first.repos} repositories every {first.interval} s"
        f" = {load:.0f} requests/min; the goal, {GOAL_REPOS} every {GOAL_INTERVAL} s, is"
        f" {GOAL_REPOS * 3 / GOAL_INTERVAL * 60:.0f}; {LATENCY_SECONDS * 1000:.0f} ms injected"
        f" latency; window {first.window:.0f} s)",
        f"  {'':34}" + "".join(f"{r.label:>14}" for r in results),
    ]

    def row(name: str, values: list[str]) -> None:
        lines.append(f"  {name:34}" + "".join(f"{v:>14}" for v in values))

    row("poll threads / pace (per min)", [f"{r.threads} / {r.rate}" for r in results])
    row("due polls in the window", [str(r.due) for r in results])
    row("ran on time (lag < interval)", [str(r.on_time) for r in results])
    row("share of due polls on time", [f"{r.on_time_share:.1%}" for r in results])
    row(
        "lag p50 / p95 (s)",
        [f"{_pct(r.lags, 0.5):.1f} / {_pct(r.lags, 0.95):.1f}" for r in results],
    )
    row(
        "pass time median (s)", [f"{statistics.median(r.pass_seconds or [0]):.2f}" for r in results]
    )
    row("requests / min", [f"{r.per_minute:.0f}" for r in results])
    row("share of 900 points/min", [f"{r.secondary_share:.1%}" for r in results])
    row("statuses", [" ".join(f"{k}:{v}" for k, v in sorted(r.statuses.items())) for r in results])
    row("engine errors", [str(len(r.errors)) for r in results])
    if len(results) == 2 and results[0].on_time_share:
        ratio = results[1].on_time_share / results[0].on_time_share
        lines.append(f"  on-time share derived/baseline: {ratio:.2f}x")
    met = results[-1].on_time_share >= 1.0
    lines.append(
        f"  target: 100% of due polls on time with the derived settings: "
        f"{'met' if met else 'not met'}"
    )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.mention_scale", description=__doc__)
    parser.add_argument("--repos", type=int, default=100)
    parser.add_argument("--interval", type=int, default=None, help="default: repos/500 x 120 s")
    parser.add_argument("--intervals", type=int, default=2, help="intervals measured")
    parser.add_argument("--database-url", default=None)
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="li-bench-") as scratch:
        backend, results = measure(
            options.repos, options.interval, options.intervals, Path(scratch), options.database_url
        )
    print("\n".join(report(backend, results)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
