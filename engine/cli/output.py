"""The SQLAlchemy-free half of the ``li`` verbs' plumbing: the guard, JSON and tables, and
how a schedule or a run is shown (issue 25: ``li schedule list`` on SQLite imports no
SQLAlchemy, :mod:`engine.cli.quicklist`). :mod:`engine.cli.common` re-exports it all.

Every command body runs inside :func:`guarded`: an error prints one line
``error: <message> [<reason_code>]`` on stderr and exits with the code of its class
(docs/cli.md); database engines the command opened (:func:`opened`) are disposed when it
ends."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from engine.clikit import guarded as clikit_guarded
from engine.durations import format_duration
from engine.store.enums import TriggerType
from engine.timefmt import iso_utc_or_none

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from engine.cli.quicklist import ScheduleView
    from engine.store.models import Schedule, ScheduleRun

T = TypeVar("T")

_opened: list[Engine] = []


def opened(engine: Engine) -> Engine:
    """Note ``engine`` to be disposed when the command ends; returns it."""
    _opened.append(engine)
    return engine


def _dispose_opened() -> None:
    while _opened:
        _opened.pop().dispose()


def guarded(work: Callable[[], T]) -> T:
    """Run a command body (see :func:`engine.clikit.guarded`); database engines it opened
    are disposed when it ends."""
    return clikit_guarded(work, cleanup=_dispose_opened)


def iso(value: datetime | None) -> str | None:
    return iso_utc_or_none(value)


def emit_json(value: Any) -> None:
    typer.echo(json.dumps(value, indent=2, sort_keys=False, default=str))


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    from engine.tables import print_table  # rich: only for a table

    print_table(headers, rows, typer.get_text_stream("stdout"))


def trigger_text(row: Schedule | ScheduleView) -> str:
    if row.trigger_type == TriggerType.CRON:
        return f"cron {row.cron_expr} {row.timezone or 'UTC'}"
    if row.trigger_type == TriggerType.INTERVAL:
        return f"every {format_duration(row.interval_seconds or 0)}"
    repo = (row.trigger_config or {}).get("repo", "?")
    return f"github {repo}"


def schedule_dict(row: Schedule | ScheduleView) -> dict[str, Any]:
    return {
        "name": row.name,
        "enabled": row.enabled,
        "trigger_type": row.trigger_type,
        "cron": row.cron_expr,
        "timezone": row.timezone,
        "interval_seconds": row.interval_seconds,
        "trigger_config": row.trigger_config,
        "command": row.command,
        "args": row.args,
        "cwd": row.cwd,
        "timeout_seconds": row.timeout_seconds,
        "max_runs": row.max_runs,
        "run_count": row.run_count,
        "env_passthrough": row.env_passthrough,
        "retry": {
            "max_attempts": row.retry_max_attempts,
            "backoff_seconds": row.retry_backoff_seconds,
        },
        "overlap": row.overlap,
        "managed_by": row.managed_by,
        "next_fire_at": iso(row.next_fire_at),
        "last_fire_at": iso(row.last_fire_at),
        "lease_owner": row.lease_owner,
        "lease_until": iso(row.lease_until),
        "created_at": iso(row.created_at),
        "updated_at": iso(row.updated_at),
    }


def duration_of(run: ScheduleRun) -> float | None:
    if run.finished_at is None:
        return None
    return round((run.finished_at - run.started_at).total_seconds(), 3)


def run_dict(run: ScheduleRun, *, full: bool = False) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": run.id,
        "schedule": run.schedule_name,
        "status": run.status,
        "reason": run.reason,
        "exit_code": run.exit_code,
        "pid": run.pid,
        "started_at": iso(run.started_at),
        "finished_at": iso(run.finished_at),
        "duration_seconds": duration_of(run),
        "engine_id": run.engine_id,
        # One fire, several attempts (a github_poll event re-offered after a loss).
        "fire_id": run.fire_id or run.id,
        "attempt": run.attempt,
        "pr_number": run.pr_number,
    }
    if full:
        data.update(
            argv=run.argv,
            trigger_context=run.trigger_context,
            stdout_tail=run.stdout_tail,
            stderr_tail=run.stderr_tail,
        )
    return data
