from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, inspect, text

import engine
from engine.errors import DatabaseError
from engine.store import db as dbmod
from engine.store.models import Base


def test_a_blank_database_upgrades_to_head(db_url: str) -> None:
    engine = dbmod.make_engine(db_url)
    assert dbmod.current_revision(engine) is None
    dbmod.upgrade(engine)
    assert dbmod.current_revision(engine) == dbmod.head_revision(engine)
    tables = set(inspect(engine).get_table_names())
    assert {"schedules", "schedule_runs", "engine_instances"} <= tables
    engine.dispose()


def test_the_models_and_the_migrations_do_not_drift(db: Engine) -> None:
    with db.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        diff = compare_metadata(context, Base.metadata)
    assert diff == []


def test_downgrade_to_base_then_upgrade_round_trips(db: Engine) -> None:
    dbmod.downgrade(db, "base")
    assert dbmod.current_revision(db) is None
    assert "schedules" not in inspect(db).get_table_names()
    dbmod.upgrade(db)
    assert dbmod.current_revision(db) == dbmod.head_revision(db)
    assert "schedules" in inspect(db).get_table_names()


def test_the_migration_scripts_live_inside_the_package_and_ship_with_it() -> None:
    """An installed wheel carries every migration file (docs/decisions.md D18)."""
    package = Path(engine.__file__).parent
    assert dbmod.MIGRATIONS_DIR == package / "migrations"
    pyproject = tomllib.loads((package.parent / "pyproject.toml").read_text(encoding="utf-8"))
    globs = pyproject["tool"]["setuptools"]["package-data"]["engine"]
    shipped = {path for pattern in globs for path in package.glob(pattern)}
    on_disk = {
        path
        for path in dbmod.MIGRATIONS_DIR.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    assert on_disk and on_disk == shipped


def test_the_head_known_without_alembic_is_the_scripts_head() -> None:
    """Opening the store compares with a constant (issue 25): it must be alembic's head."""
    assert dbmod.head_revision(dbmod.make_engine("sqlite://")) == dbmod.script_head_revision()
    assert dbmod.HEAD_REVISION == dbmod.script_head_revision()


def test_the_revision_is_read_as_alembic_reads_it(db: Engine) -> None:
    with db.connect() as connection:
        assert MigrationContext.configure(connection).get_current_revision() == dbmod.HEAD_REVISION
    assert dbmod.current_revision(db) == dbmod.HEAD_REVISION
    dbmod.downgrade(db, "0009")
    assert dbmod.current_revision(db) == "0009"


def test_two_version_rows_fail_loud(db: Engine) -> None:
    with db.begin() as connection:
        connection.execute(text("INSERT INTO alembic_version (version_num) VALUES ('0009')"))
    with pytest.raises(DatabaseError) as caught:
        dbmod.current_revision(db)
    assert caught.value.reason == "schema_not_at_head"
    assert "2 schema revisions" in str(caught.value)
