"""Is the environment one ``Settings.from_env`` plainly accepts? Answered without pydantic.

``engine.config.Settings`` is a pydantic-settings model: importing it costs more than a
whole ``li --help`` (issue 25). A command that needs only the database URL (``li
schedule list`` on SQLite, :mod:`engine.cli.quicklist`) asks :func:`plain_database_url`
first. It answers only when it can prove that ``Settings.from_env`` would accept the
environment and read the URL the same way - the rules of the wrapper's reader of the GitHub
settings (wrapper/config_env.py, D61), which asks :func:`plain_environment` too:

- every variable ``Settings`` reads (each field's variable and, as pydantic-settings
  also accepts them, the field names themselves) is absent, empty (which counts as unset)
  or in a plain form whose meaning is not in doubt: digits for a whole number, digits
  with an optional decimal fraction for seconds, valid names for ``LI_ENV_PASSTHROUGH``,
  any text for the strings; each within its field's bounds;
- a token variable is set, or neither ``GITHUB_TOKEN_FILE`` nor
  ``CREDENTIALS_DIRECTORY`` (a file ``Settings`` reads, and may refuse, is named).

Anything else returns None, and the caller uses ``Settings.from_env`` itself, so every
error (and every odd but accepted form) is exactly the one ``Settings`` gives.
tests/engine/test_plainenv.py checks both against each other, and that this module
knows every variable ``Settings`` reads.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from importlib import import_module
from pathlib import Path

NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Matched whole (fullmatch): no sign, space, underscore, exponent or trailing newline.
_WHOLE = re.compile(r"0|[1-9][0-9]{0,8}")
_SECONDS = re.compile(r"(0|[1-9][0-9]{0,8})(\.[0-9]{1,9})?")

# Variable -> (kind, lowest, highest): every variable Settings.from_env reads by alias.
# A bound given as a name is that constant of engine.github.limits, imported only when
# its variable is set (importing engine.github costs a tenth of `li --help`).
_Kind = tuple[str, int | str, int | str | None]
_TEXT: _Kind = ("text", 0, None)  # any text (a string has no bounds)
_ANY_SECONDS: _Kind = ("seconds", 0, None)  # any number of seconds from 0
VARIABLES: dict[str, _Kind] = {
    "LI_DATABASE_URL": _TEXT,
    "LI_COMMAND_ALLOWLIST": _TEXT,
    "LI_ENV_PASSTHROUGH": ("names", 0, None),
    "LI_MAX_CONCURRENT_ACTIONS": ("whole", 1, None),
    "LI_KILL_GRACE": _ANY_SECONDS,
    "LI_SHUTDOWN_GRACE": _ANY_SECONDS,
    "LI_SYNC_INTERVAL": _ANY_SECONDS,
    "GITHUB_API_URL": _TEXT,
    "GITHUB_TOKEN": _TEXT,
    "GH_TOKEN": _TEXT,
    "LI_GITHUB_TIMEOUT": _ANY_SECONDS,
    "LI_GITHUB_RATE": ("whole", 1, None),
    "LI_GITHUB_MAX_BODY_BYTES": ("whole", "MIN_MAX_BODY_BYTES", None),
    "LI_GITHUB_DEADLINE": ("seconds", "MIN_DEADLINE_SECONDS", None),
    "LI_GITHUB_MAX_REDIRECTS": ("whole", 0, "MAX_MAX_REDIRECTS"),
    "LI_POLL_THREADS": ("whole", 1, "MAX_CONCURRENT_REQUESTS"),
    "LI_RUNS_KEEP_DAYS": ("whole", 1, None),
    "LI_RUNS_KEEP_PER_SCHEDULE": ("whole", 0, None),
    "LI_TRIGGER_KEYS_KEEP_DAYS": ("whole", 2, None),
}
# Without a token variable Settings reads the token from the file these name (D66).
TOKEN_VARIABLES = frozenset({"GITHUB_TOKEN", "GH_TOKEN"})
TOKEN_FILES = frozenset({"GITHUB_TOKEN_FILE", "CREDENTIALS_DIRECTORY"})
# A GitHub App (engine.github.appconfig): only Settings reads and checks it.
APP_VARIABLES = frozenset(
    {"GITHUB_APP_ID", "GITHUB_APP_PRIVATE_KEY_FILE", "GITHUB_APP_INSTALLATION_ID"}
    | {"GITHUB_APP_REPOSITORY", "GITHUB_APP_TOKEN_CACHE"}
)
# Settings' field names, which pydantic-settings also reads as variables (populate_by_name).
FIELD_NAMES = frozenset(
    {
        "database_url",
        "database_url_is_default",
        "command_allowlist",
        "env_passthrough",
        "max_concurrent_actions",
        "kill_grace_seconds",
        "shutdown_grace_seconds",
        "sync_interval_seconds",
        "heartbeat_interval_seconds",
        "github_api_url",
        "github_token",
        "github_app",
        "github_timeout_seconds",
        "github_requests_per_minute",
        "github_max_body_bytes",
        "github_deadline_seconds",
        "github_max_redirects",
        "poll_threads_setting",
        "runs_keep_days",
        "runs_keep_per_schedule",
        "trigger_keys_keep_days",
        "retention_interval_seconds",
    }
)


def default_database_url() -> str:
    """``sqlite:///<user data dir>/li/li.db`` (platformdirs), the embedded default."""
    import platformdirs

    data_dir = Path(platformdirs.user_data_dir("li", appauthor=False))
    return f"sqlite:///{data_dir / 'li.db'}"


def plain_environment(environ: Mapping[str, str]) -> dict[str, str] | None:
    """``environ`` without its empty variables (which ``Settings`` counts as unset) when
    it is plainly valid (see the module doc); None when only ``Settings`` can tell. The
    one test of plainness for li's own fast path and for the wrapper's reader of the GitHub
    settings (wrapper/config_env.py)."""
    env = {name: value for name, value in environ.items() if value != ""}
    if FIELD_NAMES.intersection(env):
        return None
    if not TOKEN_VARIABLES.intersection(env) and TOKEN_FILES.intersection(env):
        return None  # the token is in a file: Settings reads it (engine.credentials)
    if APP_VARIABLES.intersection(env):
        return None  # a GitHub App: Settings reads and checks it
    for name, (kind, lowest, highest) in VARIABLES.items():
        if name in env and not _plain(env[name], kind, _bound(lowest), _bound(highest)):
            return None
    return env


def plain_database_url(environ: Mapping[str, str]) -> str | None:
    """``Settings.from_env(environ).database_url`` when the environment is plainly
    valid (see the module doc); None when only ``Settings`` itself can tell."""
    env = plain_environment(environ)
    if env is None:
        return None
    # A blank URL means the default (Settings._database_default); a given one is stripped.
    return env.get("LI_DATABASE_URL", "").strip() or default_database_url()


def _bound(value: int | str | None) -> float | None:
    if isinstance(value, str):
        return float(getattr(import_module("engine.github.limits"), value))
    return value


def _plain(value: str, kind: str, lowest: float | None, highest: float | None) -> bool:
    """True when ``value`` is a form of ``kind`` whose reading is not in doubt."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from an undecodable environment
        return False
    if kind == "text":
        return True
    if kind == "names":
        return all(NAME.match(item.strip()) for item in value.split(",") if item.strip())
    if not (_WHOLE if kind == "whole" else _SECONDS).fullmatch(value):
        return False
    number = float(value)
    return number >= (lowest or 0) and (highest is None or number <= highest)
