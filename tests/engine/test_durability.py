"""Issue 11: a stop, a crash or a database blip never loses a claimed event.

Graceful stop (SIGTERM to a real `li engine run`), continuous and fenced orphan
recovery, durable writes across a database lock, repair of unrecorded outcomes, and no
busy loop while another engine holds a lease.
"""

from __future__ import annotations

import json
import signal
import socket
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine as SAEngine
from sqlalchemy import event, text

from engine.errors import DatabaseError
from engine.poll.config import validate_poll_config
from engine.run.daemon import Engine
from engine.run.runbook import RunBook
from engine.schedules.spec import ScheduleSpec
from engine.store import db as dbmod
from engine.store.models import RunStatus, TriggerType
from engine.store.pollstore import PollStore
from engine.store.store import Claim, FinishedRun, Store
from ghsim import GitHubSim
from tests.enginekit import LI, REPO, Rig, wait_until
from tests.factories import settings_for


@pytest.fixture
def rig(db: SAEngine, db_url: str, tmp_path: Path) -> Iterator[Rig]:
    with GitHubSim(tmp_path / "sim") as sim:
        sim.create_repo(REPO)
        made = Rig(sim, db, db_url, tmp_path)
        try:
            yield made
        finally:
            made.stop_all()


def _poll_spec(name: str = "watch") -> ScheduleSpec:
    trigger = validate_poll_config({"repo": REPO, "poll_interval_seconds": 600})
    return ScheduleSpec(
        name=name,
        trigger_type=TriggerType.GITHUB_POLL,
        trigger_config=trigger.model_dump(mode="json"),
        command="sh",
        args=["-c", "true"],
    )


def _claim(store: Store, sid: int, owner: str, pr: int = 1) -> Claim:
    polls = PollStore(store)
    ticket = polls.claim_poll(sid, owner, manual=True)
    assert ticket is not None
    claim = polls.claim_event(
        ticket,
        pr_number=pr,
        occurred_at=datetime(2026, 1, 1, tzinfo=UTC),
        head_sha=f"sha{pr}",
        context={"pr_number": pr, "head_sha": f"sha{pr}"},
        argv=None,
        owner=owner,
        cursor_to=None,
    )
    assert claim is not None
    return claim


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


# -- graceful stop ---------------------------------------------------------------------


def test_sigterm_hands_back_unlaunched_events_and_a_restart_delivers_each_once(
    rig: Rig,
) -> None:
    sid = rig.add_watch(sleep=1.5)
    prs = [rig.sim.open_pr(REPO, f"f{i}", {f"f{i}.py": "1\n"}) for i in range(4)]
    engine = rig.start_engine("--drain-timeout", "20s", LI_MAX_CONCURRENT_ACTIONS="1")
    rig.trigger()
    # Every event claimed (the pass is over) and the first one launched.
    assert wait_until(lambda: len(rig.runs()) == 4 and any(r.pid for r in rig.runs()))
    time.sleep(0.3)
    engine.send_signal(signal.SIGTERM)
    engine.communicate(timeout=60)
    assert engine.returncode == 0, rig.log_of(engine)
    assert "Traceback" not in rig.log_of(engine)
    runs = rig.runs()
    finished = [r for r in runs if r.status == RunStatus.SUCCEEDED.value]
    handed_back = [r for r in runs if r.reason == "engine_shutdown"]
    # The launched action finished within the drain timeout; the rest went back, in
    # one transaction (one timestamp), and are queued for another attempt.
    assert len(finished) == 1 and len(handed_back) == 3, [(r.status, r.reason) for r in runs]
    assert len({r.finished_at for r in handed_back}) == 1
    assert all(r.pid is None for r in handed_back)
    assert len(rig.retry_queue(sid)) == 3
    assert sum(rig.recorded().values()) == 1
    # A restart delivers the three, each as attempt 2 of its fire.
    again = rig.start_engine()
    rig.trigger()
    assert wait_until(lambda: len(rig.succeeded()) == 4, timeout=60), rig.log_of(again)
    expected = {f"{pr.number}@{pr.head_sha}" for pr in prs}
    assert set(rig.succeeded()) == expected and max(rig.succeeded().values()) == 1
    retried = [r for r in rig.runs() if r.attempt == 2]
    assert sorted(r.fire_id for r in retried) == sorted(r.id for r in handed_back)
    assert rig.recorded() == dict.fromkeys(expected, 1)
    # `li schedule runs` shows each attempt as an attempt of its fire.
    shown = subprocess.run(
        [LI, "schedule", "runs", "watch", "--json"],
        env=rig.env(),
        capture_output=True,
        text=True,
        check=True,
    )
    rows = json.loads(shown.stdout)
    assert sorted((r["fire_id"], r["attempt"]) for r in rows if r["attempt"] == 2) == sorted(
        (r.id, 2) for r in handed_back
    )
    table = subprocess.run(
        [LI, "schedule", "runs", "watch"], env=rig.env(), capture_output=True, text=True
    )
    assert f"2 of fire {handed_back[0].id}" in table.stdout


