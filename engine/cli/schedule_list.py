"""``li schedule list``: every schedule. On a SQLite database at the newest schema it is
read without SQLAlchemy (:mod:`engine.cli.quicklist`, issue 25); anything else takes the
store's path, which migrates SQLite on first use and checks PostgreSQL's schema."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

import typer

from engine.cli.output import emit_json, guarded, iso, schedule_dict, table, trigger_text
from engine.cli.quicklist import ScheduleView, quick_schedules

if TYPE_CHECKING:
    from engine.store.models import Schedule


def _rows() -> Sequence[Schedule | ScheduleView]:
    quick = quick_schedules(os.environ)
    if quick is not None:
        return quick
    from engine.cli.common import open_store, settings

    return open_store(settings()).list_schedules()


def schedule_list(as_json: bool = typer.Option(False, "--json")) -> None:
    """List every schedule."""

    def work() -> None:
        rows = _rows()
        if as_json:
            emit_json([schedule_dict(r) for r in rows])
            return
        table(
            ["name", "enabled", "trigger", "command", "next fire", "last fire", "runs"],
            [
                [
                    r.name,
                    "yes" if r.enabled else "paused",
                    trigger_text(r),
                    r.command,
                    iso(r.next_fire_at),
                    iso(r.last_fire_at),
                    r.run_count,
                ]
                for r in rows
            ],
        )

    guarded(work)
