"""``li schedule trigger|pause|resume|remove``: fire now, pause, resume, remove."""

from __future__ import annotations

import sys

import typer

from engine.cli.common import (
    EXIT_RUN_NOT_SUCCEEDED,
    emit_json,
    guarded,
    iso,
    open_store,
    run_dict,
    settings,
)
from engine.config import Settings
from engine.errors import Conflict, InvalidInput, LiError, NotFound
from engine.github.client import github_client
from engine.github.etag import SqlEtagCache
from engine.poll.pollpass import poll_once
from engine.run.actions import execute_claim, fire_schedule
from engine.run.presence import registered_engine
from engine.store.models import RunStatus, Schedule, TriggerType
from engine.store.pollstore import PollStore
from engine.store.store import Store
from engine.termsafe import echo


def schedule_trigger(
    name: str,
    wait_for_it: bool = typer.Option(False, "--wait", help="Fire here and wait for the end."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Fire a schedule now. Without --wait a running engine fires it at its next sync."""

    def work() -> None:
        config = settings()
        store = open_store(config)
        row = store.get_schedule(name)
        if not wait_for_it:
            due = store.request_fire(name)
            if as_json:
                emit_json({"schedule": name, "due": True, "next_fire_at": iso(due.next_fire_at)})
            else:
                echo(f"{name} is due now; a running engine fires it within seconds")
            return
        if row.trigger_type == TriggerType.GITHUB_POLL:
            poll_now(store, config, row, as_json)
            return
        with registered_engine(store, config, kind="trigger") as owner:
            run = fire_schedule(store, config, row.id, owner, manual=True)
        if run is None:
            raise NotFound(f"{name} could not be claimed", "not_claimed")
        if as_json:
            emit_json(run_dict(run, full=True))
        else:
            echo(
                f"run {run.id} of {name}: {run.status}"
                + (f" [{run.reason}]" if run.reason else "")
                + (f" exit {run.exit_code}" if run.exit_code is not None else "")
            )
        if run.status != RunStatus.SUCCEEDED.value:
            raise typer.Exit(EXIT_RUN_NOT_SUCCEEDED)

    guarded(work)


def poll_now(store: Store, config: Settings, row: Schedule, as_json: bool) -> None:
    """``trigger --wait`` of a github_poll schedule: one poll pass here, each fired
    event's command run to its end; exit 7 unless every run succeeded."""
    polls = PollStore(store)
    with registered_engine(store, config, kind="trigger") as owner:
        ticket = polls.claim_poll(row.id, owner, manual=True)
        if ticket is None:
            raise Conflict(f"{row.name} is being polled by an engine right now", "lease_held")
        with github_client(config, SqlEtagCache(store.engine)) as client:
            report = poll_once(
                polls,
                config,
                client,
                ticket,
                owner,
                launch=lambda claim: execute_claim(store, config, claim, owner),
            )
    runs = [store.get_run(claim.run_id) for claim in report.launched]
    if as_json:
        emit_json(
            {
                "name": row.name,
                "status": report.status,
                "runs": [run_dict(run, full=True) for run in runs],
            }
        )
    else:
        echo(f"poll of {row.name}: {report.status}, {len(runs)} event(s) fired")
        for run in runs:
            echo(
                f"  run {run.id} pr #{run.trigger_context.get('pr_number')}: "
                f"{run.status}" + (f" [{run.reason}]" if run.reason else "")
            )
    if report.status not in ("ok", "not_modified"):
        raise LiError(f"poll of {row.name} failed", report.status)
    if any(run.status != RunStatus.SUCCEEDED.value for run in runs):
        raise typer.Exit(EXIT_RUN_NOT_SUCCEEDED)


def _set_enabled(name: str, enabled: bool) -> None:
    row = open_store(settings()).set_enabled(name, enabled)
    state = "resumed" if enabled else "paused"
    echo(f"{state} {row.name}; next fire {iso(row.next_fire_at) or 'never'}")


def schedule_pause(name: str) -> None:
    """Stop firing a schedule (it stays, with its history)."""
    guarded(lambda: _set_enabled(name, False))


def schedule_resume(name: str) -> None:
    """Fire a paused schedule again, from now on."""
    guarded(lambda: _set_enabled(name, True))


def schedule_remove(
    name: str, yes: bool = typer.Option(False, "--yes", help="Do not ask.")
) -> None:
    """Remove a schedule; its run history is kept."""

    def work() -> None:
        store = open_store(settings())
        store.get_schedule(name)
        if not yes:
            if not sys.stdin.isatty():
                raise InvalidInput(
                    f"removing {name} needs confirmation: pass --yes", "confirmation_required"
                )
            if not typer.confirm(f"remove schedule {name}?"):
                raise typer.Exit(1)
        store.remove_schedule(name)
        echo(f"removed {name}")

    guarded(work)
