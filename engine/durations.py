"""Durations written by people: ``90s``, ``5m``, ``1h30m``, ``2d``; always positive and
bounded (the maxima below are documented in docs/schedules.md; a larger value would
overflow date arithmetic or mean a schedule that never really runs)."""

from __future__ import annotations

import re

from engine.errors import InvalidInput

_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
DAY = 86400
MAX_TIMEOUT_SECONDS = 7 * DAY  # an action's --timeout / timeout
MAX_INTERVAL_SECONDS = 366 * DAY  # --every / every
MAX_POLL_INTERVAL_SECONDS = DAY  # --poll-interval / poll_interval
MAX_DRAIN_SECONDS = DAY  # li engine run --drain-timeout
MAX_DURATION_SECONDS = 366 * DAY  # anything else
# The maximum of each key as written on the command line or in a schedule file.
MAXIMA = {
    "timeout": MAX_TIMEOUT_SECONDS,
    "--timeout": MAX_TIMEOUT_SECONDS,
    "every": MAX_INTERVAL_SECONDS,
    "--every": MAX_INTERVAL_SECONDS,
    "poll_interval": MAX_POLL_INTERVAL_SECONDS,
    "--poll-interval": MAX_POLL_INTERVAL_SECONDS,
    "github.poll_interval": MAX_POLL_INTERVAL_SECONDS,
    "--drain-timeout": MAX_DRAIN_SECONDS,
    "retry.backoff": 3600,
    "--retry-backoff": 3600,
}
_DURATION = re.compile(r"^(?:\d+[smhd])+$")
_PART = re.compile(r"(\d+)([smhd])")


def check_at_most(seconds: int, maximum: int, what: str) -> None:
    """Refuse ``seconds`` over ``maximum`` (reason ``duration_too_long``)."""
    if seconds > maximum:
        raise InvalidInput(
            f"{what} {format_duration(seconds)} is longer than the maximum "
            f"{format_duration(maximum)}",
            "duration_too_long",
        )


def parse_duration(text: str, *, what: str = "duration", maximum: int | None = None) -> int:
    """Seconds in ``text`` (e.g. ``1h30m`` -> 5400); zero, negative or unknown units refuse.

    Raises InvalidInput with reason ``invalid_duration``, or ``duration_too_long`` over
    ``maximum`` (default: the maximum of ``what`` in :data:`MAXIMA`, else 366 days).
    """
    raw = text.strip().lower() if isinstance(text, str) else ""
    if not _DURATION.match(raw):
        raise InvalidInput(
            f"{what} {text!r} is not a duration like 30s, 5m, 1h30m or 2d", "invalid_duration"
        )
    seconds = sum(int(n) * _UNIT_SECONDS[unit] for n, unit in _PART.findall(raw))
    if seconds <= 0:
        raise InvalidInput(f"{what} {text!r} must be longer than zero", "invalid_duration")
    check_at_most(seconds, maximum or MAXIMA.get(what, MAX_DURATION_SECONDS), what)
    return seconds


def format_duration(seconds: float) -> str:
    """The shortest readable form: 5400 -> ``1h30m``, 45 -> ``45s``, 0.25 -> ``0.25s``."""
    if seconds < 60 and seconds != int(seconds):
        return f"{seconds:.2f}s"
    remaining = int(seconds)
    parts = []
    for unit in ("d", "h", "m", "s"):
        size = _UNIT_SECONDS[unit]
        if remaining >= size:
            parts.append(f"{remaining // size}{unit}")
            remaining %= size
    return "".join(parts) or "0s"
