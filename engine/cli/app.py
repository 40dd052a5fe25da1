"""The ``li`` command line: the typer root, its global options, and the table of verbs.

Each verb group lives in a module of its own (``engine.cli.schedule_*``, ``db``,
``engine_cmds``, ``events``) as plain functions, listed in the tables below in the order
``li -h`` lists them. A verb's module (and SQLAlchemy, the store, httpx, APScheduler with
it) is imported only when that verb runs or shows its own help (:func:`engine.clikit.
lazy_group`, issue 25): ``li --version``, ``li -h``, ``li schedule -h`` and shell
completion import none of them. Help is click's plain layout (``rich_markup_mode=None``):
rich is not imported to draw boxes. Every command body runs inside
:func:`engine.cli.common.guarded`: an error prints one line ``error: <message>
[<reason_code>]`` on stderr and exits with the code of its class (docs/cli.md); no user
error ever prints a traceback.
"""

from __future__ import annotations

import typer

from engine import __version__
from engine.cli.options import EXIT_RUN_NOT_SUCCEEDED, GLOBAL_OPTIONS
from engine.clikit import (
    LogFormat,
    LogLevel,
    OneLineErrorsTyper,
    configure_logging,
    lazy_group,
    version_option,
)
from engine.credentials import set_non_dumpable

__all__ = ["EXIT_RUN_NOT_SUCCEEDED", "app"]

# name -> "module:function", in help order.
SCHEDULE_VERBS = {
    "add": "engine.cli.schedule_add:schedule_add",
    "list": "engine.cli.schedule_list:schedule_list",
    "show": "engine.cli.schedule_show:schedule_show",
    "runs": "engine.cli.schedule_show:schedule_runs",
    "run": "engine.cli.schedule_show:schedule_run",
    "trigger": "engine.cli.schedule_fire:schedule_trigger",
    "pause": "engine.cli.schedule_fire:schedule_pause",
    "resume": "engine.cli.schedule_fire:schedule_resume",
    "remove": "engine.cli.schedule_fire:schedule_remove",
    "apply": "engine.cli.schedule_file:schedule_apply",
    "export": "engine.cli.schedule_file:schedule_export",
    "cursor": "engine.cli.schedule_github:schedule_cursor",
    "health": "engine.cli.schedule_github:schedule_health_cmd",
    "preview": "engine.cli.schedule_github:schedule_preview",
    "events": "engine.cli.events:schedule_events",
}
DB_VERBS = {
    "upgrade": "engine.cli.db:db_upgrade",
    "current": "engine.cli.db:db_current",
    "prune": "engine.cli.db:db_prune",
}
ENGINE_VERBS = {
    "run": "engine.cli.engine_cmds:engine_run",
    "status": "engine.cli.engine_cmds:engine_status",
}

app = OneLineErrorsTyper(
    name="li",
    help="li: a generic schedule engine that fires allow-listed "
    "commands on cron, interval and GitHub-poll schedules.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
schedule_app = typer.Typer(
    help="Add, inspect and fire schedules.",
    no_args_is_help=True,
    cls=lazy_group(SCHEDULE_VERBS, app),
)
db_app = typer.Typer(
    help="Database schema migrations.", no_args_is_help=True, cls=lazy_group(DB_VERBS, app)
)
engine_app = typer.Typer(
    help="Run the engine.", no_args_is_help=True, cls=lazy_group(ENGINE_VERBS, app)
)
app.add_typer(schedule_app, name="schedule")
app.add_typer(db_app, name="db")
app.add_typer(engine_app, name="engine")


@app.callback()
def main(
    version: bool = version_option(f"li {__version__}"),
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
