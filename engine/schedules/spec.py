"""ScheduleSpec: what a user asks for, validated; the shape shared by the CLI and YAML.

Validation that needs no database lives here (names, cron, timezone, command, cwd);
``check_spec`` raises :class:`engine.errors.LiError` subclasses with reason codes:

- ``invalid_name``: a name outside ``[A-Za-z0-9][A-Za-z0-9._-]{0,99}``
- ``invalid_cron`` / ``invalid_timezone``: the expression or zone does not parse
- ``invalid_trigger``: not exactly one trigger given
- ``command_not_allowlisted``: the executable is a path, a flag or not allow-listed
- ``cwd_missing``: the working directory does not exist
- ``invalid_value``: any other out-of-range number
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from apscheduler.triggers.cron import CronTrigger
from pydantic import BaseModel, ConfigDict, Field

from engine.config import EXECUTABLE_NAME
from engine.durations import MAX_INTERVAL_SECONDS, MAX_TIMEOUT_SECONDS, check_at_most
from engine.errors import InvalidInput, Refused
from engine.store.enums import OverlapPolicy, TriggerType

SCHEDULE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
DEFAULT_TIMEOUT_SECONDS = 3600
MAX_RETRY_ATTEMPTS = 10
DEFAULT_RETRY_BACKOFF_SECONDS = 30
MAX_RETRY_BACKOFF = 3600


class ScheduleSpec(BaseModel):
    """A schedule as the user declares it (no runtime state: cursor, counts, leases)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    enabled: bool = True
    trigger_type: TriggerType
    cron: str | None = None
    timezone: str | None = None
    interval_seconds: int | None = None
    # github_poll settings (repo, filters, poll interval, ...), validated by the poller.
    trigger_config: dict[str, Any] = Field(default_factory=dict)
    command: str
    args: list[str] = Field(default_factory=list)
    cwd: str | None = None
    timeout_seconds: int = DEFAULT_TIMEOUT_SECONDS
    max_runs: int | None = None
    env_passthrough: list[str] = Field(default_factory=list)
    overlap: OverlapPolicy = OverlapPolicy.SKIP
    # A failed run (non-zero exit) is tried again up to this many attempts in all,
    # waiting retry_backoff_seconds before the second, doubling after (engine.run.actions).
    retry_max_attempts: int = Field(1, ge=1, le=MAX_RETRY_ATTEMPTS)
    retry_backoff_seconds: int = Field(DEFAULT_RETRY_BACKOFF_SECONDS, ge=1, le=MAX_RETRY_BACKOFF)


def check_retry_attempts(attempts: int) -> int:
    """``attempts`` if it is 1..MAX_RETRY_ATTEMPTS (reason ``invalid_value``)."""
    if not 1 <= attempts <= MAX_RETRY_ATTEMPTS:
        raise InvalidInput(
            f"retry max attempts {attempts} must be 1..{MAX_RETRY_ATTEMPTS}", "invalid_value"
        )
    return attempts


def check_name(name: str) -> None:
    """Refuse a schedule name that is not ``[A-Za-z0-9][A-Za-z0-9._-]{0,99}``."""
    if not SCHEDULE_NAME.match(name):
        raise InvalidInput(
            f"schedule name {name!r} must be 1-100 of letters, digits, "
            "'.', '_' or '-', starting with a letter or digit",
            "invalid_name",
        )


def check_executable(command: str, allowlist: frozenset[str]) -> None:
    """Refuse unless ``command`` is a bare name that is an exact allow-list member."""
    if not EXECUTABLE_NAME.match(command) or command in (".", ".."):
        raise Refused(
            f"command {command!r} must be a bare executable name (no path, not a "
            "flag) listed in LI_COMMAND_ALLOWLIST",
            "command_not_allowlisted",
        )
    if command not in allowlist:
        shown = ",".join(sorted(allowlist)) or "empty"
        raise Refused(
            f"command {command!r} is not in LI_COMMAND_ALLOWLIST ({shown})",
            "command_not_allowlisted",
        )


def zone(name: str) -> ZoneInfo:
    """The IANA zone ``name``; ``invalid_timezone`` when unknown."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidInput(
            f"unknown timezone {name!r} (use an IANA name like Europe/Paris)", "invalid_timezone"
        ) from None


def cron_trigger(expr: str, timezone: str | None) -> CronTrigger:
    """A parsed five-field cron expression; ``invalid_cron`` when it does not parse."""
    tz = zone(timezone or "UTC")
    try:
        return CronTrigger.from_crontab(expr, timezone=tz)
    except (ValueError, TypeError) as exc:
        raise InvalidInput(f"invalid cron expression {expr!r}: {exc}", "invalid_cron") from None


def check_spec(spec: ScheduleSpec, allowlist: frozenset[str], *, check_cwd: bool = True) -> None:
    """Every check that needs no database; raises on the first problem."""
    check_name(spec.name)
    if spec.trigger_type is TriggerType.CRON:
        if not spec.cron or spec.interval_seconds is not None:
            raise InvalidInput("a cron schedule needs --cron and no --every", "invalid_trigger")
        cron_trigger(spec.cron, spec.timezone)
    elif spec.trigger_type is TriggerType.INTERVAL:
        if spec.interval_seconds is None or spec.cron is not None:
            raise InvalidInput(
                "an interval schedule needs --every and no --cron", "invalid_trigger"
            )
        if spec.interval_seconds < 1:
            raise InvalidInput("--every must be at least 1s", "invalid_duration")
        if spec.timezone is not None:
            zone(spec.timezone)
    elif spec.cron is not None or spec.interval_seconds is not None:
        raise InvalidInput("a github_poll schedule takes no --cron or --every", "invalid_trigger")
    if spec.timeout_seconds < 1:
        raise InvalidInput("timeout must be at least 1s", "invalid_duration")
    check_at_most(spec.timeout_seconds, MAX_TIMEOUT_SECONDS, "timeout")
    if spec.interval_seconds is not None:
        check_at_most(spec.interval_seconds, MAX_INTERVAL_SECONDS, "every")
    if spec.max_runs is not None and spec.max_runs < 1:
        raise InvalidInput(
            f"max_runs must be a positive integer, got {spec.max_runs}", "invalid_value"
        )
    for name in spec.env_passthrough:
        if not ENV_NAME.match(name):
            raise InvalidInput(f"env passthrough {name!r} is not a variable name", "invalid_value")
    check_executable(spec.command, allowlist)
    if check_cwd and spec.cwd is not None and not Path(spec.cwd).is_dir():
        raise Refused(f"working directory {spec.cwd} does not exist", "cwd_missing")


def next_fire_time(
    trigger_type: str,
    *,
    cron: str | None,
    timezone: str | None,
    interval_seconds: int | None,
    previous: datetime | None,
    now: datetime,
) -> datetime | None:
    """When a cron/interval schedule is next due after ``now`` (aware UTC in, aware out).

    An interval schedule is due ``interval`` after its previous due time, skipping missed
    slots (they coalesce into one fire); github_poll uses its poll interval the same way,
    read from ``interval_seconds``.
    """
    if trigger_type == TriggerType.CRON:
        assert cron is not None
        result: datetime | None = cron_trigger(cron, timezone).get_next_fire_time(None, now)
        if result is not None and result <= now:
            result = cron_trigger(cron, timezone).get_next_fire_time(
                None, now + timedelta(seconds=1)
            )
        return result
    if interval_seconds is None:
        return None
    step = timedelta(seconds=interval_seconds)
    if previous is None:
        return now + step
    due = previous + step
    if due <= now:
        missed = (now - previous) // step
        due = previous + step * (missed + 1)
    return due