# -- continuous, fenced recovery --------------------------------------------------------


def test_a_live_engine_recovers_runs_of_an_engine_that_died_after_it_started(
    db: SAEngine, db_url: str
) -> None:
    store = Store(db)
    sid = store.add_schedule(_poll_spec()).id
    engine = Engine(settings_for(db_url), store)
    engine.start()
    stop = threading.Event()
    thread = threading.Thread(target=engine.run_forever, args=(stop,))
    thread.start()
    try:
        store.register_engine("engine-dead", socket.gethostname(), _dead_pid())
        claim = _claim(store, sid, "engine-dead")
        assert wait_until(
            lambda: store.get_run(claim.run_id).status != RunStatus.RUNNING.value, timeout=10
        )
    finally:
        stop.set()
        thread.join(timeout=30)
        engine.close()
    run = store.get_run(claim.run_id)
    assert (run.status, run.reason) == (RunStatus.CANCELLED.value, "abandoned_before_launch")
    [queued] = PollStore(store).get_state(sid).retry_events
    assert queued["fire_id"] == claim.run_id


def test_an_engine_back_from_a_pause_cannot_finish_or_launch_a_recovered_run(
    db: SAEngine,
) -> None:
    store = Store(db)
    sid = store.add_schedule(_poll_spec()).id
    store.register_engine("engine-paused", "elsewhere", 1)
    claim = _claim(store, sid, "engine-paused")
    store.mark_started(claim.run_id, 4242)
    # Another engine sees the paused one's heartbeat as expired and recovers the run.
    [orphan] = store.recover_orphans({"engine-other"})
    assert orphan.reason == "engine_lost"
    # The paused engine resumes: its writes are fenced off.
    done = FinishedRun(status=RunStatus.SUCCEEDED, exit_code=0)
    assert store.finish_run(claim.run_id, done, owner="engine-paused") is False
    assert store.set_run_argv(claim.run_id, ["sh"], owner="engine-paused") is False
    run = store.get_run(claim.run_id)
    assert (run.status, run.reason) == (RunStatus.CANCELLED.value, "engine_lost")
    # on_engine_lost defaults to refire for github_poll: queued once.
    assert len(PollStore(store).get_state(sid).retry_events) == 1


# -- database blips --------------------------------------------------------------------


