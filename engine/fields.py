"""A value carried from one type to another whose fields share their names.

A run's outcome becomes the store's finished run, a listed pull request the trigger's
pull item, a stored decision the surface's row: the same fields under the same names,
which each place wrote out one ``name=source.name`` line a field. :func:`same_fields`
says it once."""

from __future__ import annotations

from dataclasses import fields
from typing import Any, TypeVar

T = TypeVar("T")


def same_fields(cls: type[T], source: object, **given: Any) -> T:
    """A ``cls`` (a dataclass) from ``given`` and, for each of its other fields that
    ``source`` has an attribute of that name for, that attribute. A field neither names
    keeps its default (or, without one, is the TypeError of a missing argument)."""
    names = [f.name for f in fields(cls) if f.init and f.name not in given]  # type: ignore[arg-type]
    carried = {name: getattr(source, name) for name in names if hasattr(source, name)}
    return cls(**carried, **given)
