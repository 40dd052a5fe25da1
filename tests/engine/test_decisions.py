"""The decision table: one stored decision per event a github_poll pass sees, bounded."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import func, select

from engine.errors import InvalidInput
from engine.poll.decisions import Retention, list_decisions, list_pr_runs, record_decisions
from engine.poll.plan import PollEvent
from engine.poll.pollpass import EventDecision
from engine.store.models import PollDecision
from tests.engine.test_poll_engine import REPO, LongEngine, World, world

__all__ = ["world"]


def decisions_of(world: World, pr: int | None = None) -> list[tuple[int, str, str | None]]:
    return [
        (row.pr_number, row.decision, row.detail)
        for row in list_decisions(world.store, "watch", pr=pr)
    ]


def test_every_fate_is_stored_once_with_its_pr_and_head(world: World) -> None:
    world.add(filters={"base": "main", "draft": False}, max_fires_per_poll=1)
    world.clock.advance(1)
    sim = world.sim
    fork = sim.open_pr(REPO, "evil", {"e.py": "1\n"}, from_fork="mallory/widgets")
    draft = sim.open_pr(REPO, "wip", {"w.py": "1\n"}, draft=True)
    world.clock.advance(1)
    first = sim.open_pr(REPO, "one", {"a.py": "1\n"})
    world.clock.advance(1)
    second = sim.open_pr(REPO, "two", {"b.py": "1\n"})
    long = LongEngine(world)
    try:
        [run] = long.poll()  # cap 1: the first fires, the second is held
        assert decisions_of(world, fork.number) == [
            (fork.number, "excluded:same_repo_only", "not_same_repo")
        ]
        assert decisions_of(world, draft.number) == [(draft.number, "excluded:draft", "draft")]
        [fired] = list_decisions(world.store, "watch", pr=first.number)
        assert (fired.decision, fired.run_id, fired.head_sha) == ("fired", run.id, first.head_sha)
        assert decisions_of(world, second.number) == [(second.number, "held", None)]
        long.poll()  # the held one fires; the others are re-offered, stored once
        long.poll()
        long.poll()
    finally:
        long.close()
    assert [d for _, d, _ in decisions_of(world, second.number)] == ["held", "fired"]
    assert [d for _, d, _ in decisions_of(world, first.number)] == ["fired"]  # not again
    assert len(decisions_of(world, fork.number)) == 1
    # Runs know their PR.
    [second_run] = list_pr_runs(world.store, "watch", second.number)
    assert second_run.pr_number == second.number
    assert list_pr_runs(world.store, "watch", fork.number) == []


def test_a_refused_render_is_stored_then_skipped_after_refusals(world: World) -> None:
    world.add(args=["-c", "true", "{{ no_such_variable }}"])
    world.clock.advance(1)
    pr = world.sim.open_pr(REPO, "feature", {"a.py": "1\n"})
    long = LongEngine(world)
    try:
        for _ in range(4):
            long.poll()
    finally:
        long.close()
    assert decisions_of(world, pr.number) == [
        (pr.number, "refused:template_undefined", None),
        (pr.number, "skipped_after_refusals", "template_undefined"),
    ]


def test_a_base_filter_is_named_by_its_filter(world: World) -> None:
    world.add(filters={"base": "release"})
    world.clock.advance(1)
    pr = world.sim.open_pr(REPO, "feature", {"a.py": "1\n"})
    assert world.poll() == []
    assert decisions_of(world, pr.number) == [(pr.number, "excluded:base", "base_mismatch")]


def _decision(pr: int, at_offset: int, world: World) -> EventDecision:
    at = world.clock() - timedelta(seconds=at_offset)
    event = PollEvent(pr_number=pr, at=at, context={"head_sha": f"{pr:040x}"})
    return EventDecision(event, "excluded:not_same_repo")


def test_retention_keeps_the_table_bounded_by_rows_and_by_days(world: World) -> None:
    sid = world.add()
    rows_cap = Retention(keep_days=0, keep_rows=50)
    for batch in range(10):
        decisions = [_decision(batch * 20 + i + 1, i, world) for i in range(20)]
        record_decisions(world.store, sid, decisions, rows_cap)
        world.clock.advance(1)

    def count() -> int:
        with world.store.engine.connect() as connection:
            return int(connection.scalar(select(func.count()).select_from(PollDecision)) or 0)

    assert count() == 50
    # The newest are the ones kept.
    assert min(r.pr_number for r in list_decisions(world.store, "watch")) == 151
    world.clock.advance(40 * 86400)
    record_decisions(world.store, sid, [_decision(999, 0, world)], Retention(keep_days=31))
    assert [r.pr_number for r in list_decisions(world.store, "watch")] == [999]


@pytest.mark.parametrize(
    "env",
    [
        {"LI_DECISIONS_KEEP_DAYS": "0", "LI_DECISIONS_KEEP_ROWS": "0"},
        {"LI_DECISIONS_KEEP_DAYS": "-1"},
        {"LI_DECISIONS_KEEP_ROWS": "lots"},
    ],
)
def test_a_retention_that_is_unbounded_or_malformed_is_refused(env: dict[str, str]) -> None:
    with pytest.raises(InvalidInput) as caught:
        Retention.from_env(env)
    assert caught.value.reason == "invalid_retention"


def test_the_default_retention_keeps_a_month() -> None:
    policy = Retention.from_env({})
    assert (policy.keep_days, policy.keep_rows) == (31, 10_000)
