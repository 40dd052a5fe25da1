"""Database engine factory and schema migrations (alembic, run programmatically).

SQLite (the default) gets WAL and a busy timeout; PostgreSQL goes through psycopg 3.
A SQLite file li creates is 0600 (its folder 0700): it holds the output tails of runs.
SQLite gives the -wal, -shm and -journal files the mode of the database file.
Errors from the driver are translated into :class:`engine.errors.DatabaseError`.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

from engine.errors import DatabaseError, InvalidInput

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
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option(
        "sqlalchemy.url", engine.url.render_as_string(hide_password=False).replace("%", "%%")
    )
    config.attributes["engine"] = engine
    return config


def head_revision(engine: Engine) -> str | None:
    """The newest migration revision in ``engine/migrations/``."""
    return ScriptDirectory.from_config(alembic_config(engine)).get_current_head()


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at (None for a blank database)."""
    try:
        with engine.connect() as connection:
            return MigrationContext.configure(connection).get_current_revision()
    except SQLAlchemyError as exc:
        raise translate_db_error(exc, engine) from None


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Migrate the database up to ``revision`` (idempotent)."""
    try:
        command.upgrade(alembic_config(engine), revision)
    except SQLAlchemyError as exc:
        raise translate_db_error(exc, engine) from None


def downgrade(engine: Engine, revision: str) -> None:
    """Migrate the database down to ``revision`` (``base`` empties it)."""
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
