"""Many App installations in one engine (issue 30, D110): are due polls on time?

The goal: mention mode every 2 minutes, 5,000 repositories spread over 10 App
installations, against one installation with 500 repositories, in the same run. Each
installation has its own budget and secondary limits at GitHub, and in li its own token,
pacer (810 points a minute) and poll lane (``LI_POLL_THREADS`` threads); three requests
a pass, so 500 repositories every 120 s are 750 requests a minute per installation,
83% of GitHub's 900 points.

The world: ghsim as a subprocess (bench.poll's), one repository per schedule with one
open pull request, every request 200 ms late (an injected delay fault), and one App
installed on one account per installation (``inst0`` .. ``inst9``, and ``solo`` for the
single setup). The engine routes each account to its installation by configuration
(``GITHUB_APP_INSTALLATIONS``), mints one token per installation and runs a real daemon
(``Engine.run_forever``). Each setup gets a fresh database; after a warm-up (every
schedule's first pass) the window is ``--intervals`` intervals. A due poll ran on time
when its pass started less than an interval after it was due; a missed one never
started (the share is against the occurrences a punctual engine would have had).
ghsim counts each installation's secondary-limit points (ghsim/secondary.py); the
share printed is its points a minute over the window against 900, and its busiest
minute.

``--per-installation N --interval S`` shrinks the world (quick mode: 2 installations of
10 repositories every 10 s against one of 10).
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from bench.common import bench_settings, scratch_database
from bench.ghsim_world import CountingTransport, SimProcess, start_world
from bench.mention_scale import LATENCY_SECONDS, _add_schedules
from engine.github import SqlEtagCache
from engine.github.appconfig import app_config_from
from engine.github.client import GitHubClient
from engine.github.installations import InstallationRouter
from engine.poll.pollpass import PassReport
from engine.run.daemon import Engine
from engine.store import db as dbmod
from engine.store.pollstore import PollTicket
from engine.store.store import Store
from ghsim.secondary import POINTS_PER_MINUTE
from tests.appkit import key_pair

GOAL_INSTALLATIONS, GOAL_PER_INSTALLATION, GOAL_INTERVAL = 10, 500, 120


class LaneRecordingEngine(Engine):
    """The real engine, noting each pass's due time (as it is fired) and start."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.due: dict[int, collections.deque[datetime]] = collections.defaultdict(
            collections.deque
        )
        self.passes: list[tuple[int, datetime, datetime]] = []  # schedule, due, started
        self._note = threading.Lock()

    def fire(self, schedule_id: int, *args: object, **kwargs: object) -> None:  # type: ignore[override]
        timing = self.store.timing_of(schedule_id)
        if timing is not None and timing[0] is not None:
            with self._note:
                self.due[schedule_id].append(timing[0])
        super().fire(schedule_id, *args, **kwargs)  # type: ignore[arg-type]

    def _run_pass(self, ticket: PollTicket, client: GitHubClient) -> PassReport:
        started = datetime.now(UTC)
        with self._note:
            queue = self.due[ticket.schedule_id]
            due = queue.popleft() if queue else None
            queue.clear()  # a fire that claimed nothing leaves no due time behind
        if due is not None:
            with self._note:
                self.passes.append((ticket.schedule_id, due, started))
        return super()._run_pass(ticket, client)


@dataclass
class SetupResult:
    label: str
    installations: int
    repos: int
    interval: int
    window: float
    due: int
    on_time: int
    late: int
    missed: int
    lags: list[float] = field(default_factory=list)
    shares: dict[str, tuple[float, float]] = field(default_factory=dict)  # mean, peak
    errors: int = 0

    @property
    def on_time_share(self) -> float:
        return min(1.0, self.on_time / self.due) if self.due else 0.0


def _key_file(workdir: Path) -> tuple[Path, str]:
    pair = key_pair()  # the tests' App key kit: one fresh 2048-bit RSA pair
    path = workdir / "app.pem"
    path.write_text(pair.private, encoding="ascii")
    path.chmod(0o600)
    return path, pair.public


