"""Issue 25's log acceptance: over a scripted five-minute run of a real engine, with
successes, failures, timeouts and pull-request fires, the log holds exactly one start and
one end line per run, each failure at WARNING, and no other line between start-up and
shutdown: an engine between runs says nothing.

The script: three timed schedules (a success every 15 s, a failure every 40 s, a
command that overruns its 2 s timeout every 60 s) and a ``github_poll`` schedule on
ghsim, whose pull requests are opened by the script at 30 s, 150 s and 240 s. It runs
on SQLite only: the log is the subject here, and both backends' run rows are covered by
tests/engine/test_run_logs.py.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from engine.poll.config import validate_poll_config
from engine.schedules.spec import ScheduleSpec
from engine.store import db as dbmod
from engine.store.models import TriggerType
from engine.store.store import Store
from ghsim import GitHubSim
from tests.enginekit import logged_engine
from tests.factories import interval_spec

LI = str(Path(sys.executable).with_name("li"))
SCRIPT_SECONDS = 300.0
# The run is five minutes by the clock: past pytest's default timeout, and sorted first
# (tests/conftest.py) so that one worker runs it while the other runs the rest (D77).
pytestmark = pytest.mark.timeout(SCRIPT_SECONDS + 180)
RUN_FIRST = True
PR_OPENED_AT = (30.0, 150.0, 240.0)
TOKEN = "tok-scripted-logs-0123456789"
WARNING_STATUSES = {"failed", "timed_out", "refused"}


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _schedules(store: Store) -> None:
    store.add_schedule(interval_spec(name="works", every=15, command="true", args=[]))
    store.add_schedule(interval_spec(name="breaks", every=40, command="sh", args=["-c", "exit 3"]))
    store.add_schedule(
        interval_spec(name="overruns", every=60, command="sleep", args=["10"], timeout_seconds=2)
    )
    trigger = validate_poll_config(
        {"repo": "octo/logs", "event": "pr_updated", "poll_interval_seconds": 10}
    )
    store.add_schedule(
        ScheduleSpec(
            name="prs",
            trigger_type=TriggerType.GITHUB_POLL,
            trigger_config=trigger.model_dump(mode="json"),
            command="true",
            args=[],
        )
    )


def _run_script(sim: GitHubSim, log_path: Path, env: dict[str, str]) -> None:
    with logged_engine(env, log_path) as proc:
        started = time.monotonic()
        for number, at in enumerate(PR_OPENED_AT):
            time.sleep(max(0.0, started + at - time.monotonic()))
            sim.open_pr("octo/logs", f"topic-{number}", {f"f{number}.py": "x = 1\n"})
        time.sleep(max(0.0, started + SCRIPT_SECONDS - time.monotonic()))
    assert proc.returncode == 0


def test_a_scripted_five_minute_run_logs_each_run_twice_and_nothing_else(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'li.db'}"
    engine = dbmod.make_engine(url)
    dbmod.upgrade(engine)
    # Added a minute ago, so every schedule is due as the engine starts.
    _schedules(Store(engine, lambda: datetime.now(UTC) - timedelta(minutes=1)))
    log_path = tmp_path / "engine.log"
    with GitHubSim(tmp_path / "sim") as sim:
        sim.add_token(TOKEN, ("li-bot", 900))
        sim.create_repo("octo/logs")
        env = {
            **os.environ,
            "LI_DATABASE_URL": url,
            "LI_COMMAND_ALLOWLIST": "true,sh,sleep",
            "GITHUB_API_URL": sim.url,
            "GITHUB_TOKEN": TOKEN,
        }
        _run_script(sim, log_path, env)
    records = _records(log_path)
    runs = {
        run.id: run
        for name in ("works", "breaks", "overruns", "prs")
        for run in Store(engine).list_runs(name)
    }
    engine.dispose()

    run_lines = [r for r in records if r.get("phase") in ("start", "end")]
    # From the first run line (or the start-up line, if later) to the stop (SIGTERM),
    # every line is a run line: between
    # runs, and beside them, nothing. After the stop, runs still draining may end.
    # The engine's own start-up lines may come after the first runs it fires.
    started = next(i for i, r in enumerate(records) if r["message"].endswith(" running"))
    first_run = max(records.index(run_lines[0]), started + 1)
    stop = next(i for i, r in enumerate(records) if r["message"].startswith("signal 15"))
    between = [r for r in records[first_run:stop] if r.get("phase") not in ("start", "end")]
    assert between == [], between
    drained = [r for r in records[stop + 1 :] if r.get("phase") not in ("start", "end")]
    assert all(r["level"] == "info" for r in drained), drained

    phases = Counter((r["run_id"], r["phase"]) for r in run_lines)
    assert set(phases.values()) == {1}, phases
    assert {run_id for run_id, _ in phases} == set(runs)
    assert {phase for _, phase in phases} == {"start", "end"}
    assert len(phases) == 2 * len(runs)

    by_schedule = Counter(run.schedule_name for run in runs.values())
    assert by_schedule["works"] >= 15 and by_schedule["breaks"] >= 5, by_schedule
    assert by_schedule["overruns"] >= 4 and by_schedule["prs"] == len(PR_OPENED_AT), by_schedule
    for end in (r for r in run_lines if r["phase"] == "end"):
        run = runs[end["run_id"]]
        assert end["status"] == str(run.status), (end, run)
        expected = "warning" if end["status"] in WARNING_STATUSES else "info"
        assert end["level"] == expected, end
    ends = Counter(r["status"] for r in run_lines if r["phase"] == "end")
    assert ends["failed"] == by_schedule["breaks"], ends
    assert ends["timed_out"] == by_schedule["overruns"], ends
    assert ends["succeeded"] == by_schedule["works"] + by_schedule["prs"], ends
    pr_lines = [r for r in run_lines if runs[r["run_id"]].schedule_name == "prs"]
    assert sorted({r["pr"] for r in pr_lines}) == [1, 2, 3], pr_lines
