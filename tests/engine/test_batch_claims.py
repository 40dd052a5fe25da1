"""Batch claims (issue 19): engines take disjoint batches of due work, exactly once.

``Store.claim_due`` selects due cron/interval rows oldest first with a LIMIT and, on
PostgreSQL, ``FOR UPDATE SKIP LOCKED``. Several Store objects (separate connection pools
on one database, as separate ``li engine`` processes) claim at once here; every due
occurrence must be claimed exactly once: no duplicate, no loss. SQLite serialises the
writers, so the same contract holds there too.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta

import pytest
from sqlalchemy import func, select

from engine.poll.config import validate_poll_config
from engine.schedules.spec import ScheduleSpec
from engine.store import db as dbmod
from engine.store.enums import RunStatus, TriggerType
from engine.store.firing import Claim
from engine.store.models import Schedule, ScheduleRun
from engine.store.store import Store
from tests.factories import FakeClock, interval_spec

SCHEDULES = 240


@dataclass
class Fleet:
    stores: list[Store]
    clock: FakeClock


@pytest.fixture
def fleet(db_url: str) -> Iterator[Fleet]:
    first = dbmod.make_engine(db_url)
    dbmod.upgrade(first)
    engines = [first] + [dbmod.make_engine(db_url) for _ in range(3)]
    clock = FakeClock()
    try:
        yield Fleet([Store(e, clock) for e in engines], clock)
    finally:
        for engine in engines:
            engine.dispose()


def _add_many(store: Store, count: int) -> list[int]:
    return [store.add_schedule(interval_spec(name=f"s{i:04d}", every=60)).id for i in range(count)]


def _drain(store: Store, owner: str, limit: int, single: list[int] | None) -> list[int]:
    """Claim until nothing is due; the schedule ids this owner claimed."""
    taken: list[int] = []
    while True:
        if single is not None:  # the old per-schedule path, racing the batch path
            claims = [c for i in single if (c := store.claim_fire(i, owner)) is not None]
            single = None
        else:
            claims = list(store.claim_due(owner, limit))
        if not claims:
            return taken
        for claim in claims:
            assert isinstance(claim, Claim)
            taken.append(claim.schedule_id)


@pytest.mark.parametrize("engines", [2, 4])
def test_engines_claiming_at_once_take_every_due_fire_exactly_once(
    fleet: Fleet, engines: int
) -> None:
    ids = _add_many(fleet.stores[0], SCHEDULES)
    fleet.clock.advance(61)
    barrier = threading.Barrier(engines)
    results: dict[int, list[int]] = {}
    errors: list[BaseException] = []

    def run(n: int) -> None:
        barrier.wait()
        try:
            # The last engine walks every id one by one (claim_fire) while the others
            # take batches: both paths must stay exclusive against each other.
            single = list(reversed(ids)) if n == engines - 1 else None
            results[n] = _drain(fleet.stores[n], f"engine-{n}", 5 + n, single)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(engines)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors
    counts = Counter(i for taken in results.values() for i in taken)
    duplicates = {i: c for i, c in counts.items() if c > 1}
    lost = set(ids) - set(counts)
    assert duplicates == {} and lost == set()
    assert sum(len(taken) for taken in results.values()) == SCHEDULES

    rows = fleet.stores[0].in_transaction(
        lambda s: s.execute(
            select(ScheduleRun.schedule_id, func.count()).group_by(ScheduleRun.schedule_id)
        ).all()
    )
    assert {r[0]: r[1] for r in rows} == dict.fromkeys(ids, 1)
    now = fleet.clock()
    assert all(
        row.next_fire_at is not None and row.next_fire_at > now
        for row in fleet.stores[1].list_schedules()
    )
    # Nothing is due any more: a further claim by anyone gets nothing.
    assert fleet.stores[2].claim_due("late", 50) == []


def test_a_batch_takes_the_oldest_due_first_and_honours_the_limit(fleet: Fleet) -> None:
    store = fleet.stores[0]
    start = fleet.clock()
    for i, delay in enumerate([50, 10, 40, 20, 30]):
        first = start + timedelta(seconds=delay)
        store.add_schedule(interval_spec(name=f"d{i}", every=3600), first_fire_at=first)
    fleet.clock.advance(60)
    first = store.claim_due("a", 2)
    assert [c.schedule_name for c in first] == ["d1", "d3"]
    second = fleet.stores[1].claim_due("b", 10)
    assert [c.schedule_name for c in second] == ["d4", "d2", "d0"]


def test_a_batch_skips_polls_disabled_and_not_yet_due_schedules(fleet: Fleet) -> None:
    store = fleet.stores[0]
    store.add_schedule(interval_spec(name="due", every=60))
    store.add_schedule(interval_spec(name="later", every=600))
    store.add_schedule(interval_spec(name="off", every=60))
    store.set_enabled("off", False)
    trigger = validate_poll_config({"repo": "acme/app", "poll_interval_seconds": 60})
    poll = ScheduleSpec(
        name="poll",
        trigger_type=TriggerType.GITHUB_POLL,
        trigger_config=trigger.model_dump(mode="json"),
        command="sh",
        args=["-c", "true"],
    )
    store.add_schedule(poll)
    fleet.clock.advance(61)
    # The poll is due too, but its pass has its own claim (engine.store.pollstore).
    assert {d.trigger_type for d in store.due_schedules()} == {"interval", "github_poll"}
    [claim] = store.claim_due("a", 10)
    assert isinstance(claim, Claim) and claim.schedule_name == "due"
    assert store.claim_due("a", 10) == []


def test_a_batch_refuses_an_overlapping_fire_and_consumes_it(fleet: Fleet) -> None:
    store = fleet.stores[0]
    store.add_schedule(interval_spec(name="long", every=60))
    fleet.clock.advance(61)
    [first] = store.claim_due("a", 5)
    assert isinstance(first, Claim)
    fleet.clock.advance(60)
    [second] = fleet.stores[1].claim_due("b", 5)
    assert isinstance(second, ScheduleRun) and second.status == RunStatus.REFUSED.value
    assert fleet.stores[1].claim_due("b", 5) == []
    row = store.in_transaction(lambda s: s.get(Schedule, first.schedule_id))
    assert row is not None and row.lease_owner == "a"
