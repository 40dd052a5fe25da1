"""Issue 11: the delivery contract holds for mention triggers too: a mention whose run
never launched is fired again as attempt 2, its trigger key re-pointed, once."""

from __future__ import annotations

from engine.poll.pollpass import poll_once
from engine.run.daemon import Engine
from engine.store.models import RunStatus
from engine.store.pollstore import PollStore
from tests.engine.test_mention_engine import HANDLE, MAINT, REPO, World, world  # noqa: F401


def test_a_mention_claimed_by_an_engine_that_died_is_fired_again(world: World) -> None:  # noqa: F811
    sid = world.add()
    pr = world.fork_pr()
    world.clock.advance(5)
    world.sim.comment(REPO, pr.number, f"@{HANDLE} review", author=MAINT)
    world.clock.advance(61)
    crashed = Engine(world.settings(), world.store)
    crashed.start()
    polls = PollStore(world.store)
    ticket = polls.claim_poll(sid, crashed.engine_id)
    assert ticket is not None
    report = poll_once(polls, world.settings(), crashed.github, ticket, crashed.engine_id)
    assert [d.decision for d in report.decisions] == ["fired"]
    crashed._release_lock()  # killed before the spawn; its heartbeat goes stale
    crashed.github.close()
    world.clock.advance(3600)
    [retry] = world.poll()
    assert retry.status == RunStatus.SUCCEEDED.value
    assert (retry.attempt, retry.trigger_context["event"]) == (2, "mention")
    first = world.store.list_runs("mentions")[-1]
    assert (first.status, first.reason) == (RunStatus.CANCELLED.value, "abandoned_before_launch")
    assert retry.fire_id == first.id
    assert world.poll() == []
    assert len(world.trigger_keys()) == 1
