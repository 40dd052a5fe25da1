"""A real engine process (`li engine run`) against ghsim and a recorder command.

The recorder is a tiny shell action: it sleeps, then appends ``pr@head_sha`` to a file,
so a line in the file is one action that *finished*. Used by the durability tests
(tests/engine/test_durability.py, tests/e2e/test_fault_injection.py) and bench/soak.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import Engine as SAEngine
from sqlalchemy import select

from engine.poll.config import validate_poll_config
from engine.schedules.spec import ScheduleSpec
from engine.store.models import PollClaim, RunStatus, ScheduleRun, TriggerType
from engine.store.pollstore import PollStore
from engine.store.store import Store
from ghsim import GitHubSim

LI = str(Path(sys.executable).with_name("li"))
REPO = "octo/widgets"


@contextmanager
def logged_engine(env: dict[str, str], log_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """``li --log-format json engine run`` with its log (stderr) in ``log_path``, for the
    block; then SIGTERM, and the engine must stop within 60 s."""
    with log_path.open("w") as log_file:
        proc = subprocess.Popen(
            [LI, "--log-format", "json", "engine", "run"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log_file,
        )
    try:
        yield proc
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


def wait_until(predicate: Callable[[], bool], timeout: float = 30.0, step: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


@dataclass
class Rig:
    """ghsim (real time) + a database + a recorder file; engines run as subprocesses."""

    sim: GitHubSim
    db: SAEngine
    db_url: str
    workdir: Path
    token: str = field(default_factory=lambda: f"tok-{uuid.uuid4().hex}")
    engines: list[subprocess.Popen[str]] = field(default_factory=list)
    engine_logs: list[Path] = field(default_factory=list)
    all_engines: list[subprocess.Popen[str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.sim.add_token(self.token, ("li-bot", 900))
        self.store = Store(self.db)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.recorder = self.workdir / "recorded.txt"
        self.recorder.touch()

    def env(self, **extra: str) -> dict[str, str]:
        return {
            **os.environ,
            "LI_DATABASE_URL": self.db_url,
            "LI_COMMAND_ALLOWLIST": "sh",
            "GITHUB_API_URL": self.sim.url,
            "GITHUB_TOKEN": self.token,
            "LI_SYNC_INTERVAL": "0.2",
            "LI_KILL_GRACE": "1",
            **extra,
        }

    def add_watch(
        self,
        name: str = "watch",
        sleep: float = 0.3,
        retry_backoff_seconds: int = 30,
        **config: object,
    ) -> int:
        trigger = validate_poll_config({"repo": REPO, "poll_interval_seconds": 10, **config})
        # Each line: pr@head, the pid of the engine that started the action ($PPID: sh is
        # the action itself) and when it finished (the fault test's outlived oracle).
        script = f'sleep {sleep}; echo "$1@$2 $PPID $(date +%s.%N)" >> {self.recorder}'
        spec = ScheduleSpec(
            name=name,
            trigger_type=TriggerType.GITHUB_POLL,
            trigger_config=trigger.model_dump(mode="json"),
            command="sh",
            args=["-c", script, "rec", "{{ pr_number }}", "{{ head_sha }}"],
            timeout_seconds=120,
            retry_backoff_seconds=retry_backoff_seconds,
        )
        return self.store.add_schedule(spec).id

    def start_engine(self, *extra: str, **env: str) -> subprocess.Popen[str]:
        # Output goes to a file, never to a pipe nobody drains: a full pipe would block
        # the engine's logging threads (its heartbeat among them).
        log = self.workdir / f"engine-{len(self.engine_logs)}.log"
        self.engine_logs.append(log)
        with log.open("w") as sink:
            proc = subprocess.Popen(
                [LI, "--log-level", "warning", "engine", "run", *extra],
                env=self.env(**env),
                stdout=sink,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=True,
            )
        self.engines.append(proc)
        self.all_engines.append(proc)
        return proc

    def log_of(self, proc: subprocess.Popen[str]) -> str:
        """What an engine this rig started printed (stdout and stderr)."""
        index = [id(p) for p in self.all_engines].index(id(proc))
        return self.engine_logs[index].read_text(errors="replace")

    def stop_all(self) -> None:
        for proc in self.engines:
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
            proc.communicate(timeout=30)
        self.engines.clear()

    def trigger(self, name: str = "watch") -> None:
        self.store.request_fire(name)

    def runs(self, name: str = "watch") -> list[ScheduleRun]:
        return self.store.list_runs(name, limit=100000)

    def recorded(self) -> Counter[str]:
        """``pr@head`` -> how many times the recorder action finished for it."""
        return Counter(completion.key for completion in self.completions())

    def completions(self) -> list[Completion]:
        """Every finished recorder action, in the order they finished."""
        found = []
        for line in self.recorder.read_text().splitlines():
            if line.strip():
                key, engine_pid, at = line.split()
                found.append(Completion(key, int(engine_pid), float(at)))
        return found

    def retry_queue(self, schedule_id: int) -> list[object]:
        return list(PollStore(self.store).get_state(schedule_id).retry_events or [])

    def succeeded(self, name: str = "watch") -> Counter[str]:
        """``pr@head`` -> succeeded runs (the engine's view of completed actions)."""
        return Counter(
            f"{r.trigger_context['pr_number']}@{r.trigger_context['head_sha']}"
            for r in self.runs(name)
            if r.status == RunStatus.SUCCEEDED.value
        )


@dataclass(frozen=True)
class Completion:
    """One finished recorder action: its event, the engine that ran it, when (epoch)."""

    key: str
    engine_pid: int
    finished_at: float


@dataclass
class Audit:
    """The delivery oracle over everything a database recorded (see the fault test)."""

    events: int  # claims: one per fired event
    runs: int
    retries: int  # attempts after the first
    lost: list[str]  # claimed events without a succeeded attempt, with their attempts
    twice: list[str]  # claimed events with more than one succeeded attempt
    duplicates: int  # recorder lines beyond one per event: idempotent re-deliveries
    still_running: int

    def line(self) -> str:
        return (
            f"{self.events} events, {self.runs} runs, {self.retries} re-fired attempts, "
            f"{len(self.lost)} lost, {len(self.twice)} completed twice, "
            f"{self.duplicates} duplicate action completions"
        )


def audit(rig: Rig, name: str = "watch") -> Audit:
    runs = rig.runs(name)
    by_id = {r.id: r for r in runs}
    fires: dict[int, list[ScheduleRun]] = {}
    for run in runs:
        fires.setdefault(run.fire_id or run.id, []).append(run)
    sid = rig.store.get_schedule(name).id
    query = select(PollClaim.pr_number, PollClaim.head_sha, PollClaim.run_id).where(
        PollClaim.schedule_id == sid
    )
    with rig.db.connect() as conn:
        claims = list(conn.execute(query))
    lost, twice = [], []
    for pr, sha, run_id in claims:
        key = f"{pr}@{sha}"
        attempts = fires.get(by_id[run_id].fire_id or run_id, []) if run_id in by_id else []
        done = sum(r.status == RunStatus.SUCCEEDED.value for r in attempts)
        if done == 0:
            tried = ", ".join(f"#{r.id} a{r.attempt} {r.status}/{r.reason}" for r in attempts)
            lost.append(f"{key} [{tried or f'no run {run_id}'}]")
        elif done > 1:
            twice.append(key)
    return Audit(
        events=len(claims),
        runs=len(runs),
        retries=sum(1 for r in runs if r.attempt > 1),
        lost=lost,
        twice=twice,
        duplicates=sum(count - 1 for count in rig.recorded().values()),
        still_running=sum(1 for r in runs if r.status == RunStatus.RUNNING.value),
    )
