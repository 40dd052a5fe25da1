"""The Store / PollStore public contract, one suite over every backend (SQLite, PostgreSQL).

Like apscheduler's data-store suite: the same tests run against each database through
the ``db_url`` fixture (tests/conftest.py). Two engines are two Store objects over two
separate connection pools on one database, sharing one clock, as two ``li engine``
processes would. Only public methods are used; the contract is what callers rely on.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

import pytest
from sqlalchemy import select

from engine.errors import Conflict, NotFound
from engine.poll.config import validate_poll_config
from engine.schedules.plan import PlanAction, PlanItem
from engine.schedules.spec import ScheduleSpec
from engine.store import db as dbmod
from engine.store.enums import OverlapPolicy, RunReason, RunStatus, TriggerType
from engine.store.firing import Claim, FinishedRun
from engine.store.models import EngineInstance, Schedule
from engine.store.pollstore import PollOutcome, PollStore
from engine.store.store import Store
from tests.factories import FakeClock, interval_spec

T = TypeVar("T")
STALE = timedelta(seconds=30)


@dataclass
class Pair:
    """Two engines on one database and the clock they share."""

    a: Store
    b: Store
    clock: FakeClock

    def poll(self, store: Store) -> PollStore:
        return PollStore(store)


@pytest.fixture
def pair(db_url: str) -> Iterator[Pair]:
    first = dbmod.make_engine(db_url)
    dbmod.upgrade(first)
    second = dbmod.make_engine(db_url)
    clock = FakeClock()
    try:
        yield Pair(Store(first, clock), Store(second, clock), clock)
    finally:
        first.dispose()
        second.dispose()


def race(*calls: Callable[[], T]) -> list[T]:
    """Run ``calls`` at once (released together by a barrier); their results."""
    barrier = threading.Barrier(len(calls))
    results: list[T] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def run(call: Callable[[], T]) -> None:
        barrier.wait()
        try:
            value = call()
        except BaseException as exc:  # surfaced below, never swallowed
            with lock:
                errors.append(exc)
            return
        with lock:
            results.append(value)

    threads = [threading.Thread(target=run, args=(call,)) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors
    assert len(results) == len(calls)
    return results


def poll_spec(name: str = "watch", **config: Any) -> ScheduleSpec:
    trigger = validate_poll_config({"repo": "acme/app", "poll_interval_seconds": 60, **config})
    return ScheduleSpec(
        name=name,
        trigger_type=TriggerType.GITHUB_POLL,
        trigger_config=trigger.model_dump(mode="json"),
        command="sh",
        args=["-c", "true"],
    )


# -- schedules --------------------------------------------------------------------------


def test_schedule_crud_is_seen_by_every_engine_and_runs_outlive_their_schedule(
    pair: Pair,
) -> None:
    row = pair.a.add_schedule(interval_spec(every=60))
    assert pair.b.get_schedule("tick").id == row.id
    assert [s.name for s in pair.b.list_schedules()] == ["tick"]
    with pytest.raises(Conflict) as taken:
        pair.b.add_schedule(interval_spec(every=30))
    assert taken.value.reason == "schedule_exists"

    assert pair.b.set_enabled("tick", False).enabled is False
    pair.clock.advance(120)
    assert pair.a.due_schedules() == []
    assert pair.a.set_enabled("tick", True).enabled is True
    assert pair.b.request_fire("tick").next_fire_at == pair.clock()
    [due] = pair.a.due_schedules()
    claim = pair.a.claim_fire(due.id, "engine-a")
    assert isinstance(claim, Claim)

    pair.b.remove_schedule("tick")
    with pytest.raises(NotFound) as gone:
        pair.a.get_schedule("tick")
    assert gone.value.reason == "schedule_not_found"
    [kept] = pair.a.list_runs("tick")
    assert kept.id == claim.run_id and kept.schedule_id is None


def test_a_plan_applies_all_or_nothing(pair: Pair) -> None:
    pair.a.add_schedule(interval_spec(name="old", every=60), managed_by="ops")
    create = PlanItem(PlanAction.CREATE, "new", interval_spec(name="new"))
    clash = PlanItem(PlanAction.CREATE, "old", interval_spec(name="old"))
    with pytest.raises(Conflict):
        pair.a.apply_plan([create, clash], "ops")
    assert [s.name for s in pair.b.list_schedules()] == ["old"]

    remove = PlanItem(PlanAction.REMOVE, "old", None)
    pair.a.apply_plan([create, remove], "ops")
    [row] = pair.b.list_schedules()
    assert (row.name, row.managed_by) == ("new", "ops")
    assert [(e.spec.name, e.managed_by) for e in pair.b.existing_for_plan()] == [("new", "ops")]


def test_a_transaction_commits_whole_or_not_at_all(pair: Pair) -> None:
    pair.a.register_engine("engine-a", "host", 1)

    class Boom(Exception):
        pass

    with pytest.raises(Boom), pair.a.transaction() as session:
        session.add(EngineInstance(id="half", host="h", pid=2, last_errors=[]))
        session.flush()
        raise Boom
    assert [e.id for e in pair.b.list_engines()] == ["engine-a"]

    with pytest.raises(Conflict) as clash, pair.b.transaction() as session:
        session.add(EngineInstance(id="engine-a", host="h", pid=3, last_errors=[]))
    assert clash.value.reason == "conflict"

    with pair.b.transaction() as session:
        session.add(EngineInstance(id="engine-b", host="h", pid=4, last_errors=[]))
    assert pair.a.in_transaction(lambda s: sorted(s.scalars(select(EngineInstance.id)))) == [
        "engine-a",
        "engine-b",
    ]


# -- claims -----------------------------------------------------------------------------


def test_two_engines_claiming_at_once_fire_each_occurrence_exactly_once(pair: Pair) -> None:
    row = pair.a.add_schedule(interval_spec(every=60, overlap=OverlapPolicy.ALLOW))
    for _ in range(4):
        pair.clock.advance(61)
        results = race(
            lambda: pair.a.claim_fire(row.id, "engine-a"),
            lambda: pair.b.claim_fire(row.id, "engine-b"),
        )
        claims = [r for r in results if isinstance(r, Claim)]
        assert len(claims) == 1, results
        assert [r for r in results if not isinstance(r, Claim)] == [None]
    assert len(pair.a.list_runs("tick")) == 4
    assert pair.b.get_schedule("tick").run_count == 4


def test_two_engines_claiming_one_poll_event_at_once_fire_it_once(pair: Pair) -> None:
    row = pair.a.add_schedule(poll_spec())
    ticket = pair.poll(pair.a).claim_poll(row.id, "engine-a", manual=True)
    assert ticket is not None
    when = pair.clock() + timedelta(seconds=5)

    def claim(store: Store, owner: str) -> Claim | None:
        return pair.poll(store).claim_event(
            ticket,
            pr_number=7,
            occurred_at=when,
            head_sha="abc",
            context={"pr_number": 7},
            argv=["sh", "-c", "true"],
            owner=owner,
            cursor_to=when,
        )

    results = race(lambda: claim(pair.a, "engine-a"), lambda: claim(pair.b, "engine-b"))
    assert sum(isinstance(r, Claim) for r in results) == 1 and None in results
    assert pair.poll(pair.b).is_claimed(row.id, 7, when, "abc")
    assert not pair.poll(pair.b).is_claimed(row.id, 7, when, "other-head")
    assert pair.poll(pair.b).get_state(row.id).cursor_at == when
    assert len(pair.b.list_runs("watch")) == 1


# -- runs -------------------------------------------------------------------------------


def test_a_run_lives_claimed_launched_finished_and_only_its_owner_may_end_it(
    pair: Pair,
) -> None:
    row = pair.a.add_schedule(interval_spec(every=60))
    pair.clock.advance(61)
    claim = pair.a.claim_fire(row.id, "engine-a")
    assert isinstance(claim, Claim)
    assert pair.b.get_schedule("tick").lease_owner == "engine-a"

    assert pair.b.set_run_argv(claim.run_id, ["sh"], owner="engine-b") is False
    assert pair.a.set_run_argv(claim.run_id, ["sh", "-c", "echo hi"], owner="engine-a")
    pair.a.mark_started(claim.run_id, 4242)
    done = FinishedRun(status=RunStatus.SUCCEEDED, exit_code=0, stdout_tail="hi\n")
    assert pair.b.finish_run(claim.run_id, done, owner="engine-b") is False
    assert pair.a.finish_run(claim.run_id, done, owner="engine-a") is True
    assert pair.a.finish_run(claim.run_id, done, owner="engine-a") is False  # settled

    run = pair.b.get_run(claim.run_id)
    assert (run.status, run.exit_code, run.pid) == (RunStatus.SUCCEEDED, 0, 4242)
    assert run.argv == ["sh", "-c", "echo hi"] and run.stdout_tail == "hi\n"
    assert pair.b.get_schedule("tick").lease_owner is None
    assert [r.id for r in pair.b.list_runs("tick", [RunStatus.SUCCEEDED])] == [claim.run_id]
    assert pair.b.list_runs("tick", [RunStatus.FAILED]) == []
    with pytest.raises(NotFound) as missing:
        pair.b.get_run(claim.run_id + 1000)
    assert missing.value.reason == "run_not_found"


def test_a_failed_run_is_tried_again_only_by_its_owner(pair: Pair) -> None:
    row = pair.a.add_schedule(interval_spec(every=60, retry_max_attempts=3))
    pair.clock.advance(61)
    claim = pair.a.claim_fire(row.id, "engine-a")
    assert isinstance(claim, Claim) and claim.retry_max_attempts == 3
    failed = FinishedRun(status=RunStatus.FAILED, exit_code=1)
    assert pair.a.finish_run(claim.run_id, failed, owner="engine-a")
    assert pair.b.start_attempt(claim.run_id, "engine-b") is None
    second = pair.a.start_attempt(claim.run_id, "engine-a")
    assert second is not None
    run = pair.b.get_run(second)
    assert (run.status, run.attempt, run.fire_id) == (RunStatus.RUNNING, 2, claim.run_id)


# -- attempts and recovery --------------------------------------------------------------


def test_an_event_lost_with_its_engine_is_offered_again_as_the_next_attempt(pair: Pair) -> None:
    row = pair.a.add_schedule(poll_spec())
    pair.a.register_engine("engine-a", "elsewhere", 1)
    ticket = pair.poll(pair.a).claim_poll(row.id, "engine-a", manual=True)
    assert ticket is not None
    when = pair.clock()
    claim = pair.poll(pair.a).claim_event(
        ticket,
        pr_number=3,
        occurred_at=when,
        context={"pr_number": 3},
        argv=None,
        owner="engine-a",
        cursor_to=when,
    )
    assert isinstance(claim, Claim)
    pair.a.mark_started(claim.run_id, 999)

    pair.clock.advance(600)  # engine-a stops heart-beating
    pair.b.register_engine("engine-b", "elsewhere", 2)
    live = pair.b.live_engine_ids(STALE)
    assert live == {"engine-b"}
    [lost] = pair.b.recover_orphans(live)
    assert (lost.id, lost.status, lost.reason) == (
        claim.run_id,
        RunStatus.CANCELLED,
        RunReason.ENGINE_LOST,
    )
    # Engine a is back from a pause: its outcome is dropped (fenced).
    assert not pair.a.finish_run(claim.run_id, FinishedRun(RunStatus.SUCCEEDED), owner="engine-a")

    ticket_b = pair.poll(pair.b).claim_poll(row.id, "engine-b", manual=True)
    assert ticket_b is not None
    [again] = pair.poll(pair.b).claim_retries(ticket_b, "engine-b")
    assert again.context == {"pr_number": 3}
    retry = pair.a.get_run(again.run_id)
    assert (retry.attempt, retry.fire_id, retry.engine_id) == (2, claim.run_id, "engine-b")
    assert pair.poll(pair.b).claim_retries(ticket_b, "engine-b") == []  # taken once
    # The event's claim is kept: the normal pass never fires it as a new event.
    assert (
        pair.poll(pair.a).claim_event(
            ticket_b,
            pr_number=3,
            occurred_at=when,
            context={"pr_number": 3},
            argv=None,
            owner="engine-b",
            cursor_to=None,
        )
        is None
    )


def test_a_run_never_launched_is_abandoned_and_offered_again(pair: Pair) -> None:
    row = pair.a.add_schedule(poll_spec())
    ticket = pair.poll(pair.a).claim_poll(row.id, "engine-a", manual=True)
    assert ticket is not None
    claim = pair.poll(pair.a).claim_event(
        ticket,
        pr_number=4,
        occurred_at=pair.clock(),
        context={"pr_number": 4},
        argv=None,
        owner="engine-a",
        cursor_to=None,
    )
    assert isinstance(claim, Claim)
    [lost] = pair.b.recover_orphans(set())  # no engine is live: engine-a is gone
    assert lost.reason == RunReason.ABANDONED_BEFORE_LAUNCH
    [again] = pair.poll(pair.b).claim_retries(ticket, "engine-b")
    assert pair.b.get_run(again.run_id).attempt == 2


# -- leases -----------------------------------------------------------------------------


def test_a_poll_lease_admits_one_poller_until_it_settles(pair: Pair) -> None:
    row = pair.a.add_schedule(poll_spec())
    pair.clock.advance(61)
    tickets = race(
        lambda: pair.poll(pair.a).claim_poll(row.id, "engine-a"),
        lambda: pair.poll(pair.b).claim_poll(row.id, "engine-b"),
    )
    [ticket] = [t for t in tickets if t is not None]
    holder = pair.b.get_schedule("watch").lease_owner
    other = "engine-b" if holder == "engine-a" else "engine-a"
    assert pair.poll(pair.a).claim_poll(row.id, other, manual=True) is None
    assert pair.poll(pair.a).claim_poll(row.id, other, peek=True) is not None  # no lease
    pair.poll(pair.b).settle_poll(ticket, PollOutcome(polled=True, http_status=200), holder)
    assert pair.a.get_schedule("watch").lease_owner is None
    state = pair.poll(pair.b).get_state(row.id)
    assert (state.polls, state.last_http_status) == (1, 200)
    assert pair.poll(pair.a).claim_poll(row.id, other, manual=True) is not None


def test_a_run_lease_refuses_an_overlapping_fire_until_its_engine_stops(pair: Pair) -> None:
    row = pair.a.add_schedule(interval_spec(every=60))
    pair.a.register_engine("engine-a", "elsewhere", 1)
    pair.clock.advance(61)
    assert isinstance(pair.a.claim_fire(row.id, "engine-a"), Claim)
    pair.clock.advance(61)
    refused = pair.b.claim_fire(row.id, "engine-b")
    assert not isinstance(refused, Claim) and refused is not None
    assert (refused.status, refused.reason) == (RunStatus.REFUSED, RunReason.OVERLAP)
    pair.a.stop_engine("engine-a")
    assert pair.b.get_schedule("tick").lease_owner is None
    [engine] = pair.b.list_engines()
    assert engine.stopped_at is not None
    assert pair.b.live_engine_ids(STALE) == set()
    pair.clock.advance(61)
    assert isinstance(pair.b.claim_fire(row.id, "engine-b"), Claim)


def test_the_timetable_and_fingerprint_follow_every_engines_changes(pair: Pair) -> None:
    row = pair.a.add_schedule(interval_spec(every=60))
    before = pair.b.fingerprint()
    assert pair.b.timetable() == {row.id: (row.next_fire_at, TriggerType.INTERVAL)}
    assert pair.b.timing_of(row.id) == (row.next_fire_at, TriggerType.INTERVAL)
    pair.clock.advance(61)
    assert isinstance(pair.a.claim_fire(row.id, "engine-a"), Claim)
    assert pair.b.fingerprint() != before
    pair.a.set_enabled("tick", False)
    assert pair.b.timing_of(row.id) is None and pair.b.timetable() == {}
    assert pair.a.in_transaction(lambda s: s.get(Schedule, row.id)) is not None
