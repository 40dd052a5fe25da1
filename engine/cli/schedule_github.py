"""``li schedule cursor|health|preview``: github_poll schedules."""

from __future__ import annotations

import json

import typer

from engine.cli.common import (
    emit_json,
    github_schedule,
    guarded,
    iso,
    open_store,
    parse_moment,
    settings,
    table,
)
from engine.errors import InvalidInput, LiError, NotFound
from engine.github.client import github_client
from engine.health.assess import health_exit_code
from engine.health.status import schedule_health
from engine.poll.pollpass import poll_once
from engine.store.pollstore import PollStore
from engine.termsafe import echo


def schedule_cursor(
    name: str,
    set_to: str | None = typer.Option(None, "--set", help="Move the cursor to this time."),
    reason: str | None = typer.Option(None, "--reason", help="Why (recorded in the runs)."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Show a github_poll schedule's cursor, or move it (recorded in the run history)."""

    def work() -> None:
        store = open_store(settings())
        row = github_schedule(store, name)
        polls = PollStore(store)
        if set_to is None:
            if reason is not None:
                raise InvalidInput("--reason goes with --set", "invalid_value")
            state = polls.get_state(row.id)
            data = {
                "name": name,
                "cursor_at": iso(state.cursor_at),
                "held_batch": len(state.held_batch or []),
            }
            if as_json:
                emit_json(data)
            else:
                echo(
                    f"{name}: cursor {data['cursor_at'] or 'unset (backfill)'}, "
                    f"{data['held_batch']} held event(s)"
                )
            return
        if not reason or not reason.strip():
            raise InvalidInput("--set needs --reason TEXT", "reason_required")
        moment = parse_moment(set_to)
        before, run = polls.set_cursor(row.id, moment, reason=reason.strip(), operator="cli")
        if as_json:
            emit_json(
                {
                    "name": name,
                    "cursor_from": iso(before),
                    "cursor_at": iso(moment),
                    "run_id": run.id,
                }
            )
        else:
            echo(
                f"{name}: cursor moved from {iso(before) or 'unset'} to {iso(moment)} "
                f"(run {run.id})"
            )

    guarded(work)


def schedule_health_cmd(
    name: str | None = typer.Argument(None, help="Only this schedule."),
    as_json: bool = typer.Option(False, "--json"),
    exit_zero: bool = typer.Option(
        False, "--exit-zero", help="Exit 0 whatever the states (errors still exit non-zero)."
    ),
) -> None:
    """Health of schedules: healthy, stale, blind, rate_limited, overdue, failing ...

    Exits 20 blind, 21 stale, 22 overdue, 23 failing: the most severe state shown
    (docs/health.md); 0 otherwise or with --exit-zero."""

    def work() -> None:
        report = schedule_health(open_store(settings()), name)
        code = 0 if exit_zero else health_exit_code(item.health.state for item in report)
        if as_json:
            emit_json([item.to_json() for item in report])
            raise typer.Exit(code)
        table(
            ["name", "state", "last poll", "cursor", "causes"],
            [
                [
                    item.name,
                    item.health.state.value,
                    iso(item.facts.last_poll_at),
                    iso(item.cursor_at),
                    "; ".join(c.message for c in item.health.causes) or None,
                ]
                for item in report
            ],
        )
        for item in report:
            for cause in item.health.causes:
                if cause.advice:
                    echo(f"{item.name}: {cause.code}: {cause.advice}")
        raise typer.Exit(code)

    guarded(work)


def schedule_preview(name: str, as_json: bool = typer.Option(False, "--json")) -> None:
    """Poll now without firing or moving the cursor: each event, and the argv it would run."""

    def work() -> None:
        config = settings()
        store = open_store(config)
        row = github_schedule(store, name)
        polls = PollStore(store)
        ticket = polls.claim_poll(row.id, "preview", peek=True)
        if ticket is None:
            raise NotFound(f"no schedule named {name!r}", "schedule_not_found")
        # A private in-memory ETag cache: a preview must never turn the engine's next
        # poll into a 304 that hides these events.
        with github_client(config) as client:
            report = poll_once(polls, config, client, ticket, "preview", dry_run=True)
        items = [
            {
                "pr_number": d.event.pr_number,
                "at": iso(d.event.at),
                "dispatchable": d.decision in ("would_fire", "held"),
                "decision": d.decision,
                "argv": d.argv,
            }
            for d in report.decisions
        ]
        if as_json:
            emit_json(
                {
                    "name": name,
                    "status": report.status,
                    "scan_complete": report.scan_complete,
                    "events": items,
                }
            )
        else:
            echo(
                f"{name}: poll {report.status}, scan "
                f"{'complete' if report.scan_complete else 'INCOMPLETE'}, "
                f"{len(items)} event(s)"
            )
            for item in items:
                argv = json.dumps(item["argv"]) if item["argv"] else ""
                echo(f"  #{item['pr_number']} {item['at']} {item['decision']} {argv}")
        if report.status not in ("ok", "not_modified"):
            raise LiError(f"poll of {name} failed", report.status)

    guarded(work)