class Blip:
    """Holds the database's write lock from another connection for ``seconds``.

    SQLite: ``BEGIN EXCLUSIVE`` on a raw sqlite3 connection, the store's busy timeout
    cut to 200 ms. PostgreSQL: ``LOCK TABLE``, the store's lock_timeout set to 200 ms.
    """

    def __init__(self, db_url: str) -> None:
        self.db_url = db_url
        self.store_engine = dbmod.make_engine(db_url)
        sqlite = dbmod.is_sqlite(db_url)

        @event.listens_for(self.store_engine, "connect")
        def short_waits(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            if sqlite:
                cursor.execute("PRAGMA busy_timeout = 200")
            else:
                cursor.execute("SET lock_timeout = '200ms'")
                dbapi_connection.commit()
            cursor.close()

    def hold(self, seconds: float) -> threading.Thread:
        locked = threading.Event()

        def holder() -> None:
            path = dbmod.sqlite_path(self.db_url)
            if path is not None:
                connection = sqlite3.connect(path, isolation_level=None)
                connection.execute("BEGIN EXCLUSIVE")
                locked.set()
                time.sleep(seconds)
                connection.execute("COMMIT")
                connection.close()
                return
            other = dbmod.make_engine(self.db_url)
            with other.begin() as conn:
                conn.execute(text("LOCK TABLE schedule_runs, schedules IN ACCESS EXCLUSIVE MODE"))
                locked.set()
                time.sleep(seconds)
            other.dispose()

        thread = threading.Thread(target=holder)
        thread.start()
        assert locked.wait(10)
        return thread


def test_finishing_a_run_retries_across_a_held_lock(db: SAEngine, db_url: str) -> None:
    blip = Blip(db_url)
    store = Store(blip.store_engine)
    sid = store.add_schedule(_poll_spec()).id
    claim = _claim(store, sid, "engine-a")
    holder = blip.hold(2.0)
    started = time.monotonic()
    assert store.finish_run(claim.run_id, FinishedRun(status=RunStatus.SUCCEEDED), owner="engine-a")
    holder.join()
    assert time.monotonic() - started >= 1.0  # it did wait the blip out
    assert store.get_run(claim.run_id).status == RunStatus.SUCCEEDED.value
    blip.store_engine.dispose()


def test_an_outcome_the_database_refused_is_written_on_the_next_loop(
    db: SAEngine, db_url: str
) -> None:
    blip = Blip(db_url)
    store = Store(blip.store_engine, write_retry_seconds=0.3)
    sid = store.add_schedule(_poll_spec()).id
    claim = _claim(store, sid, "engine-a")
    book = RunBook()
    book.started(claim.run_id)
    holder = blip.hold(2.0)
    book.finish(store, claim.run_id, FinishedRun(status=RunStatus.SUCCEEDED), "engine-a")
    holder.join()
    assert store.get_run(claim.run_id).status == RunStatus.RUNNING.value  # kept in memory
    assert book.repair(store, "engine-a") == 1
    run = store.get_run(claim.run_id)
    assert run.status == RunStatus.SUCCEEDED.value
    assert store.get_schedule("watch").lease_owner is None
    blip.store_engine.dispose()


def test_without_retries_a_held_lock_fails_the_write(db: SAEngine, db_url: str) -> None:
    blip = Blip(db_url)
    store = Store(blip.store_engine, write_retry_seconds=0)
    sid = store.add_schedule(_poll_spec()).id
    claim = _claim(store, sid, "engine-a")
    holder = blip.hold(1.0)
    with pytest.raises(DatabaseError):
        store.finish_run(claim.run_id, FinishedRun(status=RunStatus.SUCCEEDED), owner="engine-a")
    holder.join()
    blip.store_engine.dispose()


# -- no busy loop ----------------------------------------------------------------------


def test_an_idle_engine_waiting_for_a_lease_held_elsewhere_stays_quiet(
    db: SAEngine, db_url: str
) -> None:
    holder_store = Store(dbmod.make_engine(db_url))
    sid = holder_store.add_schedule(_poll_spec()).id
    # Another live engine (this process: alive) holds the poll lease; the schedule is due.
    holder_store.register_engine("engine-holder", socket.gethostname(), 1)
    ticket = PollStore(holder_store).claim_poll(sid, "engine-holder", manual=True)
    assert ticket is not None
    holder_store.request_fire("watch")
    counted = dbmod.make_engine(db_url)
    begins: list[float] = []
    event.listen(counted, "begin", lambda _conn: begins.append(time.monotonic()))
    store = Store(counted)
    # The documented defaults of the loops (sync 2 s, heartbeat 5 s).
    settings = settings_for(db_url, sync_interval_seconds=2.0, heartbeat_interval_seconds=5.0)
    engine = Engine(settings, store)
    engine.start()
    stop = threading.Event()
    thread = threading.Thread(target=engine.run_forever, args=(stop,))
    beat = threading.Event()

    def heartbeat() -> None:  # the holder stays alive
        while not beat.wait(0.5):
            holder_store.heartbeat("engine-holder")

    beating = threading.Thread(target=heartbeat)
    beating.start()
    thread.start()
    try:
        time.sleep(1.0)  # start-up
        window_start = time.monotonic()
        time.sleep(5.0)
        window = [t for t in begins if t >= window_start]
    finally:
        stop.set()
        thread.join(timeout=30)
        beat.set()
        beating.join()
        engine.close()
    rate = len(window) / 5.0
    print(f"\nidle engine under a foreign lease: {rate:.1f} transactions/s")
    assert rate < 5.0, f"{rate:.1f} transactions per second while idle"
    assert holder_store.get_schedule("watch").lease_owner == "engine-holder"
    holder_store.engine.dispose()
    counted.dispose()
