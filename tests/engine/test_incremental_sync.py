"""The daemon's incremental re-sync (issue 19): a change counter, not a full reload.

Every definitional schedule change (add, edit, pause, resume, fire-now, remove) made
through any store bumps ``schedule_changes.version`` and stamps the row; fires do not.
The timer reads the counter on every sync and, only when it moved, the changed rows.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import Engine as SAEngine
from sqlalchemy import event

from engine.run.timer import Timer
from engine.store import db as dbmod
from engine.store.firing import Claim
from engine.store.models import ScheduleRun
from engine.store.store import Store
from tests.factories import FakeClock, interval_spec, settings_for

SCHEDULES_TABLE = re.compile(r"\bschedules\b", re.IGNORECASE)


@dataclass
class Statements:
    """Every SQL statement one engine sends while recording."""

    seen: list[str] = field(default_factory=list)

    def __call__(self, _conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        self.seen.append(statement)

    def touching_schedules(self) -> list[str]:
        return [s for s in self.seen if SCHEDULES_TABLE.search(s)]


@dataclass
class Rig:
    timer: Timer
    mine: Store
    other: Store  # another engine or the CLI: its own pool on the same database
    clock: FakeClock
    errors: list[str]
    changes: list[int]

    def job_ids(self) -> set[str]:
        assert self.timer.scheduler is not None
        return {job.id for job in self.timer.scheduler.get_jobs()}


FIRED: list[int] = []


def _no_fire(schedule_id: int, _hook: Any, _kind: str | None) -> ScheduleRun | None:
    FIRED.append(schedule_id)  # nothing is due in these tests: asserted empty below
    return None


def _rig(db_url: str, batched: bool) -> Iterator[Rig]:
    first = dbmod.make_engine(db_url)
    dbmod.upgrade(first)
    second = dbmod.make_engine(db_url)
    # The timer times jobs on the wall clock: nothing may come due during the test.
    clock = FakeClock(datetime.now(UTC))
    mine, other = Store(first, clock), Store(second, clock)
    errors: list[str] = []
    changes: list[int] = []
    timer = Timer(
        settings_for(db_url),
        mine,
        _no_fire,
        threading.Event(),
        lambda where, exc: errors.append(f"{where}: {exc}"),
        batched=batched,
        on_change=lambda: changes.append(1),
    )
    timer.start()
    FIRED.clear()
    try:
        yield Rig(timer, mine, other, clock, errors, changes)
    finally:
        assert timer.scheduler is not None
        timer.scheduler.shutdown(wait=False)
        first.dispose()
        second.dispose()


@pytest.fixture
def rig(db_url: str) -> Iterator[Rig]:
    yield from _rig(db_url, batched=False)


@pytest.fixture
def batched_rig(db_url: str) -> Iterator[Rig]:
    yield from _rig(db_url, batched=True)


@contextmanager
def _recording(store: Store) -> Iterator[Statements]:
    statements = Statements()
    event.listen(store.engine, "before_cursor_execute", statements)
    try:
        yield statements
    finally:
        event.remove(store.engine, "before_cursor_execute", statements)


def test_every_definitional_change_bumps_the_counter_and_a_fire_does_not(db: SAEngine) -> None:
    clock = FakeClock()
    store = Store(db, clock)
    start = store.schedule_version()
    row = store.add_schedule(interval_spec(name="a", every=60))
    added = store.schedule_version()
    assert added > start and store.get_schedule("a").version == added
    clock.advance(61)
    assert isinstance(store.claim_fire(row.id, "engine-x"), Claim)
    assert store.claim_due("engine-x", 5) == []
    assert store.schedule_version() == added  # fires never touch the counter
    store.set_enabled("a", False)
    paused = store.schedule_version()
    store.request_fire("a")
    assert added < paused < store.schedule_version()
    store.remove_schedule("a")
    removed = store.schedule_changes(added)
    assert removed.changed == [] and removed.removed == [row.id]
    assert removed.version == store.schedule_version()


def test_a_change_reloads_only_the_changed_rows(db: SAEngine) -> None:
    store = Store(db, FakeClock())
    for i in range(30):
        store.add_schedule(interval_spec(name=f"s{i:02d}", every=3600))
    seen = store.schedule_version()
    assert store.schedule_changes(seen).changed == []
    store.set_enabled("s07", False)
    store.add_schedule(interval_spec(name="new", every=3600))
    changes = store.schedule_changes(seen)
    names = {store.get_schedule(n).id: n for n in ("s07", "new")}
    assert {t.schedule_id for t in changes.changed} == set(names)
    paused = next(t for t in changes.changed if names[t.schedule_id] == "s07")
    assert paused.next_fire_at is None  # disabled: its job is dropped


def test_changes_made_elsewhere_are_followed_and_an_idle_sync_reads_no_schedules(
    rig: Rig,
) -> None:
    kept = rig.other.add_schedule(interval_spec(name="kept", every=3600))
    rig.timer.sync(force=True)
    assert rig.job_ids() == {str(kept.id)}
    with _recording(rig.mine) as idle:
        rig.timer.sync()
        rig.timer.sync()
    assert idle.seen and idle.touching_schedules() == []
    # Another engine or the CLI adds, pauses and removes: each is picked up.
    late = rig.other.add_schedule(interval_spec(name="late", every=3600))
    rig.timer.sync()
    assert rig.job_ids() == {str(kept.id), str(late.id)}
    rig.other.set_enabled("kept", False)
    rig.timer.sync()
    assert rig.job_ids() == {str(late.id)}
    rig.other.set_enabled("kept", True)
    rig.other.remove_schedule("late")
    rig.timer.sync()
    assert rig.job_ids() == {str(kept.id)}
    # A fire elsewhere moves no counter: the idle sync stays a one-row read.
    rig.clock.advance(3601)
    assert isinstance(rig.other.claim_fire(kept.id, "engine-other"), Claim)
    with _recording(rig.mine) as after_fire:
        rig.timer.sync()
    assert after_fire.seen and after_fire.touching_schedules() == []
    assert rig.errors == [] and FIRED == []


def test_batched_timers_keep_no_cron_or_interval_jobs_and_wake_the_dispatcher(
    batched_rig: Rig,
) -> None:
    rig = batched_rig
    rig.other.add_schedule(interval_spec(name="tick", every=3600))
    rig.timer.sync(force=True)
    assert rig.job_ids() == set() and rig.changes == [1]
    rig.timer.sync()
    assert rig.changes == [1]  # nothing changed: no wake
    rig.other.add_schedule(interval_spec(name="tock", every=3600))
    rig.timer.sync()
    assert rig.job_ids() == set() and rig.changes == [1, 1]
    assert rig.errors == []
