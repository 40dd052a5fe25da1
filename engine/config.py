"""Settings: the only module that reads ``os.environ``.

Everything else receives a :class:`Settings` (or a field of it), so tests pass their own
values instead of patching the environment. The model is a pydantic-settings
``BaseSettings``; :meth:`Settings.from_env` reads its variables through pydantic-settings'
``EnvSettingsSource`` over an explicit mapping (``os.environ`` when none is given), and
keyword construction reads no environment at all. :mod:`engine.plainenv` tells, without
pydantic, whether an environment is one this model plainly accepts (issue 25).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import AliasChoices, Field, ValidationError, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
)

from engine.credentials import TOKEN_VARIABLES, token_from_sources
from engine.errors import ConfigError
from engine.github.appconfig import AppConfig, app_config_from
from engine.github.limits import (
    DEFAULT_DEADLINE_SECONDS,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_REDIRECTS,
    DEFAULT_POINTS_PER_MINUTE,
    MAX_CONCURRENT_REQUESTS,
    MAX_MAX_REDIRECTS,
    MIN_DEADLINE_SECONDS,
    MIN_MAX_BODY_BYTES,
    default_poll_threads,
)
from engine.plainenv import default_database_url as default_database_url

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
EXECUTABLE_NAME = re.compile(r"^[A-Za-z0-9._][A-Za-z0-9._-]*$")
DEFAULT_GITHUB_API_URL = "https://api.github.com"

# What each variable must hold, for the one-line error of a malformed value.
_EXPECTED = {
    "LI_MAX_CONCURRENT_ACTIONS": "a positive integer",
    "LI_GITHUB_RATE": "a positive integer",
    "LI_POLL_THREADS": f"a whole number from 1 to {MAX_CONCURRENT_REQUESTS}",
    "LI_KILL_GRACE": "a non-negative number of seconds",
    "LI_SHUTDOWN_GRACE": "a non-negative number of seconds",
    "LI_SYNC_INTERVAL": "a non-negative number of seconds",
    "LI_GITHUB_TIMEOUT": "a non-negative number of seconds",
    "LI_RUNS_KEEP_DAYS": "a whole number of days, at least 1",
    "LI_RUNS_KEEP_PER_SCHEDULE": "a whole number, 0 or more",
    "LI_TRIGGER_KEYS_KEEP_DAYS": "a whole number of days, at least 2",
    "LI_GITHUB_MAX_BODY_BYTES": f"a whole number of bytes, at least {MIN_MAX_BODY_BYTES}",
    "LI_GITHUB_DEADLINE": f"a number of seconds, at least {MIN_DEADLINE_SECONDS:g}",
    "LI_GITHUB_MAX_REDIRECTS": f"a whole number from 0 to {MAX_MAX_REDIRECTS}",
}


def _env(*names: str) -> AliasChoices:
    """The variable name(s) a field is read from (first present, non-empty one wins)."""
    return AliasChoices(*names)


def _comma_list(raw: object) -> object:
    """``"a, b,,c"`` -> ``["a", "b", "c"]``; non-strings (keyword construction) pass."""
    if isinstance(raw, str):
        return [item.strip() for item in raw.split(",") if item.strip()]
    return raw


class _MappingEnvSource(EnvSettingsSource):
    """pydantic-settings' environment source over an explicit mapping, not ``os.environ``."""

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        self._environ = environ
        super().__init__(settings_cls)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        # An empty variable counts as unset, as it always did (GITHUB_TOKEN= falls to GH_TOKEN).
        return {name: value for name, value in self._environ.items() if value != ""}


