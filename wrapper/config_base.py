"""The base of every kdev.yaml model: strict (unknown keys refused), frozen, built late;
and :func:`listed_once`, the check of a mapping keyed by GitHub names."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from pydantic import BaseModel, ConfigDict

_V = TypeVar("_V")
_W = TypeVar("_W")


class Strict(BaseModel):
    # defer_build: a model's validator is built when it is first used, not when its
    # module is imported; kdev validates KdevConfig once per process, which builds the
    # nested models' schemas in one pass (about 15 ms less per kdev start, issue 19).
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


def listed_once(
    value: Mapping[str, _V], what: str, name: Callable[[str], str], entry: Callable[[_V], _W]
) -> dict[str, _W]:
    """``value`` keyed by each ``name(key)`` lowered (GitHub's names ignore case), every
    key listed once (else ``{what} {key!r} is listed twice``); ``entry`` checks a value."""
    lowered: dict[str, _W] = {}
    for key, item in value.items():
        folded = name(key).lower()
        if folded in lowered:
            raise ValueError(f"{what} {key!r} is listed twice")
        lowered[folded] = entry(item)
    return lowered
