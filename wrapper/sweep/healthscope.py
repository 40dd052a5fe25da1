"""Which li schedules the sweep's health section covers.

``health.review_schedules`` absent (the default): every github_poll schedule whose
repository is in the repos config, found in the li database (read only, never created
or migrated here). A list overrides it; ``[]`` turns the schedule check off. A
repository of the config that no github_poll schedule watches is a health line of its
own (``schedule_missing``): nothing would ever review its pull requests.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from sqlalchemy.engine import make_url

from wrapper.errors import KdevError


def poll_schedules_by_repo(
    database_url: str | None, environ: Mapping[str, str]
) -> dict[str, list[str]]:
    """``{repo (lower case): [schedule names]}`` of every github_poll schedule."""
    from engine.config import Settings
    from engine.store import db as dbmod
    from engine.store.pollstore import PollStore
    from engine.store.store import Store

    url = database_url or Settings.from_env(dict(environ)).database_url
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database:
        if not Path(parsed.database).expanduser().exists():
            raise KdevError(f"li database {parsed.database} does not exist", "health_unreadable")
    engine = dbmod.make_engine(url)
    try:
        if dbmod.current_revision(engine) != dbmod.head_revision(engine):
            raise KdevError("li database is not at the newest schema", "health_unreadable")
        found: dict[str, list[str]] = {}
        for _, name, config in PollStore(Store(engine)).github_schedules():
            found.setdefault(str(config.get("repo", "")).lower(), []).append(name)
        return found
    finally:
        engine.dispose()


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
