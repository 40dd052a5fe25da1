"""Command-line plumbing shared by ``li`` and ``kdev``: usage errors as one line."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

import typer
from typer._click import exceptions as click_exceptions

from engine.errors import LiError

T = TypeVar("T")


def fail(exc: LiError, exit_code: int | None = None) -> NoReturn:
    """Print the one-line error and exit with its code (or ``exit_code``)."""
    typer.echo(f"error: {exc.message} [{exc.reason}]", err=True)
    raise typer.Exit(exc.exit_code if exit_code is None else exit_code)


def guarded(
    work: Callable[[], T],
    *,
    exit_code: Callable[[LiError], int] = lambda exc: exc.exit_code,
    cleanup: Callable[[], None] | None = None,
) -> T:
    """Run a command body: an LiError becomes one line and ``exit_code(error)``; anything
    unexpected one line and exit 1, never a traceback. ``cleanup`` runs in every case."""
    try:
        return work()
    except LiError as exc:
        fail(exc, exit_code(exc))
    except (typer.Exit, typer.Abort, KeyboardInterrupt):
        raise
    except Exception as exc:  # a bug: still one line, never a traceback for the user
        typer.echo(f"error: internal error: {type(exc).__name__}: {exc} [internal_error]", err=True)
        raise typer.Exit(1) from None
    finally:
        if cleanup is not None:
            cleanup()


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


# Attributes every LogRecord has; anything else on a record came from ``extra=`` and is
# written as a field of its own.
_RECORD_ATTRIBUTES = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
}


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time, level, logger, message and every ``extra`` field,
    so ``jq -r 'select(.reason) | [.pr, .reason] | @tsv'`` works on the engine's log."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _RECORD_ATTRIBUTES and not key.startswith("_"):
                data[key] = value
        if record.exc_info:
            data["exception"] = self.formatException(record.exc_info).splitlines()[-1]
        return json.dumps(data, default=str)


def configure_logging(level: str, log_format: str) -> None:
    """Log to stderr at ``level`` (debug/info/warning/error) as ``text`` or ``json``."""
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # alembic narrates every migration context at INFO; only debug logging wants that.
    logging.getLogger("alembic").setLevel(
        logging.DEBUG if level.lower() == "debug" else logging.WARNING
    )
