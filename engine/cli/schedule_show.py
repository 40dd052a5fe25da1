"""``li schedule show|runs|run``: a schedule and its runs (``list``: engine.cli.schedule_list)."""

from __future__ import annotations

import json

import typer

from engine.cli.common import (
    duration_of,
    emit_json,
    guarded,
    iso,
    open_store,
    run_dict,
    schedule_dict,
    settings,
    table,
)
from engine.durations import format_duration
from engine.poll.decisions import list_pr_runs
from engine.store.models import RunStatus
from engine.termsafe import echo


def schedule_show(name: str, as_json: bool = typer.Option(False, "--json")) -> None:
    """Show one schedule in full."""

    def work() -> None:
        data = schedule_dict(open_store(settings()).get_schedule(name))
        if as_json:
            emit_json(data)
            return
        for key, value in data.items():
            shown = json.dumps(value) if isinstance(value, list | dict) else value
            echo(f"{key + ':':18} {'-' if shown is None else shown}")

    guarded(work)


def schedule_runs(
    name: str | None = typer.Argument(None, help="Only this schedule's runs."),
    status: list[RunStatus] = typer.Option([], "--status", help="Filter by status."),
    limit: int = typer.Option(20, "--limit", min=1, max=10_000),
    pr: int | None = typer.Option(None, "--pr", min=1, help="Only fires for this PR."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Recent runs, newest first; failures carry their reason."""

    def work() -> None:
        store = open_store(settings())
        wanted = [s.value for s in status]
        if pr is not None:
            runs = list_pr_runs(store, name, pr, wanted, limit)
        else:
            runs = store.list_runs(name, wanted, limit)
        if name is not None and not runs and not store.list_runs(name, limit=1):
            store.get_schedule(name)  # a typo gets schedule_not_found, not an empty table
        if as_json:
            emit_json([run_dict(r) for r in runs])
            return
        table(
            ["run", "schedule", "status", "started", "duration", "exit", "reason", "attempt"],
            [
                [
                    r.id,
                    r.schedule_name,
                    r.status.upper() if r.status not in ("succeeded", "running") else r.status,
                    iso(r.started_at),
                    format_duration(d) if (d := duration_of(r)) is not None else None,
                    r.exit_code,
                    r.reason,
                    f"{r.attempt} of fire {r.fire_id}" if r.fire_id else r.attempt,
                ]
                for r in runs
            ],
        )

    guarded(work)


def schedule_run(run_id: int, as_json: bool = typer.Option(False, "--json")) -> None:
    """One run: argv, trigger context and output tails."""

    def work() -> None:
        data = run_dict(open_store(settings()).get_run(run_id), full=True)
        if as_json:
            emit_json(data)
            return
        for key in (
            "id",
            "schedule",
            "status",
            "reason",
            "exit_code",
            "pid",
            "started_at",
            "finished_at",
            "duration_seconds",
            "engine_id",
        ):
            echo(f"{key + ':':18} {'-' if data[key] is None else data[key]}")
        typer.echo(f"{'argv:':18} {json.dumps(data['argv'])}")
        typer.echo(f"{'context:':18} {json.dumps(data['trigger_context'], sort_keys=True)}")
        for stream in ("stdout_tail", "stderr_tail"):
            echo(f"--- {stream} ---")
            echo(data[stream].rstrip("\n"))

    guarded(work)
