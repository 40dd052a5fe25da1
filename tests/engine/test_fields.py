"""engine.fields.same_fields: a dataclass built from the same-named attributes of another."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from engine.fields import same_fields


@dataclass(frozen=True)
class Target:
    a: int
    b: str
    c: float = 1.5


@dataclass(frozen=True)
class Source:
    a: int
    b: str
    extra: str = "not carried"


def test_fields_are_carried_by_name_and_given_ones_win() -> None:
    assert same_fields(Target, Source(1, "x")) == Target(1, "x", 1.5)
    assert same_fields(Target, Source(1, "x"), b="y", c=2.0) == Target(1, "y", 2.0)


def test_a_field_the_source_lacks_and_nobody_gives_is_a_type_error() -> None:
    @dataclass(frozen=True)
    class Lacking:
        a: int

    with pytest.raises(TypeError):
        same_fields(Target, Lacking(1))
