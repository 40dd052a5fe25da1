"""Command-line plumbing shared by ``li`` and ``kdev``: usage errors as one line."""

from __future__ import annotations

import sys
from typing import Any

import typer
from typer._click import exceptions as click_exceptions


class OneLineErrorsTyper(typer.Typer):
    """A Typer app whose usage errors are one line with a reason code, like every error."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        command = typer.main.get_command(self)
        kwargs["standalone_mode"] = False
        try:
            return command.main(*args, **kwargs)
        except click_exceptions.NoArgsIsHelpError as exc:
            exc.show()
            sys.exit(2)
        except click_exceptions.ClickException as exc:
            ctx = getattr(exc, "ctx", None)
            where = f" ({ctx.command_path})" if ctx is not None else ""
            message = " ".join(exc.format_message().split())
            typer.echo(f"error: {message}{where} [usage_error]", err=True)
            sys.exit(2)
        except (typer.Abort, KeyboardInterrupt):
            typer.echo("error: aborted [aborted]", err=True)
            sys.exit(1)
        except typer.Exit as exc:
            sys.exit(exc.exit_code)
