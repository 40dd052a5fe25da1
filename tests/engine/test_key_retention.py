"""Retention of trigger keys and schedule removals (engine.store.keyretention), on SQLite
and PostgreSQL: no pruned key ever lets its item fire twice."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine as SAEngine
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from engine.github.etag import SqlEtagCache
from engine.github.types import CachedResponse
from engine.store.enums import RunStatus
from engine.store.firing import Claim, FinishedRun
from engine.store.keyretention import SKEW
from engine.store.models import PollState, ScheduleRemoval, TriggerKey
from engine.store.pollstore import PollStore, PollTicket
from engine.store.retention import RunRetention, prune
from engine.store.store import Store
from tests.engine import test_mention_engine as mention
from tests.engine.test_mention_engine import HANDLE, MAINT, REPO, world  # noqa: F401
from tests.engine.test_retention import poll_spec
from tests.factories import FakeClock, interval_spec

DAY = timedelta(days=1)
OWNER = "engine-a"


def _ticket(polls: PollStore, schedule_id: int) -> PollTicket:
    ticket = polls.claim_poll(schedule_id, OWNER, manual=True)
    assert ticket is not None
    return ticket


def _fire(polls: PollStore, ticket: PollTicket, key: str, created: datetime) -> Claim | None:
    return polls.claim_trigger(
        ticket, dedupe_key=key, context={}, argv=["sh"], owner=OWNER, created_at=created
    )


def _queue_for_retry(store: Store, schedule_id: int, run_id: int) -> None:
    def work(session: Session) -> int:
        state = session.get(PollState, schedule_id)
        assert state is not None
        state.retry_events = [
            *(state.retry_events or []),
            {"run_id": run_id, "fire_id": run_id, "attempt": 1, "context": {}},
        ]
        return 1

    store.in_transaction(work)


def _keys(store: Store, schedule_id: int) -> set[str]:
    return set(
        store.in_transaction(
            lambda s: list(
                s.scalars(
                    select(TriggerKey.dedupe_key).where(TriggerKey.schedule_id == schedule_id)
                )
            )
        )
    )


ITEM = st.tuples(
    st.integers(0, 200 * 24 * 60),  # the minute it fired, after the start
    # How long before its fire the item was created, in minutes: up to 400 days (an old
    # comment edited into a mention), or up to 12 h *after* (GitHub's clock ahead).
    st.integers(-12 * 60, 400 * 24 * 60),
    st.sampled_from(["done", "running", "queued"]),
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    items=st.lists(ITEM, min_size=1, max_size=10),
    keep=st.integers(2, 120),
    later=st.integers(0, 300 * 24 * 60),
    prunes=st.integers(1, 2),
)
def test_no_pruned_key_lets_its_item_fire_twice(
    db: SAEngine, items: list[tuple[int, int, str]], keep: int, later: int, prunes: int
) -> None:
    clock = FakeClock()
    store = Store(db, clock)
    polls = PollStore(store)
    row = store.add_schedule(poll_spec(f"w-{uuid.uuid4().hex[:12]}"))
    start = clock()
    fired: list[tuple[str, datetime, str]] = []
    for index, (minute, lag, fate) in sorted(enumerate(items), key=lambda pair: pair[1][0]):
        moment = start + timedelta(minutes=minute)
        clock.advance(max(0.0, (moment - clock()).total_seconds()))
        key = f"mention:acme/app:1:{index}"
        created = clock() - timedelta(minutes=lag)
        claim = _fire(polls, _ticket(polls, row.id), key, created)
        assert claim is not None
        if fate != "running":
            finished = RunStatus.SUCCEEDED if fate == "done" else RunStatus.CANCELLED
            assert store.finish_run(claim.run_id, FinishedRun(finished), owner=OWNER)
        if fate == "queued":
            _queue_for_retry(store, row.id, claim.run_id)
        fired.append((key, created, fate))
    for _ in range(prunes):
        clock.advance(later * 60 / prunes)
        prune(store.in_transaction, RunRetention(keys_keep_days=keep), clock())

    left = _keys(store, row.id)
    ticket = _ticket(polls, row.id)
    for key, created, fate in fired:
        if fate != "done":
            assert key in left, (key, fate)  # a fire not over keeps its key
        # The re-offer of every item, pruned key or not: never a second fire.
        assert _fire(polls, ticket, key, created) is None, key


def test_old_keys_are_pruned_and_their_runs_freed(db: SAEngine) -> None:
    clock = FakeClock()
    store = Store(db, clock)
    polls = PollStore(store)
    row = store.add_schedule(poll_spec("watch"))
    ticket = _ticket(polls, row.id)
    for index in range(5):
        claim = _fire(polls, ticket, f"mention:acme/app:1:{index}", clock())
        assert claim is not None
        assert store.finish_run(claim.run_id, FinishedRun(RunStatus.SUCCEEDED), owner=OWNER)
    clock.advance(30 * 86400)
    recent = _fire(polls, ticket, "mention:acme/app:2:9", clock())
    assert recent is not None
    policy = RunRetention(keep_days=10, keep_per_schedule=0, keys_keep_days=10)
    clock.advance(30 * 86400 - 1)

    done = prune(store.in_transaction, policy, clock())

    assert done.keys == 5 and done.runs == 5  # the keys went, then the runs they held
    assert _keys(store, row.id) == {"mention:acme/app:2:9"}
    horizon = polls.get_state(row.id).trigger_keys_horizon
    assert horizon == clock() - 10 * DAY
    # An item created before the horizon never fires, key or not; a newer one does.
    ticket = _ticket(polls, row.id)
    assert _fire(polls, ticket, "mention:acme/app:3:1", horizon - timedelta(seconds=1)) is None
    assert _fire(polls, ticket, "mention:acme/app:3:2", horizon) is not None
    # The horizon is forward-only: a longer keep period later does not move it back.
    prune(store.in_transaction, RunRetention(keys_keep_days=90), clock())
    assert polls.get_state(row.id).trigger_keys_horizon == horizon


def test_a_key_inside_the_skew_allowance_stays(db: SAEngine) -> None:
    clock = FakeClock()
    store = Store(db, clock)
    polls = PollStore(store)
    row = store.add_schedule(poll_spec("watch"))
    claim = _fire(polls, _ticket(polls, row.id), "mention:acme/app:1:1", clock())
    assert claim is not None
    assert store.finish_run(claim.run_id, FinishedRun(RunStatus.SUCCEEDED), owner=OWNER)
    # The key is 10 days old; kept 9.5 days, so it is half a day behind the horizon:
    # inside the clock-skew allowance, it stays.
    clock.advance(10 * 86400)
    policy = RunRetention(keys_keep_days=9)
    assert prune(store.in_transaction, policy, clock() + timedelta(hours=-12)).keys == 0
    assert SKEW == DAY
    assert prune(store.in_transaction, policy, clock() + timedelta(hours=12)).keys == 1


def test_old_schedule_removals_are_pruned(db: SAEngine) -> None:
    clock = FakeClock()
    store = Store(db, clock)
    for name in ("a", "b"):
        store.add_schedule(interval_spec(name, 60))
    store.remove_schedule("a")
    count = func.count()

    def removals() -> int:
        return int(
            store.in_transaction(
                lambda s: s.scalar(select(count).select_from(ScheduleRemoval)) or 0
            )
        )

    assert removals() == 1
    now = store.in_transaction(lambda s: s.scalars(select(ScheduleRemoval.removed_at)).one())
    policy = RunRetention(keep_days=30)
    assert prune(store.in_transaction, policy, now + 29 * DAY).removals == 0
    store.remove_schedule("b")
    assert prune(store.in_transaction, policy, now + 31 * DAY).removals >= 1
    assert removals() <= 1


def test_an_edited_comment_whose_key_was_pruned_does_not_fire_again(
    world: mention.World,  # noqa: F811
) -> None:
    """Over ghsim: a mention fires; 100 days later its key is pruned; editing the comment
    brings it back into the feed, and it does not fire. A new comment still does."""
    world.add()
    pr = world.fork_pr()
    world.clock.advance(5)
    comment = world.sim.comment(REPO, pr.number, f"@{HANDLE} review", author=MAINT)
    assert len(mention.fired(world.poll())) == 1
    world.clock.advance(100 * 86400)
    done = prune(world.store.in_transaction, RunRetention(keys_keep_days=90), world.clock())
    assert done.keys == 1 and world.trigger_keys() == []
    world.clock.advance(5)
    world.sim.edit_comment(REPO, comment.id, f"@{HANDLE} review, again please")
    assert world.poll() == []
    world.clock.advance(5)
    world.sim.comment(REPO, pr.number, f"@{HANDLE} review", author=MAINT)
    assert len(mention.fired(world.poll())) == 1


def test_engine_rows_silent_for_the_keep_period_are_pruned(db: SAEngine) -> None:
    clock = FakeClock()
    store = Store(db, clock)
    store.add_schedule(interval_spec("tick", 60))
    for name in ("stopped", "died", "orphan-holder"):
        store.register_engine(f"engine-{name}", "host", 1)
    store.stop_engine("engine-stopped")
    # A run the dead engine left running: recovery has not closed it yet.
    claim = store.claim_fire(store.get_schedule("tick").id, "engine-orphan-holder", manual=True)
    assert isinstance(claim, Claim)
    clock.advance(31 * 86400)
    store.register_engine("engine-new", "host", 2)

    done = prune(store.in_transaction, RunRetention(keep_days=30), clock())

    assert done.engines == 2
    assert {row.id for row in store.list_engines()} == {"engine-orphan-holder", "engine-new"}


def test_the_etags_of_a_removed_schedule_are_pruned(db: SAEngine) -> None:
    clock = FakeClock()
    store = Store(db, clock)
    kept = store.add_schedule(poll_spec("kept")).id
    gone = store.add_schedule(poll_spec("gone")).id
    cache = SqlEtagCache(db)
    url = "https://api.github.com/repos/acme/app/pulls?state=open#tok;shape=1"
    keys = [
        f"{url};scope=schedule:{kept}",
        f"{url};scope=schedule:{kept}:issue-comments",
        f"{url};scope=schedule:{gone}",
        f"{url};scope=schedule:{gone}:diff-comments",
        f"{url};scope=preview",
    ]
    for key in keys:
        cache.put(key, CachedResponse('"e"', [], None, clock()))
    store.remove_schedule("gone")

    assert prune(store.in_transaction, RunRetention(), clock()).cache == 2

    assert cache.keys() == sorted([keys[0], keys[1], keys[4]])
