"""The ``li`` command line: the typer root, its global options, and every verb's place.

Each verb group lives in a module of its own (``engine.cli.schedule_*``, ``db``,
``engine_cmds``, ``events``) as plain functions; they are registered here, in the order
``li -h`` lists them. Every command body runs inside :func:`engine.cli.common.guarded`:
an error prints one line ``error: <message> [<reason_code>]`` on stderr and exits with
the code of its class (docs/cli.md); no user error ever prints a traceback.
"""

from __future__ import annotations

import typer

from engine import __version__
from engine.cli import (
    db,
    engine_cmds,
    events,
    schedule_add,
    schedule_file,
    schedule_fire,
    schedule_github,
    schedule_show,
)
from engine.cli.common import EXIT_RUN_NOT_SUCCEEDED, GLOBAL_OPTIONS
from engine.clikit import LogFormat, LogLevel, OneLineErrorsTyper, configure_logging
from engine.credentials import set_non_dumpable

__all__ = ["EXIT_RUN_NOT_SUCCEEDED", "app"]

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
    set_non_dumpable()  # first: /proc/<li>/environ and mem closed to the same uid (D66)
    GLOBAL_OPTIONS.log_level_given = log_level is not None
    configure_logging((log_level or LogLevel.WARNING).value, log_format.value)


# -- registration, in help order --------------------------------------------------------

db_app.command("upgrade")(db.db_upgrade)
db_app.command("current")(db.db_current)
db_app.command("prune")(db.db_prune)

schedule_app.command("add")(schedule_add.schedule_add)
schedule_app.command("list")(schedule_show.schedule_list)
schedule_app.command("show")(schedule_show.schedule_show)
schedule_app.command("runs")(schedule_show.schedule_runs)
schedule_app.command("run")(schedule_show.schedule_run)
schedule_app.command("trigger")(schedule_fire.schedule_trigger)
schedule_app.command("pause")(schedule_fire.schedule_pause)
schedule_app.command("resume")(schedule_fire.schedule_resume)
schedule_app.command("remove")(schedule_fire.schedule_remove)
schedule_app.command("apply")(schedule_file.schedule_apply)
schedule_app.command("export")(schedule_file.schedule_export)
schedule_app.command("cursor")(schedule_github.schedule_cursor)
schedule_app.command("health")(schedule_github.schedule_health_cmd)
schedule_app.command("preview")(schedule_github.schedule_preview)
schedule_app.command("events")(events.schedule_events)

engine_app.command("run")(engine_cmds.engine_run)
engine_app.command("status")(engine_cmds.engine_status)
