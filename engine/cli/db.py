"""``li db upgrade|current|prune``: the database schema and its retention."""

from __future__ import annotations

import typer

from engine.cli.common import emit_json, guarded, open_store, settings
from engine.store import db as dbmod
from engine.store.retention import RunRetention, prune
from engine.termsafe import echo


def db_upgrade() -> None:
    """Migrate the database to the newest schema."""

    def work() -> None:
        store = open_store(settings(), migrate=False)
        dbmod.upgrade(store.engine)
        echo(f"database at {dbmod.current_revision(store.engine)} (head)")

    guarded(work)


def db_current(
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Show the schema revision of the database and the newest one."""

    def work() -> None:
        store = open_store(settings(), migrate=False)
        current, head = dbmod.current_revision(store.engine), dbmod.head_revision(store.engine)
        if as_json:
            emit_json({"current": current, "head": head, "up_to_date": current == head})
            return
        state = "head" if current == head else "behind: run `li db upgrade`"
        echo(f"{current or 'blank'} ({state}; newest {head})")

    guarded(work)


def db_prune(
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Prune old runs, poll claims, trigger keys, schedule removals, engine rows and the
    ETags of removed schedules now (the engine also does it hourly)."""

    def work() -> None:
        config = settings()
        store = open_store(config)
        policy = RunRetention(
            keep_days=config.runs_keep_days,
            keep_per_schedule=config.runs_keep_per_schedule,
            keys_keep_days=config.trigger_keys_keep_days,
        )
        done = prune(store.in_transaction, policy, store.clock())
        if as_json:
            emit_json(done.to_json())
            return
        echo(f"pruned {done.summary()}")

    guarded(work)
