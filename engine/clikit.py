"""Command-line plumbing shared by ``li`` and the wrapper: usage errors as one line."""

from __future__ import annotations

import enum
import json
import logging
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, NoReturn, TypeVar

import typer

from engine.errors import LiError
from engine.termsafe import echo, terminal_safe

T = TypeVar("T")


def fail(exc: LiError, exit_code: int | None = None) -> NoReturn:
    """Print the one-line error and exit with its code (or ``exit_code``)."""
    echo(f"error: {exc.message} [{exc.reason}]", err=True)
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
        echo(f"error: internal error: {type(exc).__name__}: {exc} [internal_error]", err=True)
        raise typer.Exit(1) from None
    finally:
        if cleanup is not None:
            cleanup()


HELP_OPTIONS = {"help_option_names": ["-h", "--help"]}


class OneLineErrorsTyper(typer.Typer):
    """A Typer app whose usage errors are one line with a reason code, like every error.

    ``-h`` works as ``--help`` on every command. Usage errors are caught through the
    public :class:`typer.TyperException` (the base of Typer's click exceptions), never
    through a private module of Typer."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("context_settings", HELP_OPTIONS)
        super().__init__(*args, **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        command = typer.main.get_command(self)
        kwargs["standalone_mode"] = False
        try:
            result = command.main(*args, **kwargs)
        except typer.TyperException as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":  # bare group: help, exit 2
                getattr(exc, "show", lambda: None)()
                sys.exit(2)
            ctx = getattr(exc, "ctx", None)
            where = f" ({ctx.command_path})" if ctx is not None else ""
            message = " ".join(exc.format_message().split())
            echo(f"error: {message}{where} [usage_error]", err=True)
            sys.exit(2)
        except (typer.Abort, KeyboardInterrupt):
            typer.echo("error: aborted [aborted]", err=True)
            sys.exit(1)
        except typer.Exit as exc:
            sys.exit(exc.exit_code)
        # Outside standalone mode click returns an Exit's code instead of raising it (with
        # click 8.5 and typer 0.29 a command's typer.Exit arrives so): exit with it, or
        # every error of the console scripts would exit 0.
        if isinstance(result, int) and not isinstance(result, bool) and result != 0:
            sys.exit(result)
        return result


# Attributes every LogRecord has; anything else on a record came from ``extra=`` and is
# written as a field of its own.
_RECORD_ATTRIBUTES = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
}


def iso_time(record: logging.LogRecord) -> str:
    """The record's time in UTC, ISO 8601 with milliseconds and the ``+00:00`` offset."""
    return datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")


class TextFormatter(logging.Formatter):
    """``TIME LEVEL LOGGER: message`` with an ISO 8601 UTC time (offset included), made
    terminal-safe (a message may quote a PR title or a command's output)."""

    def format(self, record: logging.LogRecord) -> str:
        return terminal_safe(super().format(record))

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802
        return iso_time(record)


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time, level, logger, message and every ``extra`` field,
    so ``jq -r 'select(.reason) | [.pr, .reason] | @tsv'`` works on the engine's log."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "time": iso_time(record),
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


class LogFormat(enum.StrEnum):
    TEXT = "text"
    JSON = "json"


class LogLevel(enum.StrEnum):
    DEBUG = "debug"
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


QUIET_LOGGERS = ("alembic", "apscheduler")
URL_LOGGERS = ("httpx", "httpcore")


def configure_logging(level: str, log_format: str) -> None:
    """Log to stderr at ``level`` (debug/info/warning/error) as ``text`` or ``json``."""
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(TextFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # alembic narrates every migration context at INFO, APScheduler every job it runs
    # ("Running job", "executed successfully"): only debug logging wants that. An idle
    # engine logs nothing at INFO.
    chatty = logging.DEBUG if level.lower() == "debug" else logging.WARNING
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(chatty)
    # httpx logs whole URLs (a webhook URL carries its secret): never, at any level. The
    # GitHub client logs its own requests at DEBUG (engine.github.client).
    for name in URL_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
