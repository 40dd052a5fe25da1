"""Durations written by people: ``90s``, ``5m``, ``1h30m``, ``2d``; always positive."""

from __future__ import annotations

import re

from engine.errors import InvalidInput

_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION = re.compile(r"^(?:\d+[smhd])+$")
_PART = re.compile(r"(\d+)([smhd])")


def parse_duration(text: str, *, what: str = "duration") -> int:
    """Seconds in ``text`` (e.g. ``1h30m`` -> 5400); zero, negative or unknown units refuse.

    Raises InvalidInput with reason ``invalid_duration``.
    """
    raw = text.strip().lower() if isinstance(text, str) else ""
    if not _DURATION.match(raw):
        raise InvalidInput(
            f"{what} {text!r} is not a duration like 30s, 5m, 1h30m or 2d", "invalid_duration"
        )
    seconds = sum(int(n) * _UNIT_SECONDS[unit] for n, unit in _PART.findall(raw))
    if seconds <= 0:
        raise InvalidInput(f"{what} {text!r} must be longer than zero", "invalid_duration")
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
