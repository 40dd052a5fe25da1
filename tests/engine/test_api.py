"""engine.api: the typed, read-only surface kdev reads li's database through.

Real parts: a real li database on SQLite and PostgreSQL, written by a real engine pass
that polls ghsim over HTTP; the answers are checked against li's own read API.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from engine.api import LiReader, open_readonly
from engine.errors import DatabaseError, InvalidInput, NotFound
from engine.health.status import schedule_health
from engine.poll.config import validate_poll_config
from engine.poll.decisions import list_decisions, list_pr_runs
from engine.schedules.spec import ScheduleSpec
from engine.store import db as dbmod
from engine.store.models import TriggerType
from tests.engine.test_poll_engine import REPO, World, world

__all__ = ["world"]


def test_importing_the_api_imports_no_database_library() -> None:
    found = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import engine.api"],
        capture_output=True,
        text=True,
        check=True,
    ).stderr
    imported = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in found.splitlines()}
    assert "engine" in imported  # the list is really read
    assert not {"sqlalchemy", "alembic"} & imported


def test_a_missing_sqlite_file_is_unreadable_and_never_created(tmp_path: Path) -> None:
    path = tmp_path / "absent" / "li.db"
    with pytest.raises(DatabaseError) as caught:
        open_readonly(f"sqlite:///{path}")
    assert caught.value.reason == "li_unreadable"
    assert str(path) in caught.value.message
    assert not path.parent.exists()


def test_the_url_comes_from_li_database_url_when_none_is_given(tmp_path: Path) -> None:
    path = tmp_path / "from-env.db"
    with pytest.raises(DatabaseError, match="from-env.db"):
        open_readonly(None, {"LI_DATABASE_URL": f"sqlite:///{path}"})


def test_a_malformed_url_keeps_its_own_reason() -> None:
    for url in ("postgresql://user@host:port/li", "no scheme at all"):
        with pytest.raises(InvalidInput) as caught:
            open_readonly(url)
        assert caught.value.reason == "invalid_database_url"


def test_a_database_not_at_the_newest_schema_is_refused_not_migrated(db_url: str) -> None:
    # An empty database: SQLite needs its file to exist, PostgreSQL has it already.
    path = dbmod.sqlite_path(db_url)
    if path is not None:
        path.touch()
    with pytest.raises(DatabaseError) as caught:
        open_readonly(db_url)
    assert caught.value.reason == "li_unreadable"
    assert "newest schema" in caught.value.message
    blank = dbmod.make_engine(db_url)
    try:
        assert dbmod.current_revision(blank) is None  # nothing was migrated
    finally:
        blank.dispose()


def add_mentions(world: World, name: str, handle: str) -> None:
    block = {"handle": handle, "allowlist": [7], "self_user_id": 8}
    config = validate_poll_config(
        {"repo": REPO.upper(), "poll_interval_seconds": 60, "event": "mentions", "mentions": block}
    )
    spec = ScheduleSpec(
        name=name,
        trigger_type=TriggerType.GITHUB_POLL,
        trigger_config=config.model_dump(mode="json"),
        command="sh",
        args=["-c", "true"],
    )
    world.store.add_schedule(spec)


def test_pr_history_is_what_li_itself_shows_for_the_pr(world: World) -> None:
    world.add(max_fires_per_poll=1)
    add_mentions(world, "summon", "octo-bot")
    world.add("other", repo="octo/gadgets")
    world.clock.advance(1)
    first = world.sim.open_pr(REPO, "one", {"a.py": "1\n"})
    world.clock.advance(1)
    second = world.sim.open_pr(REPO, "two", {"b.py": "1\n"})
    world.poll()  # cap 1: the first fires, the second is held
    with open_readonly(world.db_url) as li:
        assert isinstance(li, LiReader)
        assert {(s.name, s.repo.lower(), s.mention_handle) for s in li.poll_schedules()} == {
            ("watch", REPO, None),
            ("summon", REPO, "octo-bot"),
            ("other", "octo/gadgets", None),
        }
        history = li.pr_history(REPO.upper(), first.number)  # any case
        held = li.pr_history(REPO, second.number)
    assert sorted(s.name for s in history.schedules) == ["summon", "watch"]
    assert [d.to_json() for d in history.decisions] == [
        row.to_json() for row in list_decisions(world.store, "watch", pr=first.number)
    ]
    [fired] = history.decisions
    assert (fired.decision, fired.head_sha) == ("fired", first.head_sha)
    assert fired.pr_number == first.number
    [run] = history.runs
    [stored] = list_pr_runs(world.store, "watch", first.number)
    assert (run.id, run.schedule, run.status, run.pr_number) == (
        stored.id,
        "watch",
        stored.status,
        first.number,
    )
    assert fired.run_id == run.id
    assert run.to_json()["started_at"].endswith("Z")
    assert [d.decision for d in held.decisions] == ["held"] and held.runs == ()


def test_schedule_health_rows_are_li_schedule_health_typed(world: World) -> None:
    world.add()
    world.add("quiet", repo="octo/gadgets")
    world.clock.advance(1)
    world.sim.open_pr(REPO, "one", {"a.py": "1\n"})
    world.poll()
    engine_side = {item.name: item for item in schedule_health(world.store)}
    with open_readonly(world.db_url) as li:
        rows = li.schedule_health(now=world.clock())
        [one] = li.schedule_health("watch", now=world.clock())
        with pytest.raises(NotFound):
            li.schedule_health("no-such-schedule")
    assert [row.name for row in rows] == sorted(engine_side)
    for row in rows:
        item = engine_side[row.name]
        assert row.state == item.health.state.value
        assert [c.message for c in row.causes] == [c.message for c in item.health.causes]
        assert row.last_poll_at == item.facts.last_poll_at
        assert row.paging == (row.state in ("blind", "stale", "overdue", "failing"))
    assert one == next(row for row in rows if row.name == "watch")
    assert one.last_healthy_poll_at is not None
