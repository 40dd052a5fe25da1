"""An event lost with its engine again and again is delayed, not given up (D58).

The fault-injection test once lost events this way: a string of engine kills, each
landing while the same re-offered event was running, reached the old cap of 5 lost
attempts and left the event cancelled, a review never done. Now the first losses are
re-offered at once, later ones wait the schedule's retry backoff (doubling, at most an
hour), and only MAX_LOST_ATTEMPTS losses give the event up.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine as SAEngine

from engine.api import open_readonly
from engine.poll.config import validate_poll_config
from engine.schedules.spec import ScheduleSpec
from engine.store.attempts import (
    IMMEDIATE_LOST_ATTEMPTS,
    MAX_LOST_ATTEMPTS,
    MAX_LOST_BACKOFF,
    lost_backoff,
)
from engine.store.models import RunStatus, TriggerType
from engine.store.pollstore import PollStore
from engine.store.store import Store
from tests.engine.test_durability import _claim

BACKOFF = 10


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def _spec() -> ScheduleSpec:
    trigger = validate_poll_config({"repo": "octo/widgets", "poll_interval_seconds": 600})
    return ScheduleSpec(
        name="watch",
        trigger_type=TriggerType.GITHUB_POLL,
        trigger_config=trigger.model_dump(mode="json"),
        command="sh",
        args=["-c", "true"],
        retry_backoff_seconds=BACKOFF,
    )


def test_the_backoff_starts_after_the_immediate_attempts_doubles_and_is_capped() -> None:
    waits = [lost_backoff(n, BACKOFF) for n in range(1, MAX_LOST_ATTEMPTS)]
    assert waits[: IMMEDIATE_LOST_ATTEMPTS - 1] == [timedelta(0)] * (IMMEDIATE_LOST_ATTEMPTS - 1)
    later = waits[IMMEDIATE_LOST_ATTEMPTS - 1 :]
    assert later[0] == timedelta(seconds=BACKOFF)
    assert later[1] == 2 * later[0]
    assert max(later) == MAX_LOST_BACKOFF
    assert later == sorted(later)


def test_ten_engine_losses_in_a_row_still_deliver_the_event(db: SAEngine) -> None:
    clock = Clock()
    store = Store(db, clock=clock)
    polls = PollStore(store)
    sid = store.add_schedule(_spec()).id
    store.register_engine("engine-1", "elsewhere", 1)
    run_id = _claim(store, sid, "engine-1").run_id
    waited = []
    for loss in range(1, 11):  # twice the cap that once gave events up
        store.mark_started(run_id, 4242)
        [orphan] = store.recover_orphans({"engine-other"})
        assert (orphan.id, orphan.reason) == (run_id, "engine_lost")
        ticket = polls.claim_poll(sid, "engine-2", manual=True)
        assert ticket is not None
        due = polls.claim_retries(ticket, "engine-2")
        wait = lost_backoff(loss, BACKOFF)
        if wait:
            assert due == [], f"loss {loss}: re-fired before its backoff"
            waited.append(wait)
            clock.now += wait
            ticket = polls.claim_poll(sid, "engine-2", manual=True)
            assert ticket is not None
            due = polls.claim_retries(ticket, "engine-2")
        [claim] = due
        assert store.get_run(claim.run_id).attempt == loss + 1
        run_id = claim.run_id
    assert len(waited) == 10 - IMMEDIATE_LOST_ATTEMPTS + 1
    assert store.get_run(run_id).status == RunStatus.RUNNING.value


def test_a_queued_attempt_and_its_wait_are_on_the_pull_requests_fate_trail(
    db: SAEngine, db_url: str
) -> None:
    # An event waiting out its backoff is no silent gap: li's read API (what `kdev
    # explain` reads) names the attempt that comes next and when it may fire.
    clock = Clock()
    store = Store(db, clock=clock)
    polls = PollStore(store)
    sid = store.add_schedule(_spec()).id
    run_id = _claim(store, sid, "engine-1").run_id
    for loss in range(1, IMMEDIATE_LOST_ATTEMPTS + 1):
        store.mark_started(run_id, 4242)
        store.recover_orphans({"engine-other"})
        if loss < IMMEDIATE_LOST_ATTEMPTS:
            ticket = polls.claim_poll(sid, "engine-2", manual=True)
            assert ticket is not None
            [claim] = polls.claim_retries(ticket, "engine-2")
            run_id = claim.run_id
    with open_readonly(db_url) as reader:
        history = reader.pr_history("OCTO/widgets", 1)
        assert reader.pr_history("octo/widgets", 2).queued == ()
    [queued] = history.queued
    wait = lost_backoff(IMMEDIATE_LOST_ATTEMPTS, BACKOFF)
    assert (queued.schedule, queued.attempt, queued.head_sha) == ("watch", 4, "sha1")
    assert queued.not_before == clock.now + wait
    assert queued.fire_id == history.runs[-1].id  # the fire's first run
