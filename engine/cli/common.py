"""Shared plumbing of the ``li`` verbs: settings, the store, error mapping, JSON and tables.

The parts that need no SQLAlchemy (the guard, JSON, tables, how a schedule or a run is
shown) live in :mod:`engine.cli.output` and are re-exported here. Every command body
runs inside :func:`guarded`: an error prints one line ``error: <message>
[<reason_code>]`` on stderr and exits with the code of its class (docs/cli.md);
database engines the command opened are disposed when it ends."""

from __future__ import annotations

from datetime import UTC, datetime

from engine.cli.options import EXIT_RUN_NOT_SUCCEEDED as EXIT_RUN_NOT_SUCCEEDED
from engine.cli.options import GLOBAL_OPTIONS as GLOBAL_OPTIONS
from engine.cli.output import duration_of as duration_of
from engine.cli.output import emit_json as emit_json
from engine.cli.output import guarded as guarded
from engine.cli.output import iso as iso
from engine.cli.output import opened
from engine.cli.output import run_dict as run_dict
from engine.cli.output import schedule_dict as schedule_dict
from engine.cli.output import table as table
from engine.cli.output import trigger_text as trigger_text
from engine.config import Settings
from engine.errors import InvalidInput
from engine.store import db as dbmod
from engine.store.models import Schedule, TriggerType
from engine.store.store import Store


def settings() -> Settings:
    return Settings.from_env()


def open_store(config: Settings, *, migrate: bool = True) -> Store:
    """A Store on the configured database. SQLite is upgraded to head on first use;
    PostgreSQL is never migrated implicitly (``li db upgrade``)."""
    engine = opened(dbmod.make_engine(config.database_url, create_parent=True))
    if migrate:
        if dbmod.is_sqlite(config.database_url):
            if dbmod.current_revision(engine) != dbmod.head_revision(engine):
                dbmod.upgrade(engine)
        else:
            dbmod.require_head(engine)
    return Store(engine)


def parse_moment(text: str) -> datetime:
    """An ISO 8601 moment with a zone (``2026-01-01T12:00:00Z``); ``invalid_value`` else."""
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInput(f"{text!r} is not an ISO 8601 time", "invalid_value") from None
    if moment.tzinfo is None:
        raise InvalidInput(f"{text!r} has no timezone (add Z or +00:00)", "invalid_value")
    return moment.astimezone(UTC)


def github_schedule(store: Store, name: str) -> Schedule:
    row = store.get_schedule(name)
    if row.trigger_type != TriggerType.GITHUB_POLL:
        raise InvalidInput(
            f"{name} is a {row.trigger_type} schedule, not github_poll", "not_github_poll"
        )
    return row
