"""The dispatcher (engine.run.dispatch): batch claims bounded by free slots, woken on change.

Real stores on SQLite and PostgreSQL, real threads; ``launch`` is the engine's hand-off,
here a recorder that gives the slot back at once.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta

import pytest

from engine.run.dispatch import Dispatcher
from engine.store import db as dbmod
from engine.store.firing import Claim
from engine.store.store import Store
from tests.factories import interval_spec


def wait_until(predicate: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError("condition not reached in time")


@dataclass
class Launcher:
    slots: threading.BoundedSemaphore
    claims: list[Claim] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    hold: bool = False  # keep the slots (the actions are "still running")

    def __call__(self, claim: Claim) -> None:
        with self.lock:
            self.claims.append(claim)
        if not self.hold:
            self.slots.release()


@dataclass
class Crew:
    stores: list[Store]
    stopping: threading.Event
    errors: list[str]
    dispatchers: list[Dispatcher] = field(default_factory=list)

    def dispatcher(self, store: Store, slots: int, idle: float) -> tuple[Dispatcher, Launcher]:
        semaphore = threading.BoundedSemaphore(slots)
        launcher = Launcher(semaphore)
        dispatcher = Dispatcher(
            store,
            f"engine-{len(self.dispatchers)}",
            semaphore,
            launcher,
            batch_size=slots,
            idle_seconds=idle,
            kill_grace_seconds=0.5,
            stopping=self.stopping,
            record_error=lambda where, exc: self.errors.append(f"{where}: {exc}"),
        )
        self.dispatchers.append(dispatcher)
        return dispatcher, launcher


@pytest.fixture
def crew(db_url: str) -> Iterator[Crew]:
    first = dbmod.make_engine(db_url)
    dbmod.upgrade(first)
    engines = [first, dbmod.make_engine(db_url), dbmod.make_engine(db_url)]
    stopping = threading.Event()
    team = Crew([Store(e) for e in engines], stopping, [])
    try:
        yield team
    finally:
        stopping.set()
        for dispatcher in team.dispatchers:
            dispatcher.join(timeout=10)
        for engine in engines:
            engine.dispose()


def _add_due(store: Store, names: list[str]) -> list[int]:
    due = store.clock() - timedelta(seconds=1)
    return [
        store.add_schedule(interval_spec(name=n, every=3600), first_fire_at=due).id for n in names
    ]


def test_three_dispatchers_fire_every_due_schedule_once(crew: Crew) -> None:
    ids = _add_due(crew.stores[0], [f"s{i:03d}" for i in range(90)])
    launchers = []
    for store in crew.stores:
        dispatcher, launcher = crew.dispatcher(store, slots=4, idle=0.5)
        launchers.append(launcher)
    for dispatcher in crew.dispatchers:
        dispatcher.start()
    wait_until(lambda: sum(len(x.claims) for x in launchers) >= len(ids))
    time.sleep(0.5)  # nothing more may come
    counts = Counter(c.schedule_id for x in launchers for c in x.claims)
    assert counts == Counter(dict.fromkeys(ids, 1))
    assert crew.errors == []


def test_a_dispatcher_claims_no_more_than_its_free_slots(crew: Crew) -> None:
    ids = _add_due(crew.stores[0], [f"s{i}" for i in range(10)])
    dispatcher, launcher = crew.dispatcher(crew.stores[0], slots=3, idle=0.2)
    launcher.hold = True
    dispatcher.start()
    wait_until(lambda: len(launcher.claims) == 3)
    time.sleep(0.6)
    assert len(launcher.claims) == 3  # every slot busy: the other 7 stay unclaimed
    assert len(crew.stores[1].due_schedules()) == 7
    launcher.hold = False
    for _ in range(3):
        launcher.slots.release()
    wait_until(lambda: len(launcher.claims) == len(ids))
    assert {c.schedule_id for c in launcher.claims} == set(ids)


def test_a_wake_claims_a_schedule_added_elsewhere_without_waiting_out_the_idle_sleep(
    crew: Crew,
) -> None:
    dispatcher, launcher = crew.dispatcher(crew.stores[0], slots=2, idle=60.0)
    dispatcher.start()
    time.sleep(0.5)  # asleep now: nothing is due, the idle sleep is a minute
    [added] = _add_due(crew.stores[1], ["late"])
    dispatcher.wake()
    wait_until(lambda: len(launcher.claims) == 1, timeout=10.0)
    assert launcher.claims[0].schedule_id == added and crew.errors == []
