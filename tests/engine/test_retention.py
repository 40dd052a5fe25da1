"""Retention of run rows and poll claims (engine.store.retention), on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Engine as SAEngine
from sqlalchemy import func, select
from sqlalchemy.orm import Session
from typer.testing import CliRunner

from engine.cli.app import app
from engine.config import Settings
from engine.errors import ConfigError, InvalidInput
from engine.poll.config import validate_poll_config
from engine.run.daemon import Engine
from engine.schedules.spec import ScheduleSpec
from engine.store import db as dbmod
from engine.store.enums import RunStatus, TriggerType
from engine.store.firing import Claim, FinishedRun
from engine.store.models import PollClaim, ScheduleRun
from engine.store.pollstore import PollStore
from engine.store.retention import RunRetention, prune
from engine.store.store import Store
from tests.enginekit import wait_until
from tests.factories import FakeClock, interval_spec, settings_for

DAY = timedelta(days=1)


@dataclass
class World:
    store: Store
    clock: FakeClock

    @property
    def polls(self) -> PollStore:
        return PollStore(self.store)

    def prune(self, policy: RunRetention) -> tuple[int, int]:
        done = prune(self.store.in_transaction, policy, self.clock())
        return done.runs, done.claims


@pytest.fixture
def world(db_url: str) -> Iterator[World]:
    engine = dbmod.make_engine(db_url)
    dbmod.upgrade(engine)
    clock = FakeClock()
    try:
        yield World(Store(engine, clock), clock)
    finally:
        engine.dispose()


def _add_runs(world: World, name: str, started: list[datetime], status: RunStatus) -> None:
    row = world.store.get_schedule(name)

    def work(session: Session) -> int:
        for moment in started:
            session.add(
                ScheduleRun(
                    schedule_id=row.id,
                    schedule_name=name,
                    trigger_context={},
                    status=status.value,
                    started_at=moment,
                    finished_at=None if status is RunStatus.RUNNING else moment,
                    stdout_tail="",
                    stderr_tail="",
                )
            )
        return len(started)

    world.store.in_transaction(work)


def _count(world: World, table: type[ScheduleRun] | type[PollClaim]) -> int:
    return world.store.in_transaction(
        lambda session: int(session.scalar(select(func.count()).select_from(table)) or 0)
    )


def test_old_runs_beyond_the_newest_per_schedule_are_pruned_and_running_ones_stay(
    world: World,
) -> None:
    world.store.add_schedule(interval_spec("tick", 60))
    world.store.add_schedule(interval_spec("tock", 60))
    now = world.clock()
    _add_runs(world, "tick", [now - 45 * DAY], RunStatus.RUNNING)
    _add_runs(world, "tick", [now - (40 + i) * DAY for i in range(30)], RunStatus.SUCCEEDED)
    _add_runs(world, "tick", [now - i * DAY for i in range(5)], RunStatus.FAILED)
    _add_runs(world, "tock", [now - 50 * DAY for _ in range(3)], RunStatus.SUCCEEDED)

    runs, claims = world.prune(RunRetention(keep_days=30, keep_per_schedule=10))

    # tick: 36 runs (the oldest id still running); the newest 10 stay, and of the older
    # 26 the running one stays.
    # tock: 3 runs, all within its newest 10.
    assert (runs, claims) == (25, 0)
    left = world.store.list_runs("tick", limit=1000)
    assert len(left) == 11
    assert sum(run.status == RunStatus.RUNNING for run in left) == 1
    assert len(world.store.list_runs("tock", limit=1000)) == 3
    assert world.prune(RunRetention(keep_days=30, keep_per_schedule=10)) == (0, 0)


def test_recent_runs_stay_however_many_there_are(world: World) -> None:
    world.store.add_schedule(interval_spec("tick", 60))
    now = world.clock()
    _add_runs(world, "tick", [now - timedelta(hours=i) for i in range(50)], RunStatus.SUCCEEDED)
    assert world.prune(RunRetention(keep_days=30, keep_per_schedule=0)) == (0, 0)
    assert _count(world, ScheduleRun) == 50


def poll_spec(name: str) -> ScheduleSpec:
    trigger = validate_poll_config({"repo": "acme/app", "poll_interval_seconds": 60})
    return ScheduleSpec(
        name=name,
        trigger_type=TriggerType.GITHUB_POLL,
        trigger_config=trigger.model_dump(mode="json"),
        command="sh",
        args=["-c", "true"],
    )


def _claim(world: World, schedule_id: int, pr: int, at: datetime, *, finish: bool) -> Claim:
    ticket = world.polls.claim_poll(schedule_id, "engine-a", manual=True)
    assert ticket is not None
    claim = world.polls.claim_event(
        ticket,
        pr_number=pr,
        occurred_at=at,
        head_sha=f"sha-{pr}-{at.timestamp()}",
        context={"pr_number": pr},
        argv=None,
        owner="engine-a",
        cursor_to=None,
    )
    assert isinstance(claim, Claim)
    if finish:
        assert world.store.finish_run(
            claim.run_id, FinishedRun(RunStatus.SUCCEEDED), owner="engine-a"
        )
    return claim


def _set_cursor(world: World, schedule_id: int, cursor: datetime) -> None:
    world.polls.set_cursor(schedule_id, cursor, reason="test", operator="test")


def test_a_claim_the_cursor_still_needs_is_never_pruned(world: World) -> None:
    row = world.store.add_schedule(poll_spec("watch"))
    start = world.clock()
    old, at_cursor, newer, running = (start + i * timedelta(minutes=1) for i in range(4))
    _claim(world, row.id, 1, old, finish=True)
    _claim(world, row.id, 2, at_cursor, finish=True)
    _claim(world, row.id, 3, newer, finish=True)
    _claim(world, row.id, 4, start - timedelta(minutes=5), finish=False)  # still running
    _set_cursor(world, row.id, at_cursor)
    world.clock.advance(60 * 86400)

    runs, claims = world.prune(RunRetention(keep_days=30, keep_per_schedule=0))

    # Only the claim strictly older than the cursor whose run finished goes, and its run.
    assert claims == 1
    assert not world.polls.is_claimed(row.id, 1, old, f"sha-1-{old.timestamp()}")
    for pr, at in ((2, at_cursor), (3, newer)):
        assert world.polls.is_claimed(row.id, pr, at, f"sha-{pr}-{at.timestamp()}")
    early = start - timedelta(minutes=5)
    assert world.polls.is_claimed(row.id, 4, early, f"sha-4-{early.timestamp()}")
    # The freed run went; the runs the kept claims point at stayed; the cursor-set row went.
    assert runs == 2
    assert _count(world, PollClaim) == 3


@pytest.mark.parametrize("seed", range(3))
def test_random_claims_at_or_after_the_cursor_all_survive(world: World, seed: int) -> None:
    rng = random.Random(seed)
    row = world.store.add_schedule(poll_spec("watch"))
    start = world.clock()
    moments = [start + timedelta(minutes=rng.randrange(0, 120)) for _ in range(25)]
    for pr, at in enumerate(moments, 1):
        _claim(world, row.id, pr, at, finish=rng.random() < 0.8)
    cursor = start + timedelta(minutes=rng.randrange(0, 120))
    _set_cursor(world, row.id, cursor)
    world.clock.advance(rng.choice([1, 40]) * 86400)

    world.prune(RunRetention(keep_days=30, keep_per_schedule=rng.choice([0, 5])))

    for pr, at in enumerate(moments, 1):
        if at >= cursor:
            assert world.polls.is_claimed(row.id, pr, at, f"sha-{pr}-{at.timestamp()}"), pr


@pytest.mark.parametrize(
    "env",
    [{"LI_RUNS_KEEP_DAYS": "0"}, {"LI_RUNS_KEEP_DAYS": "ten"}, {"LI_RUNS_KEEP_PER_SCHEDULE": "-1"}],
)
def test_bad_retention_settings_are_one_line_errors(env: dict[str, str]) -> None:
    with pytest.raises(ConfigError) as caught:
        Settings.from_env({"LI_DATABASE_URL": "sqlite:///x.db", **env})
    assert caught.value.reason == "invalid_setting"
    assert "\n" not in caught.value.message and next(iter(env)) in caught.value.message


def test_retention_defaults() -> None:
    config = Settings.from_env({"LI_DATABASE_URL": "sqlite:///x.db"})
    assert (config.runs_keep_days, config.runs_keep_per_schedule) == (30, 1000)
    with pytest.raises(InvalidInput):
        RunRetention(keep_days=0)


def test_li_db_prune_prunes_what_retention_allows(world: World, db_url: str) -> None:
    world.store.add_schedule(interval_spec("tick", 60))
    old = datetime.now(UTC) - 40 * DAY
    _add_runs(world, "tick", [old] * 5, RunStatus.SUCCEEDED)
    env = {"LI_DATABASE_URL": db_url, "LI_RUNS_KEEP_PER_SCHEDULE": "2"}
    result = CliRunner().invoke(app, ["db", "prune", "--json"], env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {
        "runs": 3,
        "claims": 0,
        "keys": 0,
        "removals": 0,
        "engines": 0,
        "cache": 0,
    }
    again = CliRunner().invoke(app, ["db", "prune"], env=env, catch_exceptions=False)
    assert again.stdout.strip() == (
        "pruned 0 run(s), 0 claim(s), 0 trigger key(s), 0 removal(s), 0 engine row(s) "
        "and 0 cache entr(ies)"
    )


def test_the_engine_prunes_in_the_background(db: SAEngine, db_url: str) -> None:
    store = Store(db)
    world = World(store, FakeClock())
    store.add_schedule(interval_spec("tick", 3600))
    _add_runs(world, "tick", [datetime.now(UTC) - 40 * DAY] * 4, RunStatus.SUCCEEDED)
    settings = settings_for(db_url, runs_keep_per_schedule=1, retention_interval_seconds=0.2)
    engine = Engine(settings, store)
    engine.start()
    stop = threading.Event()
    thread = threading.Thread(target=engine.run_forever, args=(stop,))
    thread.start()
    try:
        assert wait_until(lambda: _count(world, ScheduleRun) == 1, timeout=20)
    finally:
        stop.set()
        thread.join(30)
        engine.close()
