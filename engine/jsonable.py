"""The ``--json`` form of a result dataclass: one conversion instead of a hand-written
``to_json`` per class (issue 16).

:func:`as_json` walks the dataclass's fields in declaration order, so the JSON keys are
the field names, in that order, and converts each value:

- an :class:`enum.Enum` -> its value;
- a :class:`datetime.datetime` -> :func:`engine.timefmt.iso_utc` with ``timespec``;
- an object with a ``to_json`` method -> what it returns; another dataclass -> its
  :func:`as_json`;
- a list or tuple -> a list of converted items; a dict -> a dict of converted values;
- ``None``, str, int, float and bool as they are.

``overrides`` replaces a field's value before conversion (a default shown in place of an
empty one, say); ``rename`` maps a field name to the key it is shown under.
:class:`JsonForm` is the base of a result dataclass whose ``to_json`` is just that (li's
and any client's alike). Pure: standard library and :mod:`engine.timefmt` only.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from datetime import datetime
from typing import Any, ClassVar

from engine.timefmt import iso_utc


def as_json(
    obj: Any,
    *,
    timespec: str = "seconds",
    rename: Mapping[str, str] | None = None,
    **overrides: Any,
) -> dict[str, Any]:
    """``obj`` (a dataclass instance) as a JSON-ready dict; see the module docstring."""
    if not dataclasses.is_dataclass(obj) or isinstance(obj, type):
        raise TypeError(f"as_json needs a dataclass instance, got {type(obj).__name__}")
    names = rename or {}
    out: dict[str, Any] = {}
    for field in dataclasses.fields(obj):
        value = overrides[field.name] if field.name in overrides else getattr(obj, field.name)
        out[names.get(field.name, field.name)] = _convert(value, timespec)
    return out


class JsonForm:
    """A dataclass whose JSON form is its fields, in declaration order."""

    # How datetimes are shown (:func:`engine.timefmt.iso_utc`'s ``timespec``).
    JSON_TIMESPEC: ClassVar[str] = "seconds"

    def to_json(self) -> dict[str, Any]:
        return as_json(self, timespec=self.JSON_TIMESPEC)


def _convert(value: Any, timespec: str) -> Any:
    if (
        value is None
        or isinstance(value, str | int | float | bool)
        and not isinstance(value, enum.Enum)
    ):
        return value
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, datetime):
        return iso_utc(value, timespec=timespec)
    to_json = getattr(value, "to_json", None)
    if callable(to_json):
        return to_json()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return as_json(value, timespec=timespec)
    if isinstance(value, list | tuple):
        return [_convert(item, timespec) for item in value]
    if isinstance(value, dict):
        return {key: _convert(item, timespec) for key, item in value.items()}
    raise TypeError(f"no JSON form for {type(value).__name__}")
