"""ETags survive engine restarts, and only settled ones do (issue 19).

A pass stores the ETags of its listings in the transaction that settles it
(engine.store.pollstore.settle_poll), so the engine no longer drops them at start:

- a restart with nothing changed on GitHub costs 0 rate-limit units (every poll a 304);
- a pass that fetched a listing and died before settling left no ETag, so the next engine
  reads the listing in full and fires what the dead pass never reached. With the ETag
  stored at fetch time, that next poll is a 304 whose cached first page hides the events
  on page 2 (the test's second-oldest pull request).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine as SAEngine
from sqlalchemy import select, text
from sqlalchemy.orm import Session

from engine.github import GitHubClient, RequestPacer, SqlEtagCache
from engine.poll.config import validate_poll_config
from engine.poll.pollpass import poll_once
from engine.run.daemon import Engine
from engine.schedules.spec import ScheduleSpec
from engine.store import db as dbmod
from engine.store.models import HttpCacheEntry, RunStatus, TriggerType
from engine.store.pollstore import PollStore
from engine.store.store import Claim, Store
from ghsim import GitHubSim
from tests.factories import FakeClock, settings_for

REPO = "octo/widgets"
ARGS = ["-c", 'echo "$@"', "fire", "{{ repo }}", "{{ pr_number }}"]
MAINT = ("maint", 501)


@dataclass
class World:
    sim: GitHubSim
    clock: FakeClock
    store: Store
    db: SAEngine
    db_url: str
    token: str

    def settings(self) -> Any:
        return settings_for(self.db_url, github_api_url=self.sim.url, github_token=self.token)

    def add(self, config: dict[str, Any]) -> int:
        trigger = validate_poll_config({"repo": REPO, "poll_interval_seconds": 60, **config})
        spec = ScheduleSpec(
            name=f"s{uuid.uuid4().hex[:6]}",
            trigger_type=TriggerType.GITHUB_POLL,
            trigger_config=trigger.model_dump(mode="json"),
            command="sh",
            args=ARGS,
        )
        return self.store.add_schedule(spec).id

    def engine_pass(self) -> list[Any]:
        """A fresh engine process: start, one pass over everything due, close."""
        self.clock.advance(61)
        engine = Engine(self.settings(), self.store)
        engine.start()
        try:
            return engine.run_once()
        finally:
            engine.close()

    def units_left(self) -> int:
        return self.sim.bucket(self.token).remaining

    def cached_keys(self, schedule_id: int) -> list[str]:
        with Session(self.db) as session:
            keys = session.scalars(select(HttpCacheEntry.key)).all()
        return [key for key in keys if key.endswith(f";scope=schedule:{schedule_id}")]


@pytest.fixture
def world(db: SAEngine, db_url: str, tmp_path: Path) -> Iterator[World]:
    clock = FakeClock()
    token = f"tok-{uuid.uuid4().hex}"
    with GitHubSim(tmp_path / "sim", clock=clock) as sim:
        sim.add_token(token, ("li-bot", 900))
        sim.create_repo(REPO)
        yield World(sim, clock, Store(db, clock), db, db_url, token)


def test_a_restart_with_nothing_changed_costs_no_rate_limit_unit(world: World) -> None:
    mentions = {
        "handle": "claude",
        "allowlist": [MAINT[1]],
        "self_user_id": 900,
        "verbs": ["review"],
        "default_verb": "review",
    }
    world.add({"event": "mentions", "mentions": mentions})
    world.add({})  # and a pr_updated schedule on the same repository
    world.clock.advance(5)
    world.sim.open_pr(REPO, "feature", {"a.py": "1\n"})
    world.engine_pass()  # full listings: 200s, ETags stored as the passes settle
    world.sim.clear_requests()
    before = world.units_left()

    assert world.engine_pass() == []  # a new process, nothing changed on GitHub
    statuses = [r.status for r in world.sim.requests_to(r"/(pulls|comments)$")]
    assert statuses == [304] * 4, statuses  # pulls twice, both comment feeds
    assert world.units_left() == before  # a restart costs 0 units


def test_a_pass_that_died_before_settling_leaves_no_etag_to_hide_its_events(
    world: World,
) -> None:
    sid = world.add({"max_fires_per_poll": 1})
    world.sim.commit_to_base(REPO, {"work.txt": "work\n"}, branch="feature")
    numbers = []
    for _ in range(102):  # two pages of 100: the two oldest pull requests are on page 2
        world.clock.advance(1)
        numbers.append(world.sim.open_pr(REPO, "feature").number)
    oldest, second = numbers[0], numbers[1]

    # An engine's pass reads the listing and dies on its first fire, before settling.
    world.clock.advance(61)
    pstore = PollStore(world.store)
    ticket = pstore.claim_poll(sid, "engine-that-dies")
    assert ticket is not None
    cache = SqlEtagCache(world.db)
    client = GitHubClient(world.settings(), cache=cache, pacer=RequestPacer(600_000))

    def killed(claim: Claim) -> None:
        raise SystemExit("kill -9 between the claim and the launch")

    with client, pytest.raises(SystemExit):
        poll_once(pstore, world.settings(), client, ticket, "engine-that-dies", launch=killed)
    assert [r.query.get("page") for r in world.sim.requests_to(r"/pulls$")] == [None, "2"]
    assert world.cached_keys(sid) == []  # nothing settled: no ETag

    # Its lease expires; the next engine reads the listing in full and fires the next one.
    world.sim.clear_requests()
    world.clock.advance(600)
    runs = world.engine_pass()
    assert [r.status for r in world.sim.requests_to(r"/pulls$")] == [200, 200]
    fired = {int(r.trigger_context["pr_number"]) for r in runs}
    assert second in fired and oldest in fired  # the dead pass's claim is fired again
    assert all(r.status == RunStatus.SUCCEEDED.value for r in runs)
    assert len(world.cached_keys(sid)) == 1  # this pass settled: its ETag is kept

    world.sim.clear_requests()
    world.engine_pass()
    assert [r.status for r in world.sim.requests_to(r"/pulls$")][:1] == [304]


def test_migration_0010_drops_the_poll_etags_an_older_engine_may_not_have_settled(
    db_url: str,
) -> None:
    """Before 0010 an engine stored a poll ETag at fetch time and dropped them all at its
    start; from 0010 on the start keeps them, so the upgrade drops the old ones once."""
    engine = dbmod.make_engine(db_url)
    kept = "http://gh/repos/o/r/pulls?state=open#anonymous;shape=raw;scope=wrapper"
    dropped = [
        "http://gh/repos/o/r/pulls?state=open#anonymous;shape=x;scope=schedule:1",
        "http://gh/repos/o/r/issues/comments?sort=updated#anonymous;shape=y;scope=schedule:1:issue-comments",
    ]
    try:
        dbmod.upgrade(engine, "0008")
        insert = text(
            "INSERT INTO http_cache (key, etag, body, link_next, fetched_at, status)"
            " VALUES (:key, '\"e\"', '[]', NULL, '2026-11-30 10:00:00', 200)"
        )
        with engine.begin() as connection:
            for key in [kept, *dropped]:
                connection.execute(insert, {"key": key})
        dbmod.upgrade(engine)
        assert SqlEtagCache(engine).keys() == [kept]
        dbmod.downgrade(engine, "0008")
        assert dbmod.current_revision(engine) == "0008"
    finally:
        engine.dispose()
