"""Store contract tests: every test runs on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from sqlalchemy import Engine

from engine.errors import Conflict, NotFound
from engine.store.models import OverlapPolicy, RunStatus
from engine.store.store import Claim, FinishedRun, Store
from tests.factories import FakeClock, interval_spec


def test_adding_a_schedule_seeds_its_next_fire_one_interval_ahead(db: Engine) -> None:
    clock = FakeClock()
    store = Store(db, clock)
    row = store.add_schedule(interval_spec(every=300))
    assert row.next_fire_at == clock() + timedelta(seconds=300)
    assert store.due_schedules() == []


def test_a_duplicate_name_is_refused_and_the_first_schedule_is_kept(db: Engine) -> None:
    store = Store(db)
    store.add_schedule(interval_spec(args=["-c", "echo first"]))
    with pytest.raises(Conflict) as caught:
        store.add_schedule(interval_spec(args=["-c", "echo second"]))
    assert caught.value.reason == "schedule_exists"
    assert store.get_schedule("tick").args == ["-c", "echo first"]


def test_an_unknown_schedule_name_is_not_found(db: Engine) -> None:
    with pytest.raises(NotFound) as caught:
        Store(db).get_schedule("nope")
    assert caught.value.reason == "schedule_not_found"


def test_a_due_occurrence_is_claimed_once_and_the_timetable_moves_on(db: Engine) -> None:
    clock = FakeClock()
    store = Store(db, clock)
    store.add_schedule(interval_spec(every=60))
    clock.advance(61)
    [due] = store.due_schedules()
    first = store.claim_fire(due.id, "engine-a")
    second = store.claim_fire(due.id, "engine-b")
    assert isinstance(first, Claim)
    assert second is None
    row = store.get_schedule("tick")
    assert row.run_count == 1 and row.lease_owner == "engine-a"
    assert row.next_fire_at is not None and row.next_fire_at > clock()
    assert store.get_run(first.run_id).status == RunStatus.RUNNING.value


def test_concurrent_claims_from_many_threads_fire_one_occurrence_once(db: Engine) -> None:
    clock = FakeClock()
    store = Store(db, clock)
    row = store.add_schedule(interval_spec(every=60))
    clock.advance(61)
    results: list[object] = []
    barrier = threading.Barrier(6)

    def claim(owner: str) -> None:
        other = Store(db, clock)
        barrier.wait()
        results.append(other.claim_fire(row.id, owner))

    threads = [threading.Thread(target=claim, args=(f"engine-{i}",)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(isinstance(r, Claim) for r in results) == 1
    assert len(store.list_runs("tick")) == 1


def test_overlap_skip_records_a_refused_fire_while_the_lease_is_held(db: Engine) -> None:
    clock = FakeClock()
    store = Store(db, clock)
    row = store.add_schedule(interval_spec(every=60))
    clock.advance(61)
    first = store.claim_fire(row.id, "engine-a")
    assert isinstance(first, Claim)
    clock.advance(60)
    skipped = store.claim_fire(row.id, "engine-a")
    assert not isinstance(skipped, Claim) and skipped is not None
    assert skipped.status == RunStatus.REFUSED.value and skipped.reason == "overlap"
    store.finish_run(
        first.run_id, FinishedRun(status=RunStatus.SUCCEEDED, exit_code=0), owner="engine-a"
    )
    assert store.get_schedule("tick").lease_owner is None
    clock.advance(60)
    assert isinstance(store.claim_fire(row.id, "engine-a"), Claim)


def test_overlap_allow_fires_beside_a_running_occurrence(db: Engine) -> None:
    clock = FakeClock()
    store = Store(db, clock)
    row = store.add_schedule(interval_spec(every=60, overlap=OverlapPolicy.ALLOW))
    clock.advance(61)
    assert isinstance(store.claim_fire(row.id, "engine-a"), Claim)
    clock.advance(60)
    assert isinstance(store.claim_fire(row.id, "engine-a"), Claim)


def test_max_runs_stops_the_schedule_after_the_last_run(db: Engine) -> None:
    clock = FakeClock()
    store = Store(db, clock)
    row = store.add_schedule(interval_spec(every=60, max_runs=1))
    clock.advance(61)
    claim = store.claim_fire(row.id, "engine-a")
    assert isinstance(claim, Claim)
    assert claim.next_fire_at is None
    assert store.get_schedule("tick").next_fire_at is None
    clock.advance(3600)
    assert store.due_schedules() == []


def test_missed_interval_slots_coalesce_into_one_fire(db: Engine) -> None:
    clock = FakeClock()
    store = Store(db, clock)
    row = store.add_schedule(interval_spec(every=60))
    clock.advance(60 * 10 + 5)
    assert isinstance(store.claim_fire(row.id, "engine-a"), Claim)
    assert store.claim_fire(row.id, "engine-a") is None
    nxt = store.get_schedule("tick").next_fire_at
    assert nxt is not None and timedelta(0) < nxt - clock() <= timedelta(seconds=60)


def test_removing_a_schedule_keeps_its_run_history(db: Engine) -> None:
    clock = FakeClock()
    store = Store(db, clock)
    row = store.add_schedule(interval_spec(every=60))
    clock.advance(61)
    claim = store.claim_fire(row.id, "engine-a")
    assert isinstance(claim, Claim)
    store.finish_run(
        claim.run_id,
        FinishedRun(status=RunStatus.FAILED, exit_code=3, reason="nonzero_exit"),
        owner="engine-a",
    )
    store.remove_schedule("tick")
    [run] = store.list_runs("tick")
    assert run.schedule_id is None and run.exit_code == 3


def test_pausing_stops_fires_and_resuming_restarts_from_now(db: Engine) -> None:
    clock = FakeClock()
    store = Store(db, clock)
    store.add_schedule(interval_spec(every=60))
    store.set_enabled("tick", False)
    clock.advance(600)
    assert store.due_schedules() == []
    row = store.set_enabled("tick", True)
    assert row.next_fire_at is not None and row.next_fire_at > clock()


def test_orphaned_runs_of_a_dead_engine_are_resolved_at_start(db: Engine) -> None:
    clock = FakeClock()
    store = Store(db, clock)
    row = store.add_schedule(interval_spec(every=60))
    store.register_engine("dead-engine", "host", 1)
    clock.advance(61)
    never_launched = store.claim_fire(row.id, "dead-engine")
    assert isinstance(never_launched, Claim)
    other = store.add_schedule(interval_spec(name="other", every=60))
    clock.advance(61)
    launched = store.claim_fire(other.id, "dead-engine")
    assert isinstance(launched, Claim)
    store.mark_started(launched.run_id, 4242)
    clock.advance(3600)
    live = store.live_engine_ids(timedelta(seconds=30))
    assert "dead-engine" not in live
    recovered = {run.id: run.reason for run in store.recover_orphans(live)}
    assert recovered == {
        never_launched.run_id: "abandoned_before_launch",
        launched.run_id: "engine_lost",
    }
    assert store.get_run(launched.run_id).status == RunStatus.CANCELLED.value
    assert store.get_schedule("tick").lease_owner is None


def test_runs_filter_by_schedule_and_status(db: Engine) -> None:
    clock = FakeClock()
    store = Store(db, clock)
    row = store.add_schedule(interval_spec(every=60, overlap=OverlapPolicy.ALLOW))
    outcomes = [RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.TIMED_OUT]
    for status in outcomes:
        clock.advance(61)
        claim = store.claim_fire(row.id, "e")
        assert isinstance(claim, Claim)
        store.finish_run(claim.run_id, FinishedRun(status=status), owner="e")
    failed = store.list_runs("tick", ["failed", "timed_out"])
    assert [r.status for r in failed] == ["timed_out", "failed"]
    assert len(store.list_runs(limit=2)) == 2


def test_output_tails_are_bounded_to_4_kib(db: Engine) -> None:
    clock = FakeClock()
    store = Store(db, clock)
    row = store.add_schedule(interval_spec(every=60))
    clock.advance(61)
    claim = store.claim_fire(row.id, "e")
    assert isinstance(claim, Claim)
    store.finish_run(
        claim.run_id,
        FinishedRun(status=RunStatus.SUCCEEDED, stdout_tail="x" * 10_000 + "END"),
        owner="e",
    )
    tail = store.get_run(claim.run_id).stdout_tail
    assert len(tail.encode()) <= 4096 and tail.endswith("END")
