"""The engine's error tree. Every error carries a stable reason code and an exit code.

Third-party exceptions (SQLAlchemy, httpx, OS errors) are translated into this tree at
the boundary that calls them, so the CLI maps one type to one line and one exit code::

    LiError                      exit 1   anything the engine refuses or cannot do
    ├── InvalidInput             exit 2   bad flags, durations, cron, YAML, templates
    │   └── ConfigError          exit 2   settings read from the environment are wrong
    ├── NotFound                 exit 3   no schedule / run with that name or id
    ├── Conflict                 exit 4   already exists, already running, lease held
    ├── Refused                  exit 5   a safety rule said no (allow-list, injection)
    └── DatabaseError            exit 6   unreachable, unwritable, schema not at head

The message is one line for a human; ``reason`` is the machine-readable code that is
the same string in logs, JSON output, run rows and docs/cli.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

_In = TypeVar("_In")
_Out = TypeVar("_Out")


class LiError(Exception):
    """Base of every error the engine raises on purpose."""

    exit_code = 1

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason

    def __str__(self) -> str:
        return f"{self.message} [{self.reason}]"


class InvalidInput(LiError):
    """The user gave something we cannot accept; nothing was changed."""

    exit_code = 2


class ConfigError(InvalidInput):
    """An environment setting is malformed."""


class NotFound(LiError):
    """The named object does not exist."""

    exit_code = 3


class Conflict(LiError):
    """The request clashes with existing state (duplicate name, second engine, ...)."""

    exit_code = 4


class Refused(LiError):
    """A safety rule refused the request (allow-list, injection guards, missing cwd)."""

    exit_code = 5


class DatabaseError(LiError):
    """The database cannot be reached, written or is at the wrong schema revision."""

    exit_code = 6


def field_checked(check: Callable[[_In], _Out], value: _In) -> _Out:
    """``check(value)`` inside a pydantic field validator: a :class:`LiError` it raises
    becomes the field's error, its ``reason`` the error type and its message the text
    (so a config loader can keep the reason and shows no pydantic wording)."""
    from pydantic_core import PydanticCustomError  # only a validator calls this

    try:
        return check(value)
    except LiError as exc:
        raise PydanticCustomError(exc.reason, exc.message) from None
