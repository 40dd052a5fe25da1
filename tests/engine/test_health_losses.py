"""Issue 11: health sees losses in a window, not just the newest run (``degraded``)."""

from __future__ import annotations

from sqlalchemy import Engine as SAEngine

from engine.health.assess import HealthState
from engine.health.status import schedule_health
from engine.store.models import RunStatus
from engine.store.store import Claim, FinishedRun, Store
from tests.factories import FakeClock, interval_spec


def _fire(store: Store, name: str, status: RunStatus) -> None:
    sid = store.get_schedule(name).id
    claim = store.claim_fire(sid, "engine-a", manual=True)
    assert isinstance(claim, Claim)
    store.finish_run(claim.run_id, FinishedRun(status=status), owner="engine-a")


def _codes(store: Store, name: str) -> tuple[HealthState, list[str]]:
    [item] = schedule_health(store, name)
    return item.health.state, [cause.code for cause in item.health.causes]


def test_a_failure_followed_by_a_success_is_degraded_not_healthy(db: SAEngine) -> None:
    clock = FakeClock()
    store = Store(db, clock)
    store.add_schedule(interval_spec(name="tick"))
    _fire(store, "tick", RunStatus.FAILED)
    clock.advance(60)
    _fire(store, "tick", RunStatus.SUCCEEDED)
    state, codes = _codes(store, "tick")
    assert state is HealthState.DEGRADED and codes == ["runs_failed"]
    [item] = schedule_health(store, "tick")
    assert item.to_json()["window"] == {
        "runs": 2,
        "failed": 1,
        "cancelled": 0,
        "refused": 0,
        "coalesced": 0,
        "drained": 0,
    }
    assert list(item.to_json()["window"])[:2] == ["runs", "failed"]  # the total first
    # Out of the 24 h window: healthy again.
    clock.advance(25 * 3600)
    assert _codes(store, "tick") == (HealthState.HEALTHY, [])


def test_cancelled_and_refused_runs_are_causes_and_a_failing_newest_run_stays_failing(
    db: SAEngine,
) -> None:
    store = Store(db, FakeClock())
    store.add_schedule(interval_spec(name="tick"))
    _fire(store, "tick", RunStatus.CANCELLED)
    _fire(store, "tick", RunStatus.REFUSED)
    _fire(store, "tick", RunStatus.SUCCEEDED)
    assert _codes(store, "tick") == (HealthState.DEGRADED, ["runs_cancelled", "runs_refused"])
    _fire(store, "tick", RunStatus.FAILED)
    state, codes = _codes(store, "tick")
    assert state is HealthState.FAILING
    assert codes == ["run_failed", "runs_failed", "runs_cancelled", "runs_refused"]


def test_coalesced_interval_slots_are_counted(db: SAEngine) -> None:
    clock = FakeClock()
    store = Store(db, clock)
    sid = store.add_schedule(interval_spec(name="tick", every=60)).id
    clock.advance(60 + 600)  # due at +60, the engine comes back 10 minutes late
    claim = store.claim_fire(sid, "engine-a")
    assert isinstance(claim, Claim) and claim.context["coalesced"] == 10
    store.finish_run(claim.run_id, FinishedRun(status=RunStatus.SUCCEEDED), owner="engine-a")
    state, codes = _codes(store, "tick")
    assert state is HealthState.DEGRADED and codes == ["slots_coalesced"]
    [item] = schedule_health(store, "tick")
    assert "10 due occurrence(s)" in item.health.causes[0].message
