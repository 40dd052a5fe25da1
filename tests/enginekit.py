"""A real engine process (`li engine run`) against ghsim and a recorder command.

The recorder is a tiny shell action: it sleeps, then appends ``pr@head_sha`` to a file,
so a line in the file is one action that *finished*. Used by the durability tests
(tests/test_durability.py, tests/test_fault_injection.py) and bench/soak.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import Engine as SAEngine

from engine.models import RunStatus, ScheduleRun, TriggerType
from engine.pollconfig import validate_poll_config
from engine.pollstore import PollStore
from engine.spec import ScheduleSpec
from engine.store import Store
from tests.ghsim import GitHubSim

LI = str(Path(sys.executable).with_name("li"))
REPO = "octo/widgets"


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

    def __post_init__(self) -> None:
        self.sim.add_token(self.token, ("li-bot", 900))
        self.store = Store(self.db)
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

    def add_watch(self, name: str = "watch", sleep: float = 0.3, **config: object) -> int:
        trigger = validate_poll_config({"repo": REPO, "poll_interval_seconds": 10, **config})
        script = f'sleep {sleep}; echo "$1@$2" >> {self.recorder}'
        spec = ScheduleSpec(
            name=name,
            trigger_type=TriggerType.GITHUB_POLL,
            trigger_config=trigger.model_dump(mode="json"),
            command="sh",
            args=["-c", script, "rec", "{{ pr_number }}", "{{ head_sha }}"],
            timeout_seconds=120,
        )
        return self.store.add_schedule(spec).id

    def start_engine(self, *extra: str, **env: str) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [LI, "--log-level", "warning", "engine", "run", *extra],
            env=self.env(**env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.engines.append(proc)
        return proc

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
        return Counter(line for line in self.recorder.read_text().splitlines() if line)

    def retry_queue(self, schedule_id: int) -> list[object]:
        return list(PollStore(self.store).get_state(schedule_id).retry_events or [])

    def succeeded(self, name: str = "watch") -> Counter[str]:
        """``pr@head`` -> succeeded runs (the engine's view of completed actions)."""
        return Counter(
            f"{r.trigger_context['pr_number']}@{r.trigger_context['head_sha']}"
            for r in self.runs(name)
            if r.status == RunStatus.SUCCEEDED.value
        )
