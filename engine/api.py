"""The public, typed surface another program may use to read li's database.

Everything here is read only: the database is never created or migrated, and a
database that does not exist or is not at the newest schema is refused with
``DatabaseError li_unreadable`` before anything is read. Results are frozen dataclasses,
never rows of li's tables or untyped dicts, so li may change its tables freely::

    with open_readonly(database_url, environ) as li:
        rows = li.schedule_health()          # li schedule health --json, typed
        history = li.pr_history("o/r", 7)    # schedules, decisions and runs of one PR

``import engine.api`` is cheap: SQLAlchemy, alembic and the store are imported only when
a database is opened (a caller's fast path never pays for them, docs/decisions.md D35).

It also lends callers the YAML/pydantic diagnostics li's schedule files use
(:func:`yaml_line_of`, :func:`describe_validation_error`, :func:`dotted`), so that
another program's config check reports problems the way ``li schedule apply`` does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.apitypes import Decision as Decision  # re-exported: part of the surface
from engine.apitypes import HealthCause as HealthCause  # re-exported, as Decision
from engine.closable import Closable
from engine.errors import DatabaseError, InvalidInput
from engine.fields import same_fields
from engine.jsonable import JsonForm

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails
    from sqlalchemy.engine import Engine
    from yaml.nodes import Node

    from engine.health.status import ScheduleHealth
    from engine.store.models import ScheduleRun
    from engine.store.store import Store

UNREADABLE = "li_unreadable"


@dataclass(frozen=True)
class ScheduleHealthRow:
    """One schedule's health, as ``li schedule health --json`` shows it (the parts a
    reader acts on). ``state`` is a ``HealthState`` value; ``paging`` is li's own
    judgement that the state pages (blind, stale, overdue: docs/health.md)."""

    name: str
    state: str
    paging: bool
    causes: tuple[HealthCause, ...]
    last_poll_at: datetime | None
    last_healthy_poll_at: datetime | None
    last_error_reason: str | None


@dataclass(frozen=True)
class PollSchedule:
    """A github_poll schedule: its name, the repository it watches, and the handle its
    mention trigger answers to (None: no mention trigger); as read by
    :meth:`LiReader.pr_history` also its event kind, when it was created and its cursor
    (None: unset, as with ``backfill`` before the first event)."""

    name: str
    repo: str
    mention_handle: str | None
    event: str = "pr_updated"
    created_at: datetime | None = None
    cursor_at: datetime | None = None


@dataclass(frozen=True)
class PrRun(JsonForm):
    """One run fired for a pull request (a subset of ``li schedule runs --pr N --json``)."""

    id: int
    schedule: str
    status: str
    reason: str | None
    exit_code: int | None
    started_at: datetime | None
    finished_at: datetime | None
    pr_number: int | None
    attempt: int = 1
    fire_id: int | None = None  # the fire's first run (None on that run itself)


@dataclass(frozen=True)
class QueuedAttempt(JsonForm):
    """An event of the pull request waiting for its next attempt: its run was lost or
    handed back, and the schedule's next pass fires it again, not before ``not_before``
    when it was lost with its engine repeatedly (docs/decisions.md D58)."""

    schedule: str
    fire_id: int
    attempt: int  # the attempt that comes next
    head_sha: str | None
    not_before: datetime | None


@dataclass(frozen=True)
class PrHistory:
    """Everything li knows of one pull request: the github_poll schedules watching its
    repository, their decisions for it and the runs they fired for it (oldest decision
    first; runs newest first, per schedule), and its events queued for another attempt."""

    schedules: tuple[PollSchedule, ...]
    decisions: tuple[Decision, ...]
    runs: tuple[PrRun, ...]
    queued: tuple[QueuedAttempt, ...] = ()


class LiReader(Closable):
    """A read-only view of one li database; get one from :func:`open_readonly`."""

    def __init__(self, engine: Engine, store: Store) -> None:
        self._engine = engine
        self._store = store

    def close(self) -> None:
        self._engine.dispose()

    def poll_schedules(self) -> list[PollSchedule]:
        """Every github_poll schedule, in the store's order."""
        from engine.store.pollstore import PollStore

        return [
            _poll_schedule(name, config)
            for _, name, config in PollStore(self._store).github_schedules()
        ]

    def schedule_health(
        self, name: str | None = None, *, now: datetime | None = None
    ) -> list[ScheduleHealthRow]:
        """Health of the schedule ``name`` (``NotFound`` when there is none) or of all,
        ordered by name, as of ``now`` (default: the current time)."""
        from engine.health.status import schedule_health

        return [_health_row(item) for item in schedule_health(self._store, name, now)]

    def pr_history(self, repo: str, pr: int, *, limit: int = 200) -> PrHistory:
        """The schedules watching ``repo`` (any case) and their decisions and runs for
        ``pr``, at most ``limit`` of each per schedule."""
        from engine.poll.decisions import list_decisions, list_pr_runs
        from engine.store.pollstore import PollStore

        polls = PollStore(self._store)
        watching: list[PollSchedule] = []
        decisions: list[Decision] = []
        runs: list[PrRun] = []
        queued: list[QueuedAttempt] = []
        for ident, name, config in polls.github_schedules():
            schedule = _poll_schedule(name, config)
            if schedule.repo.lower() != repo.lower():
                continue
            state = polls.get_state(ident)
            created = self._store.get_schedule(name).created_at
            watching.append(replace(schedule, created_at=created, cursor_at=state.cursor_at))
            decisions += list_decisions(self._store, name, pr=pr, limit=limit)
            runs += [_run(run) for run in list_pr_runs(self._store, name, pr, limit=limit)]
            queued += _queued(name, state.retry_events or [], pr)
        return PrHistory(tuple(watching), tuple(decisions), tuple(runs), tuple(queued))


