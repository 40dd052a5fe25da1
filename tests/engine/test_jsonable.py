"""engine.jsonable.as_json: the one --json conversion of result dataclasses."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone

import pytest

from engine.jsonable import as_json


class Colour(enum.StrEnum):
    RED = "red"


@dataclass(frozen=True)
class Inner:
    n: int


@dataclass(frozen=True)
class Custom:
    def to_json(self) -> dict[str, str]:
        return {"custom": "yes"}


@dataclass(frozen=True)
class Outer:
    name: str
    colour: Colour
    at: datetime
    when: datetime | None
    inner: Inner
    custom: Custom
    items: tuple[Inner, ...] = ()
    tags: dict[str, Colour] = field(default_factory=dict)


MOMENT = datetime(2026, 1, 2, 3, 4, 5, 600, tzinfo=timezone(timedelta(hours=2)))


def test_fields_in_order_with_every_conversion() -> None:
    obj = Outer("x", Colour.RED, MOMENT, None, Inner(1), Custom(), (Inner(2),), {"a": Colour.RED})
    out = as_json(obj)
    assert list(out) == ["name", "colour", "at", "when", "inner", "custom", "items", "tags"]
    assert out == {
        "name": "x",
        "colour": "red",
        "at": "2026-01-02T01:04:05Z",
        "when": None,
        "inner": {"n": 1},
        "custom": {"custom": "yes"},
        "items": [{"n": 2}],
        "tags": {"a": "red"},
    }
    assert as_json(obj, timespec="auto")["at"] == "2026-01-02T01:04:05.000600Z"


def test_rename_and_overrides() -> None:
    out = as_json(Inner(1), rename={"n": "number"}, n=7)
    assert out == {"number": 7}


def test_a_naive_time_or_an_unknown_value_is_refused() -> None:
    with pytest.raises(ValueError, match="no time zone"):
        as_json(Outer("x", Colour.RED, datetime(2026, 1, 1), None, Inner(1), Custom()))
    with pytest.raises(TypeError, match="no JSON form"):
        as_json(Inner(object()))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="dataclass instance"):
        as_json(Inner)
    assert as_json(Outer("x", Colour.RED, MOMENT.astimezone(UTC), None, Inner(1), Custom()))