class Settings(BaseSettings):
    """Engine settings. Precedence: explicit argument > environment > default."""

    model_config = SettingsConfigDict(
        frozen=True,
        case_sensitive=True,
        populate_by_name=True,
        allow_inf_nan=False,
        extra="forbid",
    )

    database_url: str = Field(
        default_factory=default_database_url, validation_alias=_env("LI_DATABASE_URL")
    )
    database_url_is_default: bool = True
    command_allowlist: Annotated[frozenset[str], NoDecode] = Field(
        frozenset(), validation_alias=_env("LI_COMMAND_ALLOWLIST")
    )
    env_passthrough: Annotated[tuple[str, ...], NoDecode] = Field(
        (), validation_alias=_env("LI_ENV_PASSTHROUGH")
    )
    max_concurrent_actions: int = Field(4, ge=1, validation_alias=_env("LI_MAX_CONCURRENT_ACTIONS"))
    kill_grace_seconds: float = Field(5.0, ge=0, validation_alias=_env("LI_KILL_GRACE"))
    shutdown_grace_seconds: float = Field(30.0, ge=0, validation_alias=_env("LI_SHUTDOWN_GRACE"))
    sync_interval_seconds: float = Field(2.0, ge=0, validation_alias=_env("LI_SYNC_INTERVAL"))
    heartbeat_interval_seconds: float = 5.0
    github_api_url: str = Field(DEFAULT_GITHUB_API_URL, validation_alias=_env("GITHUB_API_URL"))
    # Without these variables, from_env reads GITHUB_TOKEN_FILE or the systemd credential.
    github_token: str | None = Field(
        None, repr=False, validation_alias=_env("GITHUB_TOKEN", "GH_TOKEN")
    )
    # A GitHub App instead of a token (engine.github.appconfig, issue 30); from_env reads it.
    github_app: AppConfig | None = None
    github_timeout_seconds: float = Field(30.0, ge=0, validation_alias=_env("LI_GITHUB_TIMEOUT"))
    # Secondary-limit points a minute per token (a GET is 1, a write 5): engine.github.limits.
    github_requests_per_minute: int = Field(
        DEFAULT_POINTS_PER_MINUTE, ge=1, validation_alias=_env("LI_GITHUB_RATE")
    )
    # The bounds of one GitHub answer (engine.github.bounded, issue 24): decoded body
    # bytes, seconds for the whole request, redirect hops within the API's origin.
    github_max_body_bytes: int = Field(
        DEFAULT_MAX_BODY_BYTES,
        ge=MIN_MAX_BODY_BYTES,
        validation_alias=_env("LI_GITHUB_MAX_BODY_BYTES"),
    )
    github_deadline_seconds: float = Field(
        DEFAULT_DEADLINE_SECONDS,
        ge=MIN_DEADLINE_SECONDS,
        validation_alias=_env("LI_GITHUB_DEADLINE"),
    )
    github_max_redirects: int = Field(
        DEFAULT_MAX_REDIRECTS,
        ge=0,
        le=MAX_MAX_REDIRECTS,
        validation_alias=_env("LI_GITHUB_MAX_REDIRECTS"),
    )
    # None: derived from the rate (engine.github.limits.default_poll_threads).
    poll_threads_setting: int | None = Field(
        None, ge=1, le=MAX_CONCURRENT_REQUESTS, validation_alias=_env("LI_POLL_THREADS")
    )
    # Retention of run rows and poll claims (engine.store.retention, docs/operations.md).
    runs_keep_days: int = Field(30, ge=1, validation_alias=_env("LI_RUNS_KEEP_DAYS"))
    runs_keep_per_schedule: int = Field(
        1000, ge=0, validation_alias=_env("LI_RUNS_KEEP_PER_SCHEDULE")
    )
    # Trigger keys (engine.store.keyretention): an item created longer ago never fires
    # again and its key is pruned. At least 2 days: keys go a day (clock skew) after it.
    trigger_keys_keep_days: int = Field(
        90, ge=2, validation_alias=_env("LI_TRIGGER_KEYS_KEEP_DAYS")
    )
    retention_interval_seconds: float = 3600.0

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Keyword arguments only: the environment is read by :meth:`from_env` alone."""
        return (init_settings,)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read ``LI_*`` and ``GITHUB_*`` variables; malformed values raise ConfigError.

        The token without ``GITHUB_TOKEN`` / ``GH_TOKEN`` comes from ``GITHUB_TOKEN_FILE``
        or the systemd credential (:func:`engine.credentials.token_from_sources`)."""
        env = os.environ if environ is None else environ
        try:
            values = _MappingEnvSource(cls, env)()
            app = app_config_from(env)
            if app is not None:
                return cls(**_with_app(values, app, env))
            if not {"github_token", *TOKEN_VARIABLES}.intersection(values):
                token = token_from_sources(env)
                if token is not None:
                    values = {**values, "github_token": token}
            return cls(**values)
        except SettingsError as exc:
            raise ConfigError(f"malformed setting: {exc}", "invalid_setting") from None
        except ValidationError as exc:
            raise _config_error(exc, env) from None

    @model_validator(mode="before")
    @classmethod
    def _database_default(cls, data: Any) -> Any:
        """A blank URL means the default; a given one is not the default unless told."""
        if not isinstance(data, dict):
            return data
        keys = [key for key in ("database_url", "LI_DATABASE_URL") if key in data]
        url = data[keys[0]] if keys else None
        if isinstance(url, str) and not url.strip():
            data = {key: value for key, value in data.items() if key not in keys}
            url = None
        if url is not None:
            data.setdefault("database_url_is_default", False)
        return data

    @field_validator("database_url", mode="after")
    @classmethod
    def _strip_url(cls, value: str) -> str:
        return value.strip()

    @field_validator("command_allowlist", mode="before")
    @classmethod
    def _split_allowlist(cls, value: object) -> object:
        return _comma_list(value)

    @field_validator("env_passthrough", mode="before")
    @classmethod
    def _split_names(cls, value: object) -> object:
        names = _comma_list(value)
        for name in names if isinstance(names, (list, tuple)) else ():
            if not _NAME.match(str(name)):
                raise ValueError(f"{name!r} is not an environment variable name")
        return names

    @field_validator("sync_interval_seconds", mode="after")
    @classmethod
    def _sync_zero_is_default(cls, value: float) -> float:
        return value or 2.0

    @field_validator("github_timeout_seconds", mode="after")
    @classmethod
    def _timeout_zero_is_default(cls, value: float) -> float:
        return value or 30.0

    @field_validator("github_api_url", mode="after")
    @classmethod
    def _strip_slash(cls, value: str) -> str:
        return value.rstrip("/")

    @property
    def poll_threads(self) -> int:
        """Threads that run poll passes: ``LI_POLL_THREADS``, else derived from the rate."""
        if self.poll_threads_setting is not None:
            return self.poll_threads_setting
        return default_poll_threads(self.github_requests_per_minute)

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


