"""Issue 10 item 10: the capped-poll counter counts a launch only when it is confirmed
(a launch callback that saw the spawn, or the run's exit code), never a bare claim; a
pass whose claims were handed back unlaunched is interrupted and leaves it unchanged."""

from __future__ import annotations

from sqlalchemy import update

from engine.github import GitHubClient
from engine.poll.pollpass import poll_once
from engine.store.models import PollState, RunStatus
from engine.store.pollstore import PollStore
from engine.store.store import FinishedRun
from tests.engine.test_poll_engine import REPO, World, world  # noqa: F401


def _counter(w: World, sid: int) -> int:
    return PollStore(w.store).get_state(sid).poller_consecutive_cap_no_dispatch


def _set_counter(w: World, sid: int, value: int) -> None:
    with w.store.engine.begin() as conn:
        conn.execute(
            update(PollState)
            .where(PollState.schedule_id == sid)
            .values(poller_consecutive_cap_no_dispatch=value)
        )


def _pass(w: World, sid: int, answer: object) -> list[int]:
    polls = PollStore(w.store)
    w.clock.advance(61)
    ticket = polls.claim_poll(sid, "engine-a")
    assert ticket is not None
    with GitHubClient(w.settings()) as client:
        report = poll_once(polls, w.settings(), client, ticket, "engine-a", launch=lambda c: answer)
    return [claim.run_id for claim in report.launched]


def test_a_pass_whose_claims_were_handed_back_leaves_the_counter(world: World) -> None:  # noqa: F811
    sid = world.add()
    _set_counter(world, sid, 2)
    world.clock.advance(1)
    world.sim.open_pr(REPO, "feature", {"a.py": "1\n"})
    assert len(_pass(world, sid, False)) == 1  # the engine is stopping: handed back
    assert _counter(world, sid) == 2


def test_a_queued_launch_counts_once_its_exit_code_is_recorded(world: World) -> None:  # noqa: F811
    sid = world.add()
    world.clock.advance(1)
    world.sim.open_pr(REPO, "feature", {"a.py": "1\n"})
    [run_id] = _pass(world, sid, None)  # queued, not yet spawned
    _set_counter(world, sid, 2)
    world.store.finish_run(
        run_id, FinishedRun(status=RunStatus.SUCCEEDED, exit_code=0), owner="engine-a"
    )
    assert _counter(world, sid) == 0


def test_a_cancelled_run_without_an_exit_code_confirms_nothing(world: World) -> None:  # noqa: F811
    sid = world.add()
    world.clock.advance(1)
    world.sim.open_pr(REPO, "feature", {"a.py": "1\n"})
    [run_id] = _pass(world, sid, None)
    _set_counter(world, sid, 2)
    world.store.finish_run(
        run_id,
        FinishedRun(status=RunStatus.CANCELLED, reason="engine_shutdown"),
        owner="engine-a",
    )
    assert _counter(world, sid) == 2
