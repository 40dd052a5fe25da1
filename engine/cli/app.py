"""The ``li`` command line: parse, call a service, map errors to exit codes.

Every error prints one line ``error: <message> [<reason_code>]`` on stderr and exits
with the code of its class (docs/cli.md); no user error ever prints a traceback.
"""

from __future__ import annotations

import json
import logging
import re
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar

import typer
from sqlalchemy import Engine as SAEngine

from engine import __version__
from engine.clikit import LogFormat, LogLevel, OneLineErrorsTyper, configure_logging, fail
from engine.clikit import guarded as clikit_guarded
from engine.config import Settings
from engine.durations import MAX_DRAIN_SECONDS, format_duration, parse_duration
from engine.errors import Conflict, InvalidInput, LiError, NotFound
from engine.github.client import github_client
from engine.github.etag import SqlEtagCache
from engine.health.assess import health_exit_code
from engine.health.status import schedule_health
from engine.poll.config import parse_filter, parse_repo, validate_poll_config
from engine.poll.decisions import list_pr_runs
from engine.poll.pollpass import poll_once
from engine.run.actions import execute_claim, fire_schedule
from engine.run.daemon import Engine
from engine.run.metrics import serve as serve_metrics
from engine.run.presence import registered_engine
from engine.schedules.argv import check_templates
from engine.schedules.dump import dump_schedule_set
from engine.schedules.plan import PlanAction, plan, plan_has_errors
from engine.schedules.schedulefile import load_schedule_set
from engine.schedules.spec import (
    DEFAULT_TIMEOUT_SECONDS,
    ScheduleSpec,
    check_retry_attempts,
    check_spec,
)
from engine.store import db as dbmod
from engine.store.models import (
    EngineInstance,
    OverlapPolicy,
    RunStatus,
    Schedule,
    ScheduleRun,
    TriggerType,
)
from engine.store.pollstore import PollStore
from engine.store.store import Store, spec_of
from engine.tables import print_table

EXIT_RUN_NOT_SUCCEEDED = 7
_log_level_given = False


