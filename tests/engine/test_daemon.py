"""The engine process: fires, refusals, leases, recovery, sync and shutdown."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine as SAEngine

from engine.config import Settings
from engine.errors import Conflict, DatabaseError, LiError
from engine.run.actions import fire_schedule
from engine.run.daemon import Engine
from engine.store import db as dbmod
from engine.store.models import RunStatus, ScheduleRun
from engine.store.store import Claim, Store
from tests.factories import FakeClock, interval_spec, settings_for


def wait_until(predicate: Callable[[], bool], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not reached in time")


def run_due(settings: Settings, store: Store) -> list[ScheduleRun]:
    """Start an engine, fire everything due once, stop it."""
    engine = started_engine(settings, store)
    try:
        return engine.run_once()
    finally:
        engine.close()


def started_engine(settings: Settings, store: Store) -> Engine:
    engine = Engine(settings, store)
    engine.start()
    return engine


def test_run_once_fires_a_due_schedule_and_records_output(db: SAEngine, db_url: str) -> None:
    clock = FakeClock()
    store = Store(db, clock)
    store.add_schedule(
        interval_spec(args=["-c", "echo out-{{ schedule_name }}; echo err >&2; exit 3"])
    )
    clock.advance(61)
    [run] = run_due(settings_for(db_url), store)
    assert run.status == RunStatus.FAILED.value and run.exit_code == 3
    assert run.reason == "nonzero_exit"
    assert run.argv == ["sh", "-c", "echo out-tick; echo err >&2; exit 3"]
    assert run.stdout_tail == "out-tick\n" and run.stderr_tail == "err\n"
    assert run.pid is not None and run.finished_at is not None


def test_an_allow_list_revoked_after_add_refuses_the_fire(db: SAEngine, db_url: str) -> None:
    clock = FakeClock()
    store = Store(db, clock)
    store.add_schedule(interval_spec())
    clock.advance(61)
    [run] = run_due(settings_for(db_url, allow=("true",)), store)
    assert run.status == RunStatus.REFUSED.value
    assert run.reason == "command_not_allowlisted" and run.pid is None


def test_an_undefined_template_variable_refuses_the_fire(db: SAEngine, db_url: str) -> None:
    clock = FakeClock()
    store = Store(db, clock)
    store.add_schedule(interval_spec(args=["-c", "echo {{ pr_number }}"]))
    clock.advance(61)
    [run] = run_due(settings_for(db_url), store)
    assert (run.status, run.reason) == (RunStatus.REFUSED.value, "template_undefined")
    assert run.argv is None


def test_a_command_missing_from_path_is_refused(db: SAEngine, db_url: str) -> None:
    clock = FakeClock()
    store = Store(db, clock)
    store.add_schedule(interval_spec(command="no-such-tool-li", args=[]))
    clock.advance(61)
    [run] = run_due(settings_for(db_url, allow=("no-such-tool-li",)), store)
    assert (run.status, run.reason) == (RunStatus.REFUSED.value, "command_not_found")


def test_a_cwd_removed_after_add_refuses_the_fire(
    db: SAEngine, db_url: str, tmp_path: Path
) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    clock = FakeClock()
    store = Store(db, clock)
    store.add_schedule(interval_spec(cwd=str(workdir)))
    workdir.rmdir()
    clock.advance(61)
    [run] = run_due(settings_for(db_url), store)
    assert (run.status, run.reason) == (RunStatus.REFUSED.value, "cwd_missing")


def test_the_action_gets_a_minimal_environment_plus_passthrough(
    db: SAEngine, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LI_TEST_SECRET_CANARY", "do-not-leak")
    monkeypatch.setenv("LI_TEST_PASSED", "passed-value")
    clock = FakeClock()
    store = Store(db, clock)
    store.add_schedule(interval_spec(args=["-c", "env"], env_passthrough=["LI_TEST_PASSED"]))
    clock.advance(61)
    [run] = run_due(settings_for(db_url), store)
    names = {line.split("=", 1)[0] for line in run.stdout_tail.splitlines() if "=" in line}
    assert "LI_TEST_PASSED" in names
    assert "LI_TEST_SECRET_CANARY" not in names
    assert names <= {"PATH", "HOME", "LANG", "LI_TEST_PASSED", "PWD", "SHLVL", "_"}


def test_a_second_engine_on_one_sqlite_file_is_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'li.db'}"
    sa = dbmod.make_engine(url)
    dbmod.upgrade(sa)
    first = started_engine(settings_for(url), Store(sa))
    try:
        with pytest.raises(Conflict) as caught:
            Engine(settings_for(url), Store(sa)).start()
        assert caught.value.reason == "engine_already_running"
        assert str(os.getpid()) in caught.value.message
    finally:
        first.close()
    second = started_engine(settings_for(url), Store(sa))
    second.close()
    sa.dispose()


def test_an_engine_refuses_a_database_not_at_head(db_url: str) -> None:
    sa = dbmod.make_engine(db_url)
    with pytest.raises(DatabaseError) as caught:
        Engine(settings_for(db_url), Store(sa)).start()
    sa.dispose()
    assert caught.value.reason == "schema_not_at_head"
    assert "li db upgrade" in caught.value.message


def test_start_up_resolves_a_claim_whose_process_never_launched(db: SAEngine, db_url: str) -> None:
    clock = FakeClock()
    store = Store(db, clock)
    row = store.add_schedule(interval_spec())
    store.register_engine("crashed", "host", 1)
    clock.advance(61)
    claim = store.claim_fire(row.id, "crashed")
    assert isinstance(claim, Claim)
    clock.advance(3600)
    engine = started_engine(settings_for(db_url), store)
    engine.close()
    run = store.get_run(claim.run_id)
    assert (run.status, run.reason) == (RunStatus.CANCELLED.value, "abandoned_before_launch")
    assert [r.id for r in engine.recovered] == [claim.run_id]
    assert store.get_schedule("tick").lease_owner is None


class FlakyStore(Store):
    """A store whose first claim breaks, as a dropped connection would."""

    broke = False

    def claim_fire(
        self, schedule_id: int, owner: str, *, manual: bool = False, kill_grace_seconds: float = 5.0
    ) -> Claim | ScheduleRun | None:
        if not self.broke:
            self.broke = True
            raise LiError("connection dropped", "database_error")
        return super().claim_fire(
            schedule_id, owner, manual=manual, kill_grace_seconds=kill_grace_seconds
        )


def test_an_iteration_error_is_recorded_and_the_loop_goes_on(db: SAEngine, db_url: str) -> None:
    clock = FakeClock()
    store = FlakyStore(db, clock)
    store.add_schedule(interval_spec(name="a"))
    store.add_schedule(interval_spec(name="b"))
    clock.advance(61)
    engine = Engine(settings_for(db_url, max_concurrent_actions=1), store)
    engine.start()
    try:
        runs = engine.run_once()
    finally:
        engine.close()
    assert len(runs) == 1 and runs[0].status == RunStatus.SUCCEEDED.value
    assert len(engine.errors) == 1 and "connection dropped" in engine.errors[0]
    [row] = [e for e in store.list_engines() if e.id == engine.engine_id]
    assert any("connection dropped" in e for e in row.last_errors)


def test_the_daemon_fires_on_time_and_picks_up_schedules_added_elsewhere(
    db: SAEngine, db_url: str
) -> None:
    store = Store(db)
    store.add_schedule(interval_spec(name="fast", every=1))
    engine = started_engine(settings_for(db_url), store)
    stop = threading.Event()
    thread = threading.Thread(target=engine.run_forever, args=(stop,))
    thread.start()
    try:
        wait_until(lambda: len(store.list_runs("fast", ["succeeded"])) >= 2)
        # Another process (here: another Store) adds a schedule; the sync picks it up.
        other = Store(db)
        other.add_schedule(interval_spec(name="late", every=1))
        wait_until(lambda: len(store.list_runs("late", ["succeeded"])) >= 1)
        # ... and a pause made elsewhere stops the fires.
        other.set_enabled("fast", False)
        time.sleep(1.0)
        count = len(store.list_runs("fast"))
        time.sleep(2.0)
        assert len(store.list_runs("fast")) == count
    finally:
        stop.set()
        thread.join(timeout=30)
    assert not thread.is_alive()
    engine.close()


def test_shutdown_cancels_an_action_that_outlives_the_grace(db: SAEngine, db_url: str) -> None:
    store = Store(db)
    store.add_schedule(interval_spec(name="slow", every=1, args=["-c", "sleep 60"]))
    engine = started_engine(settings_for(db_url, shutdown_grace_seconds=0.5), store)
    stop = threading.Event()
    thread = threading.Thread(target=engine.run_forever, args=(stop,))
    thread.start()
    wait_until(lambda: any(r.pid for r in store.list_runs("slow", ["running"])))
    began = time.monotonic()
    stop.set()
    thread.join(timeout=30)
    engine.close()
    assert time.monotonic() - began < 15
    runs = store.list_runs("slow")
    assert runs and all(r.status != RunStatus.RUNNING.value for r in runs)
    assert any((r.status, r.reason) == (RunStatus.CANCELLED.value, "engine_shutdown") for r in runs)


def test_a_manual_fire_does_not_move_the_timetable(db: SAEngine, db_url: str) -> None:
    clock = FakeClock()
    store = Store(db, clock)
    row = store.add_schedule(interval_spec(every=3600))
    before = store.get_schedule("tick").next_fire_at
    run = fire_schedule(store, settings_for(db_url), row.id, "cli", manual=True)
    assert run is not None and run.status == RunStatus.SUCCEEDED.value
    assert run.trigger_context["trigger"] == "manual"
    assert store.get_schedule("tick").next_fire_at == before


def test_leases_of_a_stopped_engine_are_released(db: SAEngine, db_url: str) -> None:
    clock = FakeClock()
    store = Store(db, clock)
    row = store.add_schedule(interval_spec(every=60))
    engine = started_engine(settings_for(db_url), store)
    clock.advance(61)
    claim = store.claim_fire(row.id, engine.engine_id)
    assert isinstance(claim, Claim)
    engine.close()
    assert store.get_schedule("tick").lease_owner is None
    assert store.live_engine_ids(timedelta(seconds=60)) == set()


def test_the_global_cap_limits_concurrent_actions(
    db: SAEngine, db_url: str, tmp_path: Path
) -> None:
    clock = FakeClock()
    store = Store(db, clock)
    log = tmp_path / "log"
    for name in ("a", "b", "c"):
        store.add_schedule(
            interval_spec(
                name=name,
                args=[
                    "-c",
                    f"echo start $(date +%s.%N) >> {log}; sleep 0.4; "
                    f"echo end $(date +%s.%N) >> {log}",
                ],
            )
        )
    clock.advance(61)
    engine = started_engine(settings_for(db_url, max_concurrent_actions=1), store)
    try:
        runs = engine.run_once()
    finally:
        engine.close()
    assert len(runs) == 3
    events = sorted(
        (float(t), kind) for kind, t in (line.split() for line in log.read_text().splitlines())
    )
    running = peak = 0
    for _, kind in events:
        running += 1 if kind == "start" else -1
        peak = max(peak, running)
    assert peak == 1
