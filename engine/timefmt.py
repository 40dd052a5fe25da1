"""Timestamps in output: the one place li (and the programs on its API) turn a datetime into text.

Every form is UTC and ends in ``Z``; a naive datetime is refused (ValueError), never
guessed at. Standard library only, so any module may import it (pure, no I/O).

- :func:`iso_utc` ``2026-01-02T03:04:05Z`` (``timespec`` as :meth:`datetime.isoformat`:
  ``"seconds"`` by default, ``"auto"`` keeps microseconds when there are any);
- :func:`iso_utc_or_none` the same, ``None`` for ``None`` (JSON fields);
- :func:`minute_utc` ``2026-01-02 03:04Z``, the short form of a sentence.
"""

from __future__ import annotations

from datetime import UTC, datetime


def _utc(moment: datetime) -> datetime:
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"{moment!r} has no time zone")
    return moment.astimezone(UTC)


def iso_utc(moment: datetime, *, timespec: str = "seconds") -> str:
    """``moment`` as ISO 8601 in UTC ending in ``Z``; a naive datetime is a ValueError."""
    return _utc(moment).isoformat(timespec=timespec).replace("+00:00", "Z")


def iso_utc_or_none(moment: datetime | None, *, timespec: str = "seconds") -> str | None:
    """:func:`iso_utc`, or None for None."""
    return None if moment is None else iso_utc(moment, timespec=timespec)


def minute_utc(moment: datetime) -> str:
    """``YYYY-MM-DD HH:MMZ``: a time inside a sentence, to the minute."""
    return _utc(moment).strftime("%Y-%m-%d %H:%MZ")
