"""Which li schedules the sweep's health section covers.

``health.review_schedules`` absent (the default): every github_poll schedule whose
repository is in the repos config, found in the li database through :mod:`engine.api`
(read only, never created or migrated here). A list overrides it; ``[]`` turns the
schedule check off. A repository of the config that no github_poll schedule watches is
a health line of its own (``schedule_missing``): nothing would ever review its pull
requests.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from engine.api import UNREADABLE, LiReader, ScheduleHealthRow, open_readonly
from engine.errors import LiError
from wrapper.errors import KdevError

HEALTH_UNREADABLE = "health_unreadable"


def poll_schedules_by_repo(
    database_url: str | None, environ: Mapping[str, str]
) -> dict[str, list[str]]:
    """``{repo (lower case): [schedule names]}`` of every github_poll schedule."""
    with opened(database_url, environ) as li:
        found: dict[str, list[str]] = {}
        for schedule in li.poll_schedules():
            found.setdefault(schedule.repo.lower(), []).append(schedule.name)
        return found


def read_schedule_health(
    database_url: str | None, environ: Mapping[str, str]
) -> Callable[[Sequence[str]], list[ScheduleHealthRow]]:
    """A reader of the health rows of the named schedules from the li database
    (``database_url`` None: ``LI_DATABASE_URL``); a name with no schedule has no row."""

    def read(names: Sequence[str]) -> list[ScheduleHealthRow]:
        with opened(database_url, environ) as li:
            return [row for row in li.schedule_health() if row.name in names]

    return read


def opened(database_url: str | None, environ: Mapping[str, str]) -> LiReader:
    """The li database, read only; not there or not at the newest schema is
    ``KdevError health_unreadable`` (any other database error keeps its reason)."""
    try:
        return open_readonly(database_url, environ)
    except LiError as exc:
        if exc.reason == UNREADABLE:
            raise KdevError(exc.message, HEALTH_UNREADABLE) from None
        raise


def default_review_schedules(
    repos: Sequence[str], by_repo: Mapping[str, Sequence[str]]
) -> tuple[list[str], list[str]]:
    """``(schedule names, repos no schedule watches)`` for the configured ``repos``."""
    names: list[str] = []
    unwatched: list[str] = []
    for repo in repos:
        watching = by_repo.get(repo.lower(), [])
        if not watching:
            unwatched.append(repo)
        names += [name for name in watching if name not in names]
    return names, unwatched
