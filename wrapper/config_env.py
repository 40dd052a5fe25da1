"""The GitHub client's settings for kdev, without pydantic-settings when it is not needed.

``engine.config.Settings.from_env`` is the one reader of the ``LI_*`` and ``GITHUB_*``
variables. Importing it costs pydantic-settings (and through it asyncio): about a tenth
of ``kdev review-pr``'s carry-forward, which reads seven of its fields (issue 19; the
three bounds of one answer since issue 24). :func:`github_settings` gives the same
values without that import when it can prove that ``Settings.from_env`` would accept the
environment and read them the same way:

- every variable ``Settings`` reads (each field's variable and, as pydantic-settings
  also accepts them, the field names themselves) is absent, empty (which counts as unset)
  or in a plain form whose meaning is not in doubt: digits for a whole number, digits
  with an optional decimal fraction for seconds, valid names for ``LI_ENV_PASSTHROUGH``,
  any text for the strings; each within its field's bounds; and a token variable is
  set, or neither ``GITHUB_TOKEN_FILE`` nor ``CREDENTIALS_DIRECTORY`` (which name a
  file that ``Settings`` reads the token from);
- then the values are read as ``Settings`` reads them: ``GITHUB_API_URL`` without a
  trailing ``/``, ``GITHUB_TOKEN`` before ``GH_TOKEN``, a zero ``LI_GITHUB_TIMEOUT``
  meaning 30, the defaults otherwise (engine.github.limits holds those of the bounds).

Anything else - a field name used as a variable, a sign, a space, an exponent, an
out-of-range number, a bad name, text that is not valid Unicode - goes to
``Settings.from_env`` itself, so every error (and every odd but accepted form) is
exactly the one ``Settings`` gives. tests/wrapper/test_config_env.py checks both readers
against each other, and that this module knows every variable ``Settings`` reads.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from engine.github import GitHubSettings, limits

# engine.config's DEFAULT_GITHUB_API_URL and name pattern (the test checks they agree).
DEFAULT_GITHUB_API_URL = "https://api.github.com"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Matched whole (fullmatch): no sign, space, underscore, exponent or trailing newline.
_WHOLE = re.compile(r"0|[1-9][0-9]{0,8}")
_SECONDS = re.compile(r"(0|[1-9][0-9]{0,8})(\.[0-9]{1,9})?")

# Variable -> (kind, lowest, highest): every variable Settings.from_env reads by alias.
VARIABLES: dict[str, tuple[str, int, int | None]] = {
    "LI_DATABASE_URL": ("text", 0, None),
    "LI_COMMAND_ALLOWLIST": ("text", 0, None),
    "LI_ENV_PASSTHROUGH": ("names", 0, None),
    "LI_MAX_CONCURRENT_ACTIONS": ("whole", 1, None),
    "LI_KILL_GRACE": ("seconds", 0, None),
    "LI_SHUTDOWN_GRACE": ("seconds", 0, None),
    "LI_SYNC_INTERVAL": ("seconds", 0, None),
    "GITHUB_API_URL": ("text", 0, None),
    "GITHUB_TOKEN": ("text", 0, None),
    "GH_TOKEN": ("text", 0, None),
    "LI_GITHUB_TIMEOUT": ("seconds", 0, None),
    "LI_GITHUB_RATE": ("whole", 1, None),
    "LI_GITHUB_MAX_BODY_BYTES": ("whole", limits.MIN_MAX_BODY_BYTES, None),
    "LI_GITHUB_DEADLINE": ("seconds", int(limits.MIN_DEADLINE_SECONDS), None),
    "LI_GITHUB_MAX_REDIRECTS": ("whole", 0, limits.MAX_MAX_REDIRECTS),
    "LI_POLL_THREADS": ("whole", 1, limits.MAX_CONCURRENT_REQUESTS),
    "LI_RUNS_KEEP_DAYS": ("whole", 1, None),
    "LI_RUNS_KEEP_PER_SCHEDULE": ("whole", 0, None),
    "LI_TRIGGER_KEYS_KEEP_DAYS": ("whole", 2, None),
}
# Without a token variable Settings reads the token from the file these name (D66).
TOKEN_FILES = frozenset({"GITHUB_TOKEN_FILE", "CREDENTIALS_DIRECTORY"})
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


@dataclass(frozen=True)
class GitHubEnv:
    """The fields of ``Settings`` the GitHub client reads (a :class:`GitHubSettings`)."""

    github_api_url: str
    github_token: str | None
    github_timeout_seconds: float
    github_requests_per_minute: int
    github_max_body_bytes: int = limits.DEFAULT_MAX_BODY_BYTES
    github_deadline_seconds: float = limits.DEFAULT_DEADLINE_SECONDS
    github_max_redirects: int = limits.DEFAULT_MAX_REDIRECTS


def github_settings(environ: Mapping[str, str]) -> GitHubSettings:
    """The GitHub client's settings from ``environ``, as ``Settings.from_env`` reads them
    (and with its ``ConfigError`` for a malformed value)."""
    fast = read_plain(environ)
    if fast is not None:
        return fast
    from engine.config import Settings

    return Settings.from_env(environ)


def read_plain(environ: Mapping[str, str]) -> GitHubEnv | None:
    """The GitHub fields when every variable ``Settings`` reads is plainly valid; else None."""
    env = {name: value for name, value in environ.items() if value != ""}
    if FIELD_NAMES.intersection(env):
        return None
    if not {"GITHUB_TOKEN", "GH_TOKEN"}.intersection(env) and TOKEN_FILES.intersection(env):
        return None  # the token is in a file: Settings reads it (engine.credentials)
    for name, (kind, lowest, highest) in VARIABLES.items():
        if name in env and not _plain(env[name], kind, lowest, highest):
            return None
    timeout = float(env.get("LI_GITHUB_TIMEOUT", "0")) or 30.0
    return GitHubEnv(
        github_api_url=env.get("GITHUB_API_URL", DEFAULT_GITHUB_API_URL).rstrip("/"),
        github_token=env.get("GITHUB_TOKEN", env.get("GH_TOKEN")),
        github_timeout_seconds=timeout,
        github_requests_per_minute=int(env.get("LI_GITHUB_RATE", limits.DEFAULT_POINTS_PER_MINUTE)),
        github_max_body_bytes=int(
            env.get("LI_GITHUB_MAX_BODY_BYTES", limits.DEFAULT_MAX_BODY_BYTES)
        ),
        github_deadline_seconds=float(
            env.get("LI_GITHUB_DEADLINE", limits.DEFAULT_DEADLINE_SECONDS)
        ),
        github_max_redirects=int(env.get("LI_GITHUB_MAX_REDIRECTS", limits.DEFAULT_MAX_REDIRECTS)),
    )


def _plain(value: str, kind: str, lowest: int, highest: int | None) -> bool:
    """True when ``value`` is a form of ``kind`` whose reading is not in doubt."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from an undecodable environment
        return False
    if kind == "text":
        return True
    if kind == "names":
        return all(_NAME.match(item.strip()) for item in value.split(",") if item.strip())
    if not (_WHOLE if kind == "whole" else _SECONDS).fullmatch(value):
        return False
    number = float(value)
    return number >= lowest and (highest is None or number <= highest)
