"""Soak: several engines on PostgreSQL, one killed (kill -9) every K seconds.

``python -m bench.soak [--minutes 10] [--engines 3] [--kill-every 20] [--database-url URL]``

ghsim with a few pull requests that keep getting pushes, N real ``li engine run``
processes on one PostgreSQL database and the recorder action of tests/enginekit.py.
Two phases of equal length run in the same process: a calm one (no kills: the
baseline) and a chaos one (a random engine is killed with SIGKILL every K seconds and
replaced; an engine running an action at that moment is chosen when there is one).
Each phase ends with quiescence, then prints the delivery audit: events,
runs, re-fired attempts, lost events, events completed twice and duplicate action
completions, and the ratios chaos / calm. It prints numbers and asserts nothing.

Without ``--database-url`` a private PostgreSQL cluster is started (tests/pgcluster.py).
"""

from __future__ import annotations

import argparse
import random
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from engine.store import db as dbmod
from ghsim import GitHubSim
from tests.enginekit import REPO, Audit, Rig, audit, wait_until
from tests.pgcluster import PostgresCluster

PRS = 8


def _victim(rig: Rig, name: str, procs: list[subprocess.Popen[str]], chance: random.Random) -> int:
    """An engine running an action right now when there is one (a kill mid-run is the
    case that matters), else any engine."""
    busy = {
        r.engine_id.split("-")[-2]
        for r in rig.runs(name)
        if r.status == "running" and r.pid is not None and r.engine_id
    }
    running = [i for i, proc in enumerate(procs) if str(proc.pid) in busy]
    return chance.choice(running) if running else chance.randrange(len(procs))


def _phase(
    rig: Rig,
    name: str,
    seconds: float,
    engines: int,
    kill_every: float | None,
    action_seconds: float,
) -> Audit:
    chance = random.Random(7)
    rig.add_watch(name, sleep=action_seconds, max_fires_per_poll=5)
    prs = [rig.sim.open_pr(REPO, f"{name}-{i}", {f"{name}{i}.py": "0\n"}) for i in range(PRS)]
    procs = [rig.start_engine() for _ in range(engines)]
    started = time.monotonic()
    next_kill = started + (kill_every or seconds + 1)
    kills = pushes = 0
    while time.monotonic() - started < seconds:
        pr = chance.choice(prs)
        rig.sim.push(REPO, pr.number, {f"{name}{pr.number}.py": f"{pushes}\n"})
        pushes += 1
        if chance.random() < 0.3:
            rig.trigger(name)
        if kill_every is not None and time.monotonic() >= next_kill:
            victim = _victim(rig, name, procs, chance)
            procs[victim].send_signal(signal.SIGKILL)
            procs[victim].communicate(timeout=30)
            procs[victim] = rig.start_engine()
            kills += 1
            next_kill += kill_every
        time.sleep(chance.uniform(0.5, 1.5))
    for _ in range(3):  # quiescence: the newest heads and every queued retry delivered
        rig.trigger(name)
        time.sleep(1.0)
        wait_until(lambda: not [r for r in rig.runs(name) if r.status == "running"], timeout=120)
    for proc in procs:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    rig.engines.clear()
    result = audit(rig, name)
    newest = {f"{pr.number}@{rig.sim.pull(REPO, pr.number).head_sha}" for pr in prs}
    missing = newest - set(rig.succeeded(name))
    print(
        f"{name:5}: {seconds:.0f} s, {engines} engines, {kills} kills, {pushes} pushes: "
        f"{result.line()}; newest heads undelivered: {len(missing)}"
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.soak")
    parser.add_argument("--minutes", type=float, default=10.0, help="length of each phase")
    parser.add_argument("--engines", type=int, default=3)
    parser.add_argument("--kill-every", type=float, default=20.0, help="seconds")
    parser.add_argument("--database-url", default=None, help="a PostgreSQL server URL")
    parser.add_argument("--action-seconds", type=float, default=2.0, help="recorder sleep")
    options = parser.parse_args()
    cluster = None
    url = options.database_url
    if url is None:
        cluster = PostgresCluster()
        cluster.start()
        url = cluster.url()
    engine = dbmod.make_engine(url)
    dbmod.upgrade(engine)
    try:
        with tempfile.TemporaryDirectory(prefix="li-soak-") as tmp:
            with GitHubSim(Path(tmp) / "sim") as sim:
                sim.create_repo(REPO)
                seconds = options.minutes * 60
                calm_rig = Rig(sim, engine, url, Path(tmp) / "calm")
                chaos_rig = Rig(sim, engine, url, Path(tmp) / "chaos")
                try:
                    calm = _phase(
                        calm_rig, "calm", seconds, options.engines, None, options.action_seconds
                    )
                    chaos = _phase(
                        chaos_rig,
                        "chaos",
                        seconds,
                        options.engines,
                        options.kill_every,
                        options.action_seconds,
                    )
                finally:
                    calm_rig.stop_all()
                    chaos_rig.stop_all()
        per_event = [
            (
                r.retries / r.events if r.events else 0.0,
                r.duplicates / r.events if r.events else 0.0,
            )
            for r in (calm, chaos)
        ]
        print(
            f"chaos/calm: events {chaos.events}/{calm.events}; re-fired attempts per event "
            f"{per_event[1][0]:.3f} vs {per_event[0][0]:.3f}; duplicate completions per event "
            f"{per_event[1][1]:.3f} vs {per_event[0][1]:.3f}; lost {len(chaos.lost)} vs "
            f"{len(calm.lost)}; completed twice {len(chaos.twice)} vs {len(calm.twice)}"
        )
    finally:
        engine.dispose()
        if cluster is not None:
            cluster.stop()


if __name__ == "__main__":
    main()
