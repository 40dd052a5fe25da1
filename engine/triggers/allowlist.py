"""Parse a trigger allowlist: numeric GitHub user ids, never logins.

Logins can be renamed and a freed login registered by someone else, so only the
numeric id identifies a person. Every entry must be a real positive integer: a login,
``0``, a negative number, a boolean, a float, or any string - even a numeric one such
as ``"5"``, and ``"--5"`` - is a config error (``allowlist_config_error``) at the time
the configuration is added or applied, never a silent no-match at trigger time.
"""

from __future__ import annotations

from engine.errors import InvalidInput

ALLOWLIST_CONFIG_ERROR = "allowlist_config_error"


def parse_allowlist(values: object) -> frozenset[int]:
    """The set of user ids in ``values`` (a list, tuple or set of positive ints).

    Raises :class:`InvalidInput` (``allowlist_config_error``) with a one-line message
    naming the first bad entry; an empty list is valid and allows no one.
    """
    if not isinstance(values, list | tuple | set | frozenset):
        raise InvalidInput(
            f"the allowlist must be a list of numeric GitHub user ids, not {values!r}",
            ALLOWLIST_CONFIG_ERROR,
        )
    ids: set[int] = set()
    for entry in values:
        # bool is an int in Python; `true` is never a user id.
        if isinstance(entry, bool) or not isinstance(entry, int) or entry <= 0:
            raise InvalidInput(
                f"allowlist entry {entry!r} is not a numeric GitHub user id "
                "(a positive integer; logins are not accepted)",
                ALLOWLIST_CONFIG_ERROR,
            )
        ids.add(entry)
    return frozenset(ids)


def allowlist_ids(values: object) -> list[int]:
    """:func:`parse_allowlist` as a config keeps it: the ids, sorted."""
    return sorted(parse_allowlist(values))
