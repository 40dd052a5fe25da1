"""The ``to_json`` of kdev's result dataclasses, named once (issue 26).

:func:`engine.jsonable.as_json` converts a dataclass field by field, in declaration
order. Two shapes kept coming back around it, each written out by hand per class:

- :class:`JsonForm`, a base whose ``to_json`` is ``as_json`` of the instance (with the
  class's ``JSON_TIMESPEC``), for a class whose JSON keys are its fields, in order
  (:mod:`engine.jsonable`'s, re-exported here: li's result dataclasses use it too);
- :class:`PrHead`, the JsonForm of a result about one head of one PR: its first keys
  are ``repo``, ``pr`` and ``head_sha`` (a ledger row, a sweep's rows, a CI report, a
  PR's status; and the same three first fields of a review request and of the owner of
  a run's legs);
- :func:`json_in_order`, for a class whose JSON shows its fields (some renamed, or only
  some of them) in another order than they are declared in: the keys are named once,
  in the order they are printed, and a key that is no field is a KeyError, never a
  silent gap.

Pure: :mod:`engine.jsonable` only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.jsonable import JsonForm as JsonForm
from engine.jsonable import as_json


@dataclass(frozen=True)
class PrHead(JsonForm):
    """What a result is about: the head ``head_sha`` of PR ``pr`` of ``repo``."""

    repo: str
    pr: int
    head_sha: str


def json_in_order(obj: Any, keys: str, **options: Any) -> dict[str, Any]:
    """``as_json(obj, **options)`` with just ``keys`` (names split on white space, after
    ``rename``), in that order."""
    converted = as_json(obj, **options)
    return {key: converted[key] for key in keys.split()}