def _config_error(exc: ValidationError, environ: Mapping[str, str]) -> ConfigError:
    """pydantic's ValidationError as one line naming the variable, ``invalid_setting``."""
    first = exc.errors(include_url=False)[0]
    variable = str(first["loc"][0]) if first["loc"] else "settings"
    raw = environ.get(variable, first.get("input"))
    if first["type"] == "value_error":
        reason = str(first.get("ctx", {}).get("error", first["msg"]))
        return ConfigError(f"{variable}: {reason}", "invalid_setting")
    expected = _EXPECTED.get(variable)
    if expected is None:
        return ConfigError(f"{variable}: {first['msg']}, got {raw!r}", "invalid_setting")
    return ConfigError(f"{variable} must be {expected}, got {raw!r}", "invalid_setting")


def _with_app(values: dict[str, Any], app: AppConfig, env: Mapping[str, str]) -> dict[str, Any]:
    """``values`` with the App as the identity; a token source beside it is refused."""
    from engine.credentials import TOKEN_FILE_VARIABLE

    tokens = sorted(name for name in (*TOKEN_VARIABLES, TOKEN_FILE_VARIABLE) if env.get(name))
    if tokens or "github_token" in values:
        raise ConfigError(
            f"GITHUB_APP_ID and {', '.join(tokens) or 'a token'} are both set: choose the "
            "App or the token",
            "ambiguous_github_auth",
        )
    return {**values, "github_app": app}