app = OneLineErrorsTyper(
    name="li",
    help="li: a generic schedule engine that fires allow-listed "
    "commands on cron, interval and GitHub-poll schedules.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
schedule_app = typer.Typer(help="Add, inspect and fire schedules.", no_args_is_help=True)
db_app = typer.Typer(help="Database schema migrations.", no_args_is_help=True)
engine_app = typer.Typer(help="Run the engine.", no_args_is_help=True)
app.add_typer(schedule_app, name="schedule")
app.add_typer(db_app, name="db")
app.add_typer(engine_app, name="engine")

T = TypeVar("T")


# -- plumbing ---------------------------------------------------------------------------


_opened: list[SAEngine] = []


def _dispose_opened() -> None:
    while _opened:
        _opened.pop().dispose()


def guarded(work: Callable[[], T]) -> T:
    """Run a command body (see :func:`engine.clikit.guarded`); database engines it opened
    are disposed when it ends."""
    return clikit_guarded(work, cleanup=_dispose_opened)


def settings() -> Settings:
    return Settings.from_env()


def open_store(config: Settings, *, migrate: bool = True) -> Store:
    """A Store on the configured database. SQLite is upgraded to head on first use;
    PostgreSQL is never migrated implicitly (``li db upgrade``)."""
    engine = dbmod.make_engine(config.database_url, create_parent=True)
    _opened.append(engine)
    if migrate:
        if dbmod.is_sqlite(config.database_url):
            if dbmod.current_revision(engine) != dbmod.head_revision(engine):
                dbmod.upgrade(engine)
        else:
            dbmod.require_head(engine)
    return Store(engine)


def iso(value: datetime | None) -> str | None:
    return value.isoformat(timespec="seconds").replace("+00:00", "Z") if value else None


def emit_json(value: Any) -> None:
    typer.echo(json.dumps(value, indent=2, sort_keys=False, default=str))


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    print_table(headers, rows, typer.get_text_stream("stdout"))


def trigger_text(row: Schedule) -> str:
    if row.trigger_type == TriggerType.CRON:
        return f"cron {row.cron_expr} {row.timezone or 'UTC'}"
    if row.trigger_type == TriggerType.INTERVAL:
        return f"every {format_duration(row.interval_seconds or 0)}"
    repo = (row.trigger_config or {}).get("repo", "?")
    return f"github {repo}"


def schedule_dict(row: Schedule) -> dict[str, Any]:
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


# -- li --version -----------------------------------------------------------------------


def _version(value: bool) -> None:
    if value:
        typer.echo(f"li {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
    log_format: LogFormat = typer.Option(
        LogFormat.TEXT, "--log-format", help="text, or json: one object a line on stderr."
    ),
    log_level: LogLevel | None = typer.Option(
        None, "--log-level", help="Default: warning (info for `li engine run`)."
    ),
) -> None:
    """li: schedules in SQL, commands fired safely, every fire recorded."""
    global _log_level_given
    _log_level_given = log_level is not None
    configure_logging((log_level or LogLevel.WARNING).value, log_format.value)


# -- li db ------------------------------------------------------------------------------


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Migrate the database to the newest schema."""

    def work() -> None:
        store = open_store(settings(), migrate=False)
        dbmod.upgrade(store.engine)
        typer.echo(f"database at {dbmod.current_revision(store.engine)} (head)")

    guarded(work)


@db_app.command("current")
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
        typer.echo(f"{current or 'blank'} ({state}; newest {head})")

    guarded(work)


# -- li schedule add ----------------------------------------------------------------------


def github_trigger_config(
    repo: str,
    poll_interval: str,
    filters: list[str],
    event: str,
    max_fires_per_poll: int,
    page_limit: int | None,
    backfill: bool,
    mentions: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The validated trigger_config of ``li schedule add --github``."""
    parsed: dict[str, Any] = {}
    for text in filters:
        key, value = parse_filter(text)
        if key in parsed:
            raise InvalidInput(f"--filter {key} given twice", "invalid_filter")
        parsed[key] = value
    data: dict[str, Any] = {
        "repo": parse_repo(repo),
        "poll_interval_seconds": parse_duration(poll_interval, what="--poll-interval"),
        "filters": parsed,
        "event": event,
        "max_fires_per_poll": max_fires_per_poll,
        "backfill": backfill,
        "page_limit": page_limit,
    }
    if mentions is not None:
        data["mentions"] = mentions
    return validate_poll_config(data).model_dump(mode="json")


def mentions_options(
    event: str, handle: str | None, allow_users: list[str], self_user_id: int | None
) -> dict[str, Any] | None:
    """The ``mentions`` block from ``--handle``/``--allow-user``/``--self-user-id`` (None
    when none is given; validated with the rest of the trigger config)."""
    if handle is None and not allow_users and self_user_id is None:
        if event == "mentions":
            raise InvalidInput(
                "--event mentions needs --handle and --allow-user", "invalid_trigger"
            )
        return None
    if event != "mentions":
        raise InvalidInput(
            "--handle, --allow-user and --self-user-id apply to --event mentions only",
            "invalid_trigger",
        )
    if handle is None:
        raise InvalidInput("--event mentions needs --handle", "invalid_trigger")
    ids: list[object] = []
    for text in allow_users:
        # Only a plain decimal number can be an id; anything else is passed on as the
        # string it is, which parse_allowlist refuses (allowlist_config_error).
        ids.append(int(text) if re.fullmatch(r"-?[0-9]+", text.strip()) else text)
    mentions: dict[str, Any] = {"handle": handle, "allowlist": ids}
    if self_user_id is not None:
        # Kept so that existing scripts and schedule files still load; it filters nothing
        # (docs/decisions.md, "The engine no longer rejects the agent's own account").
        typer.echo(
            "li: warning: --self-user-id is deprecated and ignored: the agent's own account"
            " can summon the fired command, which must skip the comments it posted itself"
            " (self_user_id_ignored)",
            err=True,
        )
        mentions["self_user_id"] = self_user_id
    return mentions


@schedule_app.command("add")
def schedule_add(
    name: str = typer.Argument(..., help="Unique schedule name."),
    args: list[str] = typer.Argument(None, help="Arguments after `--` (Jinja2 templates)."),
    cron: str | None = typer.Option(None, "--cron", help="Five-field cron expression."),
    timezone: str | None = typer.Option(None, "--timezone", help="IANA zone for --cron."),
    every: str | None = typer.Option(None, "--every", help="Interval such as 5m or 1h30m."),
    command: str = typer.Option(..., "--command", help="Allow-listed executable name."),
    cwd: Path | None = typer.Option(None, "--cwd", help="Working directory (must exist)."),
    timeout: str | None = typer.Option(None, "--timeout", help="Deadline, default 1h."),
    max_runs: int | None = typer.Option(None, "--max-runs", help="Stop after N runs."),
    env_passthrough: list[str] = typer.Option(
        [], "--env-passthrough", help="Variable passed to the command."
    ),
    overlap: OverlapPolicy = typer.Option(
        OverlapPolicy.SKIP, "--overlap", help="skip or allow a fire while one runs."
    ),
    github: str | None = typer.Option(
        None, "--github", help="OWNER/REPO: poll its pull requests, fire per event."
    ),
    poll_interval: str = typer.Option("2m", "--poll-interval", help="github: poll period."),
    filters: list[str] = typer.Option(
        [], "--filter", help="github: state=open, base=BRANCH, draft=BOOL, same_repo_only=BOOL."
    ),
    event: str = typer.Option(
        "pr_updated", "--event", help="github: pr_updated|pr_merged|mentions."
    ),
    handle: str | None = typer.Option(
        None, "--handle", help="github mentions: the handle to listen for (no @)."
    ),
    allow_users: list[str] = typer.Option(
        [], "--allow-user", help="github mentions: a numeric user id allowed to mention."
    ),
    self_user_id: int | None = typer.Option(
        None,
        "--self-user-id",
        help="Deprecated, ignored: the engine no longer filters by account.",
    ),
    max_fires_per_poll: int = typer.Option(10, "--max-fires-per-poll", help="github: cap."),
    page_limit: int | None = typer.Option(
        None, "--page-limit", help="github: pages a scan may read (5..100)."
    ),
    backfill: bool = typer.Option(
        False, "--backfill", help="github: fire the open backlog too (cursor unset)."
    ),
    retry_max_attempts: int = typer.Option(
        1, "--retry-max-attempts", help="Try a failed run again: N attempts in all (1..10)."
    ),
    retry_backoff: str = typer.Option(
        "30s", "--retry-backoff", help="Wait before the 2nd attempt, doubling after."
    ),
    disabled: bool = typer.Option(False, "--disabled", help="Add it paused."),
    as_json: bool = typer.Option(False, "--json", help="Print the schedule as JSON."),
) -> None:
    """Add a cron or interval schedule firing COMMAND with ARG... ."""

    def work() -> None:
        config = settings()
        if sum(x is not None for x in (cron, every, github)) != 1:
            raise InvalidInput("give exactly one of --cron, --every or --github", "invalid_trigger")
        if timezone is not None and cron is None:
            raise InvalidInput("--timezone applies to --cron only", "invalid_trigger")
        if github is not None:
            trigger_type = TriggerType.GITHUB_POLL
            trigger_config = github_trigger_config(
                github,
                poll_interval,
                filters,
                event,
                max_fires_per_poll,
                page_limit,
                backfill,
                mentions_options(event, handle, allow_users, self_user_id),
            )
        else:
            trigger_type = TriggerType.CRON if cron is not None else TriggerType.INTERVAL
            trigger_config = {}
        spec = ScheduleSpec(
            name=name,
            enabled=not disabled,
            trigger_type=trigger_type,
            trigger_config=trigger_config,
            cron=cron,
            timezone=(timezone or "UTC") if cron is not None else None,
            interval_seconds=parse_duration(every, what="--every") if every else None,
            command=command,
            args=list(args or []),
            cwd=str(cwd.resolve()) if cwd is not None else None,
            timeout_seconds=(
                parse_duration(timeout, what="--timeout") if timeout else DEFAULT_TIMEOUT_SECONDS
            ),
            max_runs=max_runs,
            env_passthrough=list(env_passthrough),
            overlap=overlap,
            retry_max_attempts=check_retry_attempts(retry_max_attempts),
            retry_backoff_seconds=parse_duration(retry_backoff, what="--retry-backoff"),
        )
        check_spec(spec, config.command_allowlist)
        check_templates(spec.args)
        row = open_store(config).add_schedule(spec)
        if as_json:
            emit_json(schedule_dict(row))
        else:
            typer.echo(
                f"added {row.name}: {trigger_text(row)}, next fire "
                f"{iso(row.next_fire_at) or 'never'}"
            )

    guarded(work)


# -- li schedule list / show / runs / run ---------------------------------------------------


@schedule_app.command("list")
def schedule_list(as_json: bool = typer.Option(False, "--json")) -> None:
    """List every schedule."""

    def work() -> None:
        rows = open_store(settings()).list_schedules()
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


@schedule_app.command("show")
def schedule_show(name: str, as_json: bool = typer.Option(False, "--json")) -> None:
    """Show one schedule in full."""

    def work() -> None:
        data = schedule_dict(open_store(settings()).get_schedule(name))
        if as_json:
            emit_json(data)
            return
        for key, value in data.items():
            shown = json.dumps(value) if isinstance(value, list | dict) else value
            typer.echo(f"{key + ':':18} {'-' if shown is None else shown}")

    guarded(work)


@schedule_app.command("runs")
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


@schedule_app.command("run")
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
            typer.echo(f"{key + ':':18} {'-' if data[key] is None else data[key]}")
        typer.echo(f"{'argv:':18} {json.dumps(data['argv'])}")
        typer.echo(f"{'context:':18} {json.dumps(data['trigger_context'], sort_keys=True)}")
        for stream in ("stdout_tail", "stderr_tail"):
            typer.echo(f"--- {stream} ---")
            typer.echo(data[stream].rstrip("\n"))

    guarded(work)


# -- li schedule trigger / pause / resume / remove ---------------------------------------------


@schedule_app.command("trigger")
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
                typer.echo(f"{name} is due now; a running engine fires it within seconds")
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
            typer.echo(
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
        typer.echo(f"poll of {row.name}: {report.status}, {len(runs)} event(s) fired")
        for run in runs:
            typer.echo(
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
    typer.echo(f"{state} {row.name}; next fire {iso(row.next_fire_at) or 'never'}")


@schedule_app.command("pause")
def schedule_pause(name: str) -> None:
    """Stop firing a schedule (it stays, with its history)."""
    guarded(lambda: _set_enabled(name, False))


@schedule_app.command("resume")
def schedule_resume(name: str) -> None:
    """Fire a paused schedule again, from now on."""
    guarded(lambda: _set_enabled(name, True))


@schedule_app.command("remove")
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
        typer.echo(f"removed {name}")

    guarded(work)


# -- li schedule apply / export ---------------------------------------------------------------


@schedule_app.command("apply")
def schedule_apply(
    file: Path = typer.Argument(..., help="A ScheduleSet YAML file."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Plan only; change nothing."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Plan a YAML ScheduleSet against the database and apply it, all or nothing."""

    def work() -> None:
        config = settings()
        desired = load_schedule_set(file)
        for spec in desired.schedules:
            try:
                check_templates(spec.args)
            except LiError as exc:
                raise InvalidInput(
                    f"{file}: schedule {spec.name}: {exc.message}", exc.reason
                ) from None
        store = open_store(config)
        items = plan(store.existing_for_plan(), desired, config.command_allowlist)
        errors = plan_has_errors(items)
        if not dry_run and not errors:
            store.apply_plan(items, desired.owner)
        if as_json:
            emit_json(
                {
                    "owner": desired.owner,
                    "dry_run": dry_run,
                    "applied": not dry_run and not errors,
                    "items": [
                        {
                            "action": str(i.action),
                            "name": i.name,
                            "changes": list(i.changes),
                            "reason": i.reason,
                            "message": i.message,
                        }
                        for i in items
                    ],
                }
            )
        else:
            for item in items:
                detail = f" ({', '.join(item.changes)})" if item.changes else ""
                if item.action is PlanAction.ERROR:
                    detail = f": {item.message} [{item.reason}]"
                typer.echo(f"{str(item.action):9} {item.name}{detail}")
        if errors:
            count = sum(1 for i in items if i.action is PlanAction.ERROR)
            fail(
                InvalidInput(
                    f"{count} schedule(s) in {file} have errors; nothing applied", "plan_has_errors"
                )
            )
        if not as_json:
            typer.echo("dry run: nothing changed" if dry_run else "applied")

    guarded(work)


@schedule_app.command("export")
def schedule_export(
    owner: str | None = typer.Option(
        None, "--owner", help="Only schedules of this set (and name the set)."
    ),
) -> None:
    """Print schedules as a ScheduleSet YAML that `li schedule apply` accepts."""

    def work() -> None:
        rows = open_store(settings()).list_schedules()
        if owner is not None:
            rows = [r for r in rows if r.managed_by == owner]
        typer.echo(dump_schedule_set(owner or "exported", [spec_of(r) for r in rows]), nl=False)

    guarded(work)


# -- li engine ------------------------------------------------------------------------------


@engine_app.command("run")
def engine_run(
    once: bool = typer.Option(False, "--once", help="Fire everything due now, then exit."),
    drain_timeout: str | None = typer.Option(
        None,
        "--drain-timeout",
        help="On SIGTERM/SIGINT, how long running actions may finish before they are "
        "terminated, e.g. 30s or 5m (default: LI_SHUTDOWN_GRACE, else 30s; at most 1d).",
    ),
    metrics_addr: str | None = typer.Option(
        None, "--metrics-addr", help="HOST:PORT: serve Prometheus metrics at /metrics."
    ),
    metrics_textfile: Path | None = typer.Option(
        None, "--metrics-textfile", help="A metrics textfile a fired program writes, to re-export."
    ),
) -> None:
    """Run the engine until SIGTERM/SIGINT (or one pass with --once)."""
    if not _log_level_given:
        logging.getLogger().setLevel(logging.INFO)

    def work() -> None:
        config = settings()
        if drain_timeout is not None:
            grace = parse_duration(drain_timeout, what="--drain-timeout", maximum=MAX_DRAIN_SECONDS)
            config = config.model_copy(update={"shutdown_grace_seconds": float(grace)})
        store = open_store(config, migrate=dbmod.is_sqlite(config.database_url))
        engine = Engine(config, store)
        engine.start()
        server = None
        try:
            if metrics_addr is not None:
                server, _ = serve_metrics(metrics_addr, store, metrics_textfile)
            if once:
                runs = engine.run_once()
                bad = [r for r in runs if r.status != RunStatus.SUCCEEDED.value]
                typer.echo(f"{len(runs)} run(s); {len(bad)} did not succeed")
                return
            stop = threading.Event()

            def on_signal(signum: int, _frame: FrameType | None) -> None:
                logging.getLogger(__name__).info("signal %d: stopping", signum)
                stop.set()

            signal.signal(signal.SIGTERM, on_signal)
            signal.signal(signal.SIGINT, on_signal)
            engine.run_forever(stop)
        finally:
            if server is not None:
                server.shutdown()
            engine.close()

    guarded(work)


@engine_app.command("status")
def engine_status(as_json: bool = typer.Option(False, "--json")) -> None:
    """Engine processes seen by this database, with heartbeats and recent errors."""

    def work() -> None:
        engines: list[EngineInstance] = open_store(settings()).list_engines()
        data: list[dict[str, Any]] = [
            {
                "id": e.id,
                "host": e.host,
                "pid": e.pid,
                "started_at": iso(e.started_at),
                "heartbeat_at": iso(e.heartbeat_at),
                "stopped_at": iso(e.stopped_at),
                "last_errors": e.last_errors,
            }
            for e in engines
        ]
        if as_json:
            emit_json(data)
            return
        table(
            ["id", "pid", "started", "heartbeat", "stopped", "errors"],
            [
                [
                    d["id"],
                    d["pid"],
                    d["started_at"],
                    d["heartbeat_at"],
                    d["stopped_at"],
                    len(d["last_errors"]),
                ]
                for d in data
            ],
        )

    guarded(work)


# -- li schedule cursor / health / preview -------------------------------------------------


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


@schedule_app.command("cursor")
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
                typer.echo(
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
            typer.echo(
                f"{name}: cursor moved from {iso(before) or 'unset'} to {iso(moment)} "
                f"(run {run.id})"
            )

    guarded(work)


@schedule_app.command("health")
def schedule_health_cmd(
    name: str | None = typer.Argument(None, help="Only this schedule."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Health of schedules: healthy, stale, blind, rate_limited, overdue, failing ...

    Exits 8 when any schedule shown is stale, blind or overdue (docs/health.md)."""

    def work() -> None:
        report = schedule_health(open_store(settings()), name)
        code = health_exit_code(item.health.state for item in report)
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
                    typer.echo(f"{item.name}: {cause.code}: {cause.advice}")
        raise typer.Exit(code)

    guarded(work)


@schedule_app.command("preview")
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
            typer.echo(
                f"{name}: poll {report.status}, scan "
                f"{'complete' if report.scan_complete else 'INCOMPLETE'}, "
                f"{len(items)} event(s)"
            )
            for item in items:
                argv = json.dumps(item["argv"]) if item["argv"] else ""
                typer.echo(f"  #{item['pr_number']} {item['at']} {item['decision']} {argv}")
        if report.status not in ("ok", "not_modified"):
            raise LiError(f"poll of {name} failed", report.status)

    guarded(work)


# Verbs in modules of their own, registered onto schedule_app when they are imported.
from engine.cli import events as _cli_events  # noqa: E402,F401
