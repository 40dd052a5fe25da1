"""Small builders shared by the engine tests."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

from engine.config import Settings
from engine.schedules.spec import ScheduleSpec
from engine.store.models import OverlapPolicy, TriggerType


class FakeClock:
    """A settable, thread-safe clock (aware UTC)."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> datetime:
        with self._lock:
            self._now += timedelta(seconds=seconds)
            return self._now


def settings_for(
    url: str, allow: tuple[str, ...] = ("sh", "true", "false", "echo"), **overrides: Any
) -> Settings:
    values: dict[str, Any] = {
        "database_url": url,
        "database_url_is_default": False,
        "command_allowlist": frozenset(allow),
        "kill_grace_seconds": 0.5,
        "shutdown_grace_seconds": 1.0,
        "sync_interval_seconds": 0.3,
        "heartbeat_interval_seconds": 0.5,
    }
    values.update(overrides)
    return Settings(**values)


def interval_spec(
    name: str = "tick",
    every: int = 60,
    command: str = "sh",
    args: list[str] | None = None,
    **fields: Any,
) -> ScheduleSpec:
    values: dict[str, Any] = {
        "name": name,
        "trigger_type": TriggerType.INTERVAL,
        "interval_seconds": every,
        "command": command,
        "args": args if args is not None else ["-c", "echo hi"],
        "overlap": OverlapPolicy.SKIP,
    }
    values.update(fields)
    return ScheduleSpec(**values)
