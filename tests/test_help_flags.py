"""Help text that tells the truth: flags take no value, exit codes match the code (issue 25)."""

from __future__ import annotations

import re
from typing import Any

import typer
from typer.testing import CliRunner

from engine.cli.app import app as li_app
from wrapper.authorloop.watch import EXIT_MAX_DURATION
from wrapper.cli.app import app as kdev_app


def help_of(app: typer.Typer, *args: str) -> str:
    result = CliRunner().invoke(app, [*args, "--help"], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    return result.output


def test_the_version_flag_shows_no_value_placeholder_in_li_and_kdev() -> None:
    for app in (li_app, kdev_app):
        lines = [line for line in help_of(app).splitlines() if "--version" in line]
        assert len(lines) == 1
        assert "<" not in lines[0] and "Print the version" in lines[0], lines[0]


def test_kdev_watch_help_names_the_exit_code_the_watch_returns() -> None:
    text = " ".join(help_of(kdev_app, "watch").split())
    codes = re.findall(r"exit (\d+)", text)
    assert codes == [str(EXIT_MAX_DURATION)], text


def _paths(command: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command path of a command tree (lazy groups list their verbs by name)."""
    found = [prefix]
    if hasattr(command, "list_commands"):
        ctx = command.make_context(prefix[-1] if prefix else "prog", [], resilient_parsing=True)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None:
                found.extend(_paths(sub, (*prefix, name)))
    return found


def test_no_flag_of_any_command_shows_a_value_placeholder() -> None:
    """``-h``, ``--json``, ``--force`` and every other flag take no value: typer's rich
    help showed ``<bool>`` beside each one in kdev's (and its sub-apps') help."""
    for app in (li_app, kdev_app):
        paths = _paths(typer.main.get_command(app))
        assert len(paths) > 10, paths
        for path in paths:
            shown = help_of(app, *path)
            assert "<bool>" not in shown, (path, shown)
