"""engine.timefmt: the one way a timestamp becomes output text."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.timefmt import iso_utc, iso_utc_or_none, minute_utc

MOMENT = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)


def test_the_default_form_is_seconds_in_utc_ending_in_z() -> None:
    assert iso_utc(MOMENT) == "2026-01-02T03:04:05Z"
    assert iso_utc(MOMENT, timespec="auto") == "2026-01-02T03:04:05.678901Z"
    assert minute_utc(MOMENT) == "2026-01-02 03:04Z"
    assert iso_utc_or_none(None) is None


def test_another_offset_is_converted_to_utc_not_relabelled() -> None:
    east = MOMENT.astimezone(timezone(timedelta(hours=5, minutes=30)))
    assert iso_utc(east) == "2026-01-02T03:04:05Z"
    assert minute_utc(east) == "2026-01-02 03:04Z"


def test_a_naive_datetime_is_refused_never_guessed() -> None:
    for render in (iso_utc, minute_utc, iso_utc_or_none):
        with pytest.raises(ValueError, match="no time zone"):
            render(MOMENT.replace(tzinfo=None))


@given(st.datetimes(timezones=st.just(UTC)))
def test_the_full_form_reads_back_as_the_same_moment(moment: datetime) -> None:
    text = iso_utc(moment, timespec="auto")
    assert text.endswith("Z") and "+" not in text
    assert datetime.fromisoformat(text[:-1] + "+00:00") == moment
