"""What the operator is told (issue 25): `li schedule health` exits with one code per
unhealthy state (``--exit-zero`` opts out), a clean drain is not a loss, and
`li engine status` names each engine's state and hides the ones that stopped cleanly."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, update
from sqlalchemy.orm import Session
from typer.testing import CliRunner

from engine.api import open_readonly
from engine.cli.app import app
from engine.health.assess import EXIT_CODES, HealthState, health_exit_code
from engine.poll.config import validate_poll_config
from engine.run.actions import fire_schedule
from engine.run.daemon import Engine as LiEngine
from engine.schedules.spec import ScheduleSpec
from engine.store.models import PollState, RunStatus, ScheduleRun, TriggerType
from engine.store.pollstore import PollStore
from engine.store.store import Store
from tests.factories import interval_spec, settings_for


def li(db_url: str, *args: str) -> tuple[int, str]:
    env = {"LI_DATABASE_URL": db_url, "LI_COMMAND_ALLOWLIST": "sh"}
    result = CliRunner().invoke(app, list(args), env=env, catch_exceptions=False)
    return result.exit_code, result.stdout


def wait_until(predicate: Callable[[], bool], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not predicate():
        time.sleep(0.05)
    assert predicate(), "condition not reached in time"


def add_poll(store: Store, name: str, **state: Any) -> None:
    """A github_poll schedule whose poll state says ``state``."""
    trigger = validate_poll_config({"repo": "octo/widgets", "poll_interval_seconds": 120})
    row = store.add_schedule(
        ScheduleSpec(
            name=name,
            trigger_type=TriggerType.GITHUB_POLL,
            trigger_config=trigger.model_dump(mode="json"),
            command="sh",
            args=["-c", "true"],
        )
    )
    PollStore(store).get_state(row.id)
    with Session(store.engine) as session, session.begin():
        session.execute(update(PollState).where(PollState.schedule_id == row.id).values(**state))


def add_failing(store: Store, db_url: str, name: str) -> None:
    """An interval schedule whose newest run failed (a real run of ``sh -c 'exit 3'``)."""
    row = store.add_schedule(interval_spec(name=name, args=["-c", "exit 3"]))
    run = fire_schedule(store, settings_for(db_url), row.id, "test", manual=True)
    assert run is not None and run.status == RunStatus.FAILED.value


def states(now: datetime) -> dict[str, dict[str, Any]]:
    """Poll states that make each unhealthy state, as of ``now`` (the test's own time: a
    module-level moment goes stale while a long suite runs before this test)."""
    return {
        "blind": {"last_poll_at": now, "consecutive_auth_failures": 3, "last_http_status": 401},
        "stale": {
            "last_poll_at": now - timedelta(hours=1),
            "last_healthy_poll_at": now - timedelta(hours=1),
        },
        "overdue": {
            "last_poll_at": now,
            "last_healthy_poll_at": now,
            "poller_consecutive_cap_no_dispatch": 3,
        },
    }


@pytest.mark.parametrize(
    ("state", "code"), [("blind", 20), ("stale", 21), ("overdue", 22), ("failing", 23)]
)
def test_each_unhealthy_state_exits_with_its_own_code(
    db: Engine, db_url: str, state: str, code: int
) -> None:
    store = Store(db)
    now = datetime.now(UTC)
    add_poll(store, "fine", last_poll_at=now, last_healthy_poll_at=now)
    if state == "failing":
        add_failing(store, db_url, state)
    else:
        add_poll(store, state, **states(now)[state])
    exit_code, out = li(db_url, "schedule", "health")
    assert exit_code == code, out
    assert f"{state} " in out or f"{state}\n" in out
    exit_code, listed = li(db_url, "schedule", "health", "--json")
    assert exit_code == code and {i["name"]: i["state"] for i in json.loads(listed)} == {
        "fine": "healthy",
        state: state,
    }
    assert li(db_url, "schedule", "health", "--exit-zero") == (0, out)
    assert li(db_url, "schedule", "health", "fine")[0] == 0
    # The typed surface kdev's sweep reads pages on the same states (a failing review
    # schedule paged nobody in the sweep's digest before).
    with open_readonly(db_url) as api:
        assert {row.name: row.paging for row in api.schedule_health()} == {
            "fine": False,
            state: True,
        }


def test_the_most_severe_state_shown_decides_the_code() -> None:
    assert health_exit_code([HealthState.FAILING, HealthState.BLIND]) == 20
    assert health_exit_code([HealthState.OVERDUE, HealthState.STALE]) == 21
    assert health_exit_code([HealthState.FAILING, HealthState.DEGRADED]) == 23
    for calm in ("healthy", "degraded", "rate_limited", "never_polled", "disabled"):
        assert health_exit_code([HealthState(calm)]) == 0
    assert len(set(EXIT_CODES.values())) == len(EXIT_CODES)


def test_a_clean_drain_leaves_the_schedule_healthy(db: Engine, db_url: str) -> None:
    """SIGTERM with a run in flight: the run ends cancelled / engine_shutdown, the engine
    marks itself stopped, and health stays healthy (exit 0), not degraded for 24 h."""
    store = Store(db)
    store.add_schedule(interval_spec(name="slow", every=1, args=["-c", "sleep 60"]))
    engine = LiEngine(settings_for(db_url, shutdown_grace_seconds=0.3), store)
    engine.start()
    stop = threading.Event()
    thread = threading.Thread(target=engine.run_forever, args=(stop,))
    thread.start()
    wait_until(lambda: any(r.pid for r in store.list_runs("slow", ["running"])))
    stop.set()
    thread.join(timeout=30)
    engine.close()
    runs = store.list_runs("slow")
    assert [(r.status, r.reason) for r in runs] == [("cancelled", "engine_shutdown")]
    exit_code, listed = li(db_url, "schedule", "health", "slow", "--json")
    [item] = json.loads(listed)
    assert exit_code == 0 and item["state"] == "healthy", item
    assert item["window"]["drained"] == 1 and item["window"]["cancelled"] == 0
    status = json.loads(li(db_url, "engine", "status", "--json")[1])
    assert [e["state"] for e in status] == ["stopped"]


def test_a_run_cut_by_an_engine_that_never_stopped_is_a_loss(db: Engine, db_url: str) -> None:
    """``engine_shutdown`` written by an engine that then died mid-drain (no stopped_at)."""
    old = datetime.now(UTC) - timedelta(minutes=10)
    store = Store(db, lambda: old)
    row = store.add_schedule(interval_spec(name="cut", every=3600))
    store.register_engine("engine-gone", "elsewhere", 4242)
    with Session(db) as session, session.begin():
        session.add(
            ScheduleRun(
                schedule_id=row.id,
                schedule_name="cut",
                status=RunStatus.CANCELLED.value,
                reason="engine_shutdown",
                engine_id="engine-gone",
                started_at=old,
                finished_at=old,
                trigger_context={},
                stdout_tail="",
                stderr_tail="",
            )
        )
    exit_code, listed = li(db_url, "schedule", "health", "cut", "--json")
    [item] = json.loads(listed)
    assert item["state"] == "degraded" and item["window"]["cancelled"] == 1, item
    assert [c["code"] for c in item["causes"]] == ["runs_cancelled"]
    assert "li engine status names the engines that were lost" in item["causes"][0]["advice"]
    assert exit_code == 0


def test_engine_status_shows_states_and_hides_clean_stops(db: Engine, db_url: str) -> None:
    past = datetime.now(UTC) - timedelta(hours=1)
    Store(db, lambda: past).register_engine("engine-died", "elsewhere", 4242)
    store = Store(db)
    store.register_engine("engine-old", "here", 1)
    store.stop_engine("engine-old")
    store.register_engine("trigger-done", "here", 2)
    store.stop_engine("trigger-done")
    store.register_engine("engine-live", "elsewhere", os.getpid())
    code, out = li(db_url, "engine", "status")
    assert code == 0
    assert "engine-live" in out and "running" in out
    assert "engine-died" in out and "lost" in out
    assert "engine-old" not in out and "trigger-done" not in out
    assert "engine engine-died (host elsewhere, pid 4242) was lost: it never stopped" in out
    assert "2 engine(s) stopped cleanly are hidden; --all shows them" in out
    code, everything = li(db_url, "engine", "status", "--all")
    assert code == 0 and "engine-old" in everything and "trigger-done" in everything
    states = {e["id"]: e["state"] for e in json.loads(li(db_url, "engine", "status", "--json")[1])}
    assert states == {
        "engine-died": "lost",
        "engine-old": "stopped",
        "trigger-done": "stopped",
        "engine-live": "running",
    }