def run_setup(
    label: str,
    sim: SimProcess,
    app_env: dict[str, str],
    accounts: dict[str, int],
    interval: int,
    intervals: int,
    workdir: Path,
    server_url: str | None,
) -> SetupResult:
    repos = [repo for account, count in accounts.items() for repo in _names(account, count)]
    with scratch_database(workdir, server_url, f"installations_{label}") as url:
        base = bench_settings(url)
        app = app_config_from(app_env)
        assert app is not None
        settings = base.model_copy(update={"github_api_url": sim.url, "github_app": app})
        db = dbmod.make_engine(url)
        store = Store(db)
        _add_schedules(store, settings, repos, interval)
        router = InstallationRouter(
            app, settings, cache=SqlEtagCache(db), transport=CountingTransport()
        )
        engine = LaneRecordingEngine(settings, store, router=router)
        engine.start()
        stop = threading.Event()
        daemon = threading.Thread(target=engine.run_forever, args=(stop,), daemon=True)
        daemon.start()
        try:
            deadline = time.monotonic() + 5 * interval
            while len({p[0] for p in engine.passes}) < len(repos) and time.monotonic() < deadline:
                time.sleep(0.2)
            sim.rpc("reset_secondary_usage")
            began = datetime.now(UTC)
            time.sleep(interval * intervals)
            ended = datetime.now(UTC)
            usage = sim.rpc("secondary_usage")
            time.sleep(interval)  # a pass due in the window may start up to an interval later
            errors = len(engine.errors)
        finally:
            stop.set()
            daemon.join(timeout=120)
            engine.close()
            db.dispose()
    window = (ended - began).total_seconds()
    lags = [(s - d).total_seconds() for _, d, s in engine.passes if began <= d < ended]
    due = len(repos) * intervals
    on_time = sum(1 for lag in lags if lag < interval)
    shares = {
        name: (
            counts["requests"] / window * 60 / POINTS_PER_MINUTE,
            counts["peak_points_minute"] / POINTS_PER_MINUTE,
        )
        for name, counts in sorted(usage.items())
        if name.startswith("installation:")
    }
    return SetupResult(
        label,
        len(accounts),
        len(repos),
        interval,
        window,
        due,
        min(on_time, due),
        sum(1 for lag in lags if lag >= interval),
        max(0, due - len(lags)),
        lags,
        shares,
        errors,
    )


def _names(account: str, count: int) -> list[str]:
    return [f"{account}/m{index:04d}" for index in range(count)]


def measure(
    installations: int,
    per_installation: int,
    interval: int,
    intervals: int,
    workdir: Path,
    server_url: str | None,
) -> list[SetupResult]:
    many = {f"inst{index}": per_installation for index in range(installations)}
    solo = {"solo": per_installation}
    names = [r for account, n in {**many, **solo}.items() for r in _names(account, n)]
    scratch = Path(tempfile.mkdtemp(prefix="installations-", dir=workdir))
    sim = start_world(scratch, names)
    try:
        key_file, public = _key_file(scratch)
        app = sim.rpc("create_app", "kdev-review", public)
        ids = {a: sim.rpc("install_app", app["id"], a)["id"] for a in [*many, *solo]}
        sim.rpc("inject_fault", "*", r"^/repos/", delay=LATENCY_SECONDS, times=None)
        results = []
        for label, accounts in (("one", solo), ("many", many)):
            routes = ",".join(f"{a}={ids[a]}" for a in accounts)
            env = {
                "GITHUB_APP_ID": str(app["id"]),
                "GITHUB_APP_PRIVATE_KEY_FILE": str(key_file),
                "GITHUB_APP_INSTALLATIONS": routes,
                "GITHUB_APP_TOKEN_CACHE": str(scratch / f"tokens-{label}"),
            }
            results.append(
                run_setup(label, sim, env, accounts, interval, intervals, workdir, server_url)
            )
    finally:
        sim.stop()
    return results


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values) or [0.0]
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def report(results: list[SetupResult]) -> list[str]:
    one = results[0]
    lines = [
        f"many installations (mention mode every {one.interval} s, {LATENCY_SECONDS * 1000:.0f} ms"
        f" injected latency; the goal: {GOAL_INSTALLATIONS} x {GOAL_PER_INSTALLATION}"
        f" repositories every {GOAL_INTERVAL} s; window {one.window:.0f} s)",
        f"  {'':30}" + "".join(f"{r.label:>22}" for r in results),
    ]

    def row(name: str, values: list[str]) -> None:
        lines.append(f"  {name:30}" + "".join(f"{v:>22}" for v in values))

    row(
        "installations x repositories",
        [f"{r.installations} x {r.repos // r.installations}" for r in results],
    )
    row("due polls in the window", [str(r.due) for r in results])
    row("on time / late / missed", [f"{r.on_time} / {r.late} / {r.missed}" for r in results])
    row("share of due polls on time", [f"{r.on_time_share:.1%}" for r in results])
    row(
        "lag p50 / p95 (s)",
        [f"{_pct(r.lags, 0.5):.1f} / {_pct(r.lags, 0.95):.1f}" for r in results],
    )
    row("engine errors", [str(r.errors) for r in results])
    for result in results:
        for name, (mean, peak) in result.shares.items():
            lines.append(
                f"  {result.label} {name}: {mean:.1%} of 900 points/min over the window,"
                f" busiest minute {peak:.1%}"
            )
    if one.on_time_share:
        ratio = results[-1].on_time_share / one.on_time_share
        lines.append(f"  on-time share many/one: {ratio:.2f}x")
    met = all(r.on_time_share >= 1.0 and not r.missed for r in results)
    lines.append(f"  target: every due poll on time in both setups: {'met' if met else 'not met'}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.installations", description=__doc__)
    parser.add_argument("--installations", type=int, default=GOAL_INSTALLATIONS)
    parser.add_argument("--per-installation", type=int, default=GOAL_PER_INSTALLATION)
    parser.add_argument("--interval", type=int, default=GOAL_INTERVAL)
    parser.add_argument("--intervals", type=int, default=2)
    parser.add_argument("--database-url", default=None)
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="li-bench-") as scratch:
        results = measure(
            options.installations,
            options.per_installation,
            options.interval,
            options.intervals,
            Path(scratch),
            options.database_url,
        )
    print("\n".join(report(results)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
