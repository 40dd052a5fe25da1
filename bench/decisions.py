"""What keeping a decision per event (engine.poll.decisions) costs a github_poll pass.

One ghsim repository (in process, on loopback) with N open pull requests (default 100;
one in ten from a fork, so the same-repo filter excludes it), opened a second apart.
Each trial adds two fresh ``backfill`` schedules on it (``max_fires_per_poll`` N, so
every event is decided in one pass), one polled with ``keep_decisions=True`` (the
engine's behaviour) and one with ``keep_decisions=False`` (the same pass without the
decision table), in alternating order, and times with ``time.perf_counter``:

1. the first pass: N events decided (fired: claim + run row each; excluded);
2. K idle passes (default 5), interleaved between the two schedules: a 304 whose
   boundary event is already claimed, so nothing new is decided (the recording path
   returns before any SQL; the figure shows the noise floor).

Commands are not launched (``launch`` None): the pass's own work is measured. The
figure printed is the median pass time with recording as a ratio to the median without,
measured in the same run (target under 1.2x). The HTTP round trips are included in both.
"""

from __future__ import annotations

import statistics
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from bench.common import SettableClock, backend_name, scratch_database
from engine.config import Settings
from engine.github import GitHubClient, RequestPacer, SqlEtagCache
from engine.poll.config import validate_poll_config
from engine.poll.pollpass import poll_once
from engine.schedules.spec import ScheduleSpec
from engine.store import db as dbmod
from engine.store.models import TriggerType
from engine.store.pollstore import PollStore
from engine.store.store import Store
from ghsim import GitHubSim

REPO = "bench/decisions"
OWNER = "bench"


@dataclass
class DecisionBench:
    backend: str
    prs: int
    trials: int
    idle_passes: int
    first: dict[bool, list[float]] = field(default_factory=lambda: {True: [], False: []})
    idle: dict[bool, list[float]] = field(default_factory=lambda: {True: [], False: []})
    decided: int = 0


def _add(store: Store, name: str, prs: int) -> int:
    trigger = validate_poll_config(
        {"repo": REPO, "poll_interval_seconds": 60, "backfill": True, "max_fires_per_poll": prs}
    )
    spec = ScheduleSpec(
        name=name,
        trigger_type=TriggerType.GITHUB_POLL,
        trigger_config=trigger.model_dump(mode="json"),
        command="true",
        args=[],
    )
    return store.add_schedule(spec).id


def _timed_pass(
    polls: PollStore, settings: Settings, client: GitHubClient, sid: int, keep: bool
) -> tuple[float, int]:
    ticket = polls.claim_poll(sid, OWNER, manual=True)
    assert ticket is not None
    began = time.perf_counter()
    report = poll_once(polls, settings, client, ticket, OWNER, keep_decisions=keep)
    return time.perf_counter() - began, len(report.decisions)


def measure(
    prs: int, trials: int, idle_passes: int, workdir: Path, server_url: str | None
) -> DecisionBench:
    clock = SettableClock()
    token = f"tok-{uuid.uuid4().hex}"
    with (
        scratch_database(workdir, server_url, "decisions") as url,
        GitHubSim(workdir / "decisions-sim", clock=clock) as sim,
    ):
        sim.add_token(token, ("bench", 1))
        sim.create_repo(REPO)
        for i in range(prs):
            fork = {"from_fork": "mallory/decisions"} if i % 10 == 9 else {}
            sim.open_pr(REPO, f"p{i}", {f"p{i}.py": "1\n"}, **fork)  # type: ignore[arg-type]
            clock.advance(1)
        engine = dbmod.make_engine(url)
        store = Store(engine, clock)
        polls = PollStore(store)
        settings = Settings(
            database_url=url,
            database_url_is_default=False,
            command_allowlist=frozenset({"true"}),
            github_api_url=sim.url,
            github_token=token,
        )
        result = DecisionBench(backend_name(url), prs, trials, idle_passes)
        with GitHubClient(
            settings, cache=SqlEtagCache(engine), pacer=RequestPacer(1_000_000)
        ) as client:
            for trial in range(trials):
                order = (True, False) if trial % 2 == 0 else (False, True)
                ids: dict[bool, int] = {}
                for keep in order:
                    ids[keep] = _add(store, f"t{trial}-{'keep' if keep else 'none'}", prs)
                    seconds, decided = _timed_pass(polls, settings, client, ids[keep], keep)
                    result.first[keep].append(seconds)
                    result.decided = decided
                # Idle passes interleaved pass by pass, so drift hits both alike.
                for _ in range(idle_passes):
                    clock.advance(61)
                    for keep in order:
                        seconds, _ = _timed_pass(polls, settings, client, ids[keep], keep)
                        result.idle[keep].append(seconds)
        engine.dispose()
    return result


def report(result: DecisionBench) -> list[str]:
    def line(label: str, samples: dict[bool, list[float]]) -> str:
        keep, none = statistics.median(samples[True]), statistics.median(samples[False])
        ratio = keep / none if none > 0 else float("nan")
        verdict = "met" if ratio < 1.2 else "NOT met"
        return (
            f"  {label:<28} {keep * 1000:8.1f} ms vs {none * 1000:8.1f} ms without: "
            f"{ratio:.2f}x (target < 1.2x: {verdict})"
        )

    return [
        f"decision table cost ({result.backend}; {result.prs} open PRs, one in ten a fork; "
        f"{result.trials} trials, medians; ghsim in process)",
        line(f"first pass ({result.decided} decided)", result.first),
        line(f"idle pass (x{result.idle_passes} per trial)", result.idle),
    ]


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory(prefix="li-bench-") as scratch:
        print("\n".join(report(measure(100, 5, 5, Path(scratch), None))))