def open_readonly(
    database_url: str | None = None, environ: Mapping[str, str] | None = None
) -> LiReader:
    """Open li's database read only: ``database_url``, else ``LI_DATABASE_URL`` of
    ``environ`` (else the default). ``DatabaseError li_unreadable`` when a SQLite file
    does not exist (nothing is created) or the schema is not the newest; other database
    errors keep their own reason (``invalid_database_url``, ``database_unreachable``)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    from engine.config import Settings
    from engine.store import db as dbmod
    from engine.store.store import Store

    url = database_url or Settings.from_env(dict(environ or {})).database_url
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):  # ValueError: a port that is not a number
        raise InvalidInput(
            f"LI_DATABASE_URL is not a database URL: {url!r}", "invalid_database_url"
        ) from None
    if parsed.get_backend_name() == "sqlite" and parsed.database:
        if not Path(parsed.database).expanduser().exists():
            raise DatabaseError(f"li database {parsed.database} does not exist", UNREADABLE)
    engine = dbmod.make_engine(url)
    try:
        if dbmod.current_revision(engine) != dbmod.head_revision(engine):
            raise DatabaseError("li database is not at the newest schema", UNREADABLE)
    except BaseException:
        engine.dispose()
        raise
    return LiReader(engine, Store(engine))


def _poll_schedule(name: str, config: Mapping[str, Any]) -> PollSchedule:
    mentions = config.get("mentions")
    handle = mentions.get("handle") if isinstance(mentions, Mapping) else None
    event = str(config.get("event") or "pr_updated")
    return PollSchedule(name, str(config.get("repo", "")), str(handle) if handle else None, event)


def _health_row(item: ScheduleHealth) -> ScheduleHealthRow:
    from engine.health.assess import PAGING_STATES

    facts = item.facts
    return ScheduleHealthRow(
        name=item.name,
        state=item.health.state.value,
        paging=item.health.state in PAGING_STATES,
        causes=tuple(item.health.causes),
        last_poll_at=facts.last_poll_at,
        last_healthy_poll_at=facts.last_healthy_poll_at,
        last_error_reason=facts.last_error_reason,
    )


def _queued(schedule: str, entries: Sequence[Any], pr: int) -> list[QueuedAttempt]:
    """The schedule's retry queue entries (engine.store.attempts) of pull request ``pr``."""
    from datetime import UTC

    found = []
    for entry in entries:
        context = entry.get("context") if isinstance(entry, Mapping) else None
        if not isinstance(context, Mapping) or context.get("pr_number") != pr:
            continue
        not_before = entry.get("not_before")
        head = context.get("head_sha")
        found.append(
            QueuedAttempt(
                schedule=schedule,
                fire_id=int(entry["fire_id"]),
                attempt=int(entry.get("attempt", 1)) + 1,
                head_sha=str(head) if head else None,
                not_before=(datetime.fromtimestamp(float(not_before), UTC) if not_before else None),
            )
        )
    return found


def _run(run: ScheduleRun) -> PrRun:
    return same_fields(
        PrRun, run, schedule=run.schedule_name, status=str(run.status), attempt=run.attempt or 1
    )


# == config diagnostics shared with li's schedule files ====================================


def yaml_line_of(root: Node, loc: Sequence[int | str]) -> int:
    """The 1-based line of ``loc`` in a composed YAML document (as schedule files map
    their errors)."""
    from engine.schedules.schedulefile import yaml_line_of as line_of

    return line_of(root, loc)


def describe_validation_error(error: ErrorDetails) -> str:
    """One lower-case line for one pydantic error, without its location."""
    from engine.poll.config import describe_validation_error as explain_error

    return explain_error(error)


def dotted(loc: tuple[int | str, ...]) -> str:
    """``("filters", "draft")`` -> ``filters.draft``; indices as ``[0]``."""
    from engine.poll.config import dotted as join

    return join(loc)
