"""``li schedule list`` read without SQLAlchemy (engine.cli.quicklist, issue 25) gives
exactly the rows the store gives, and steps aside whenever it cannot prove that."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine, update

from engine.cli import quicklist
from engine.cli.output import schedule_dict, trigger_text
from engine.poll.config import validate_poll_config
from engine.schedules.spec import ScheduleSpec
from engine.store import db as dbmod
from engine.store.models import Schedule, TriggerType
from engine.store.store import Store
from tests.factories import interval_spec


@pytest.fixture
def sqlite_db(tmp_path: Path) -> tuple[str, Engine]:
    url = f"sqlite:///{tmp_path / 'li.db'}"
    engine = dbmod.make_engine(url)
    dbmod.upgrade(engine)
    return url, engine


def _fill(store: Store, engine: Engine) -> None:
    poll = validate_poll_config({"repo": "acme/app", "poll_interval_seconds": 60})
    store.add_schedule(interval_spec("tick", every=90))
    store.add_schedule(
        ScheduleSpec(
            name="Nightly",  # upper case sorts first, as SQL's ORDER BY does
            trigger_type=TriggerType.CRON,
            cron="0 3 * * *",
            timezone="Europe/Berlin",
            command="echo",
            args=["a b", "ünï"],
            cwd="/srv",
            max_runs=7,
            env_passthrough=["HOME", "LANG"],
            retry_max_attempts=3,
            retry_backoff_seconds=45,
        ),
        managed_by="ops.yaml",
    )
    store.add_schedule(
        ScheduleSpec(
            name="watch",
            trigger_type=TriggerType.GITHUB_POLL,
            trigger_config=poll.model_dump(mode="json"),
            command="sh",
        )
    )
    store.set_enabled("tick", False)
    moment = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)
    with engine.begin() as connection:
        connection.execute(
            update(Schedule)
            .where(Schedule.name == "watch")
            .values(last_fire_at=moment, lease_owner="e1", lease_until=moment, run_count=4)
        )


def test_the_rows_are_the_stores_rows(sqlite_db: tuple[str, Engine]) -> None:
    url, engine = sqlite_db
    store = Store(engine)
    _fill(store, engine)
    orm = store.list_schedules()
    quick = quicklist.quick_schedules({"LI_DATABASE_URL": url})
    assert quick is not None and [row.name for row in quick] == ["Nightly", "tick", "watch"]
    assert [json.dumps(schedule_dict(r), default=str) for r in quick] == [
        json.dumps(schedule_dict(r), default=str) for r in orm
    ]
    assert [trigger_text(r) for r in quick] == [trigger_text(r) for r in orm]
    assert [(r.enabled, r.run_count) for r in quick] == [(r.enabled, r.run_count) for r in orm]
    assert quick[2].lease_until is not None and quick[2].lease_until.tzinfo is UTC
    engine.dispose()


def test_it_reads_every_column_the_verb_shows() -> None:
    """A column added to the model and shown by ``schedule_dict`` must be read here too."""
    shown = set(Schedule.__table__.columns.keys()) - {"id", "version"}
    assert set(quicklist.COLUMNS) == shown


def test_it_opens_the_file_as_the_store_does(tmp_path: Path) -> None:
    connection = sqlite3.connect(tmp_path / "trace.db")
    statements: list[str] = []
    connection.set_trace_callback(statements.append)
    dbmod._on_sqlite_connect(connection, None)
    connection.close()
    assert statements == list(quicklist.PRAGMAS)
    assert quicklist.BUSY_TIMEOUT_MS == dbmod.SQLITE_BUSY_TIMEOUT_MS


@pytest.mark.parametrize(
    "url",
    ["sqlite:///li.db", "sqlite:////var/lib/li/li.db", "sqlite:///./a-b_c/li.2.db"],
)
def test_a_plain_url_names_the_file_the_store_opens(url: str) -> None:
    assert quicklist.sqlite_file(url) == dbmod.sqlite_path(url)


@pytest.mark.parametrize(
    "url",
    [
        "sqlite://",
        "sqlite:///:memory:",
        "sqlite:///li.db?mode=ro",
        "sqlite:///l%69.db",
        "sqlite+pysqlite:///li.db",
        "postgresql://u@h/li",
    ],
)
def test_any_other_url_takes_the_full_path(url: str) -> None:
    assert quicklist.sqlite_file(url) is None
    assert quicklist.quick_schedules({"LI_DATABASE_URL": url}) is None


def test_a_missing_blank_or_old_database_takes_the_full_path(
    sqlite_db: tuple[str, Engine], tmp_path: Path
) -> None:
    missing = tmp_path / "missing.db"
    assert quicklist.quick_schedules({"LI_DATABASE_URL": f"sqlite:///{missing}"}) is None
    assert not missing.exists()  # the full path creates it, owner-only (engine.store.db)
    blank = tmp_path / "blank.db"
    blank.write_bytes(b"")
    assert quicklist.quick_schedules({"LI_DATABASE_URL": f"sqlite:///{blank}"}) is None
    url, engine = sqlite_db
    dbmod.downgrade(engine, "0010")
    assert quicklist.quick_schedules({"LI_DATABASE_URL": url}) is None
    dbmod.upgrade(engine)
    assert quicklist.quick_schedules({"LI_DATABASE_URL": url}) == []
    engine.dispose()


def test_an_environment_only_settings_can_judge_takes_the_full_path(
    sqlite_db: tuple[str, Engine],
) -> None:
    url, engine = sqlite_db
    assert quicklist.quick_schedules({"LI_DATABASE_URL": url, "LI_POLL_THREADS": "4"}) == []
    for odd in ({"LI_MAX_CONCURRENT_ACTIONS": "many"}, {"GITHUB_TOKEN_FILE": "/nowhere"}):
        assert quicklist.quick_schedules({"LI_DATABASE_URL": url, **odd}) is None
    engine.dispose()


def test_a_corrupt_row_takes_the_full_path(sqlite_db: tuple[str, Engine]) -> None:
    url, engine = sqlite_db
    Store(engine).add_schedule(interval_spec("tick"))
    with engine.begin() as connection:
        connection.exec_driver_sql("UPDATE schedules SET args = 'not json'")
    assert quicklist.quick_schedules({"LI_DATABASE_URL": url}) is None
    engine.dispose()
