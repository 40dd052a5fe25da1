"""Database engine factory and schema migrations (alembic, run programmatically).

Alembic is imported only to migrate: the revision check reads ``alembic_version`` and
compares it with :data:`engine.store.schemahead.HEAD_REVISION` (issue 25).

SQLite (the default) gets WAL and a busy timeout; PostgreSQL goes through psycopg 3.
A SQLite file li creates is 0600 (its folder 0700): it holds the output tails of runs.
SQLite gives the -wal, -shm and -journal files the mode of the database file.
Errors from the driver are translated into :class:`engine.errors.DatabaseError`.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, create_engine, event, inspect, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from engine.errors import DatabaseError, InvalidInput
from engine.store.schemahead import HEAD_REVISION as HEAD_REVISION
from engine.store.schemahead import VERSION_TABLE

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS_DIR = Path(__file__).resolve().parents[1] / "migrations"
SQLITE_BUSY_TIMEOUT_MS = 10_000
SQLITE_FILE_MODE = 0o600
SQLITE_DIR_MODE = 0o700


def is_sqlite(url: str) -> bool:
    """True for ``sqlite://`` URLs."""
    return url.startswith("sqlite")


def sqlite_path(url: str) -> Path | None:
    """The file behind a SQLite URL, or None for memory databases and other backends."""
    if not is_sqlite(url):
        return None
    database = make_url(url).database
    if not database or database == ":memory:":
        return None
    return Path(database)


def _on_sqlite_connect(dbapi_connection: sqlite3.Connection, _record: Any) -> None:
    # pysqlite's own transaction handling is disabled so SQLAlchemy's BEGIN is the one
    # that counts; WAL lets readers (li schedule list) run beside a writing engine.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA journal_mode = WAL")
    cursor.execute("PRAGMA foreign_keys = ON")
    cursor.execute("PRAGMA synchronous = NORMAL")
    cursor.close()


def _on_sqlite_begin(connection: Any) -> None:
    # IMMEDIATE takes the write lock at BEGIN, so two writers queue on busy_timeout
    # instead of failing later with "database is locked" on upgrade from a read lock.
    connection.exec_driver_sql("BEGIN IMMEDIATE")


def _prepare_sqlite_file(path: Path, *, create_parent: bool) -> None:
    """Create a missing database file (and with ``create_parent`` its folder) owner-only.

    An empty file is a valid empty SQLite database; creating it here, not in SQLite
    (which uses 0644), is what makes the file and its -wal/-shm siblings 0600.
    An existing file keeps the mode its operator gave it.
    """
    if create_parent:
        try:
            path.parent.mkdir(mode=SQLITE_DIR_MODE, parents=True, exist_ok=True)
        except OSError as exc:
            raise DatabaseError(
                f"cannot create database folder {path.parent}: {exc.strerror}",
                "database_unwritable",
            ) from None
    try:
        if path.exists() or not path.parent.is_dir():
            return  # a missing folder is SQLite's "unable to open" error, as before
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, SQLITE_FILE_MODE))
    except FileExistsError:
        pass  # another process created it first
    except OSError as exc:
        raise DatabaseError(
            f"cannot create database {path}: {exc.strerror}", "database_unwritable"
        ) from None


def make_engine(url: str, *, create_parent: bool = False) -> Engine:
    """Create an Engine for ``url``; with ``create_parent`` make a SQLite file's folder."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise InvalidInput(
            f"LI_DATABASE_URL is not a database URL: {url!r}", "invalid_database_url"
        ) from None
    path = sqlite_path(url)
    if path is not None:
        _prepare_sqlite_file(path, create_parent=create_parent)
    if is_sqlite(url):
        engine = create_engine(
            parsed,
            connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000},
        )
        event.listen(engine, "connect", _on_sqlite_connect)
        event.listen(engine, "begin", _on_sqlite_begin)
        return engine
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    try:
        return create_engine(parsed, pool_pre_ping=True, pool_size=10, max_overflow=10)
    except (ModuleNotFoundError, SQLAlchemyError) as exc:
        raise DatabaseError(
            f"cannot use database URL {parsed.render_as_string()}: {exc}", "database_unavailable"
        ) from None


def alembic_config(engine: Engine) -> Config:
    """An alembic Config bound to ``engine`` (no alembic.ini needed)."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option(
        "sqlalchemy.url", engine.url.render_as_string(hide_password=False).replace("%", "%%")
    )
    config.attributes["engine"] = engine
    return config


def head_revision(engine: Engine) -> str | None:
    """The newest migration revision in ``engine/migrations/`` (without alembic)."""
    return HEAD_REVISION


def script_head_revision() -> str | None:
    """The head as alembic's script directory computes it (imports alembic)."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory(str(MIGRATIONS_DIR)).get_current_head()


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at (None for a blank database): the row of
    ``alembic_version``, read as alembic's ``MigrationContext`` reads it."""
    try:
        with engine.connect() as connection:
            if not inspect(connection).has_table(VERSION_TABLE):
                return None
            rows = connection.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).all()
    except SQLAlchemyError as exc:
        raise translate_db_error(exc, engine) from None
    if len(rows) > 1:
        raise DatabaseError(
            f"database has {len(rows)} schema revisions in {VERSION_TABLE}, not one",
            "schema_not_at_head",
        )
    return str(rows[0][0]) if rows else None


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Migrate the database up to ``revision`` (idempotent)."""
    from alembic import command

    try:
        command.upgrade(alembic_config(engine), revision)
    except SQLAlchemyError as exc:
        raise translate_db_error(exc, engine) from None


def downgrade(engine: Engine, revision: str) -> None:
    """Migrate the database down to ``revision`` (``base`` empties it)."""
    from alembic import command

    try:
        command.downgrade(alembic_config(engine), revision)
    except SQLAlchemyError as exc:
        raise translate_db_error(exc, engine) from None


def require_head(engine: Engine) -> None:
    """Raise ``schema_not_at_head`` unless the database is at the newest revision."""
    current, head = current_revision(engine), head_revision(engine)
    if current != head:
        raise DatabaseError(
            f"database schema is at {current or 'nothing'}, not {head}; run `li db upgrade`",
            "schema_not_at_head",
        )


def translate_db_error(exc: BaseException, engine: Engine) -> DatabaseError:
    """Map a driver error to one line with a reason code (password hidden)."""
    where = engine.url.render_as_string(hide_password=True)
    text = str(getattr(exc, "orig", exc)).splitlines()[0] if str(exc) else type(exc).__name__
    lowered = text.lower()
    if (
        "readonly" in lowered
        or "read-only" in lowered
        or "unable to open" in lowered
        or "permission denied" in lowered
    ):
        return DatabaseError(f"database {where} is not writable: {text}", "database_unwritable")
    if "locked" in lowered:
        return DatabaseError(f"database {where} is locked: {text}", "database_locked")
    return DatabaseError(f"database {where} failed: {text}", "database_error")
