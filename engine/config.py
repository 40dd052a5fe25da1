"""Settings: the only module that reads ``os.environ``.

Everything else receives a :class:`Settings` (or a field of it), so tests pass their own
values instead of patching the environment.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs

from engine.errors import ConfigError

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
EXECUTABLE_NAME = re.compile(r"^[A-Za-z0-9._][A-Za-z0-9._-]*$")


def default_database_url() -> str:
    """``sqlite:///<user data dir>/li/li.db`` (platformdirs), the embedded default."""
    data_dir = Path(platformdirs.user_data_dir("li", appauthor=False))
    return f"sqlite:///{data_dir / 'li.db'}"


def _parse_allowlist(raw: str) -> frozenset[str]:
    names = [item.strip() for item in raw.split(",")]
    return frozenset(name for name in names if name)


def _parse_names(raw: str, variable: str) -> tuple[str, ...]:
    names = tuple(item.strip() for item in raw.split(",") if item.strip())
    for name in names:
        if not _NAME.match(name):
            raise ConfigError(
                f"{variable}: {name!r} is not an environment variable name", "invalid_setting"
            )
    return names


def _parse_positive_int(raw: str, variable: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(
            f"{variable} must be a positive integer, got {raw!r}", "invalid_setting"
        ) from None
    if value < 1:
        raise ConfigError(f"{variable} must be a positive integer, got {raw!r}", "invalid_setting")
    return value


def _parse_seconds(raw: str, variable: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(
            f"{variable} must be a number of seconds, got {raw!r}", "invalid_setting"
        ) from None
    if value < 0:
        raise ConfigError(f"{variable} must not be negative, got {raw!r}", "invalid_setting")
    return value


@dataclass(frozen=True)
class Settings:
    """Engine settings. Precedence: explicit argument > environment > default."""

    database_url: str = field(default_factory=default_database_url)
    database_url_is_default: bool = True
    command_allowlist: frozenset[str] = frozenset()
    env_passthrough: tuple[str, ...] = ()
    max_concurrent_actions: int = 4
    kill_grace_seconds: float = 5.0
    shutdown_grace_seconds: float = 30.0
    sync_interval_seconds: float = 2.0
    heartbeat_interval_seconds: float = 5.0
    github_api_url: str = "https://api.github.com"
    github_token: str | None = field(default=None, repr=False)
    github_timeout_seconds: float = 30.0
    github_requests_per_minute: float = 600.0

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read ``LI_*`` and ``GITHUB_*`` variables; malformed values raise ConfigError."""
        env = os.environ if environ is None else environ
        url = env.get("LI_DATABASE_URL", "").strip()
        token = env.get("GITHUB_TOKEN") or env.get("GH_TOKEN") or None
        return cls(
            database_url=url or default_database_url(),
            database_url_is_default=not url,
            command_allowlist=_parse_allowlist(env.get("LI_COMMAND_ALLOWLIST", "")),
            env_passthrough=_parse_names(env.get("LI_ENV_PASSTHROUGH", ""), "LI_ENV_PASSTHROUGH"),
            max_concurrent_actions=_parse_positive_int(
                env.get("LI_MAX_CONCURRENT_ACTIONS", "4"), "LI_MAX_CONCURRENT_ACTIONS"
            ),
            kill_grace_seconds=_parse_seconds(env.get("LI_KILL_GRACE", "5"), "LI_KILL_GRACE"),
            shutdown_grace_seconds=_parse_seconds(
                env.get("LI_SHUTDOWN_GRACE", "30"), "LI_SHUTDOWN_GRACE"
            ),
            sync_interval_seconds=_parse_seconds(
                env.get("LI_SYNC_INTERVAL", "2"), "LI_SYNC_INTERVAL"
            )
            or 2.0,
            github_api_url=(env.get("GITHUB_API_URL") or "https://api.github.com").rstrip("/"),
            github_token=token,
            github_timeout_seconds=_parse_seconds(
                env.get("LI_GITHUB_TIMEOUT", "30"), "LI_GITHUB_TIMEOUT"
            )
            or 30.0,
            github_requests_per_minute=float(
                _parse_positive_int(env.get("LI_GITHUB_RATE", "600"), "LI_GITHUB_RATE")
            ),
        )

    def read_environment(
        self, names: tuple[str, ...] | list[str], environ: Mapping[str, str] | None = None
    ) -> dict[str, str]:
        """Values of ``names`` from the process environment (present ones only)."""
        env = os.environ if environ is None else environ
        return {name: env[name] for name in names if name in env}

    def base_environment(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """The minimal environment every action gets: PATH, HOME, LANG."""
        env = os.environ if environ is None else environ
        base = {"PATH": env.get("PATH", os.defpath)}
        for name in ("HOME", "LANG"):
            if name in env:
                base[name] = env[name]
        base.setdefault("LANG", "C.UTF-8")
        return base
