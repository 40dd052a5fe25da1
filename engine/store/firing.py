"""Claims and runs: which schedules are due, claiming one fire, a run's life to its end.

Claiming (the contract the daemon relies on): :meth:`FiringStore.claim_fire` locks the
schedule row (``FOR UPDATE SKIP LOCKED`` on PostgreSQL; SQLite serialises writers with
``BEGIN IMMEDIATE``), checks it is still due and not leased, then in the same
transaction advances ``next_fire_at``, takes the lease and inserts the ``running`` run
row. Two engines can therefore never fire one occurrence, and a crash after the commit
leaves a run row that start-up recovery resolves (see docs/engine.md).
:meth:`FiringStore.claim_due` claims a batch the same way, row by row in one transaction:
the due cron/interval rows oldest first with a LIMIT, ``FOR UPDATE SKIP LOCKED``, so
engines on PostgreSQL take disjoint batches (engine.run.dispatch).

Finishing is fenced (engine.store.recovery): only the engine that owns a ``running``
run may write its outcome.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import ColumnElement, CursorResult, Select, func, select, update
from sqlalchemy.orm import Session

from engine.errors import NotFound
from engine.health.losses import coalesced_slots
from engine.store.attempts import confirm_launch, requeue, retry_attempt
from engine.store.changes import ChangeSet, changes_since, current_version
from engine.store.core import StoreBase, compute_next_fire
from engine.store.enums import OverlapPolicy, RunReason, RunStatus, TriggerType
from engine.store.models import Schedule, ScheduleRun
from engine.store.recovery import fenced_finish_allowed, resolve_orphans
from engine.timefmt import iso_utc

TAIL_LIMIT = 4096
# A lease outlives the action's deadline by this much, so a crashed holder's lease
# expires on its own while a live holder never loses it mid-run.
LEASE_MARGIN = timedelta(minutes=2)


@dataclass(frozen=True)
class Claim:
    """A fire this process now owns: the run row exists as ``running``."""

    run_id: int
    schedule_id: int
    schedule_name: str
    command: str
    args: list[str]
    cwd: str | None
    timeout_seconds: int
    env_passthrough: list[str]
    context: dict[str, Any]
    next_fire_at: datetime | None
    retry_max_attempts: int = 1
    retry_backoff_seconds: int = 30
    trigger_type: str = ""  # the schedule's (engine.store.enums.TriggerType)

    @classmethod
    def of(cls, row: Schedule, run_id: int, context: dict[str, Any]) -> Claim:
        """The claim of ``run_id``, a fire of ``row`` with ``context``."""
        return cls(
            run_id=run_id,
            schedule_id=row.id,
            schedule_name=row.name,
            **row.command_fields(),
            context=context,
            next_fire_at=row.next_fire_at,
            retry_max_attempts=row.retry_max_attempts or 1,
            retry_backoff_seconds=row.retry_backoff_seconds or 30,
            trigger_type=row.trigger_type,
        )


@dataclass(frozen=True)
class FinishedRun:
    """What the runner reports back (mirrors engine.run.runner.RunOutcome)."""

    status: RunStatus
    reason: str | None = None
    exit_code: int | None = None
    stdout_tail: str = ""
    stderr_tail: str = ""
    finished_at: datetime | None = None


@dataclass(frozen=True)
class DueSchedule:
    """A schedule due now: its id, due time and trigger type."""

    id: int
    next_fire_at: datetime | None
    trigger_type: str


def _tail(text: str) -> str:
    encoded = text.encode("utf-8", errors="replace")
    if len(encoded) <= TAIL_LIMIT:
        return text
    return encoded[-TAIL_LIMIT:].decode("utf-8", errors="ignore")


def _stamp(moment: datetime) -> str:
    return iso_utc(moment, timespec="auto")


def runs_query(name: str | None, statuses: list[str], limit: int) -> Select[tuple[ScheduleRun]]:
    """Newest runs first; by name it is served by ``ix_schedule_runs_name_id``."""
    query = select(ScheduleRun)
    if name is not None:
        query = query.where(ScheduleRun.schedule_name == name)
    if statuses:
        query = query.where(ScheduleRun.status.in_(statuses))
    return query.order_by(ScheduleRun.id.desc()).limit(limit)


def _fire_context(
    row: Schedule, scheduled_for: datetime | None, now: datetime, manual: bool
) -> dict[str, Any]:
    """The trigger context of one fire of ``row`` (``coalesced``: slots folded into it)."""
    context: dict[str, Any] = {
        "schedule_name": row.name,
        "fired_at": _stamp(now),
        "trigger": "manual" if manual else row.trigger_type,
        "scheduled_for": _stamp(scheduled_for) if scheduled_for and not manual else None,
    }
    folded = 0 if manual else coalesced_slots(row, scheduled_for, now)
    if folded:
        context["coalesced"] = folded
    return context


def _overlap_refusal(
    row: Schedule, context: dict[str, Any], owner: str, now: datetime
) -> ScheduleRun:
    """The refused run of a ``skip`` schedule fired while its previous run holds the lease."""
    return ScheduleRun.begun(
        row.id,
        row.name,
        context,
        RunStatus.REFUSED,
        now,
        owner=owner,
        reason=RunReason.OVERLAP.value,
        stderr_tail=f"previous run still in progress (lease held by {row.lease_owner})",
    )


def _take_fire(row: Schedule, owner: str, now: datetime, manual: bool, grace: float) -> None:
    """Count the fire on ``row`` and, under ``skip``, take its lease for the run."""
    row.run_count += 1
    row.last_fire_at = now
    if not manual and row.max_runs is not None and row.run_count >= row.max_runs:
        row.next_fire_at = None
    if row.overlap == OverlapPolicy.SKIP.value:
        row.lease_owner = owner
        row.lease_until = now + timedelta(seconds=row.timeout_seconds + grace) + LEASE_MARGIN


def _running_run(row: Schedule, context: dict[str, Any], owner: str, now: datetime) -> ScheduleRun:
    return ScheduleRun.begun(row.id, row.name, context, RunStatus.RUNNING, now, owner=owner)


def _due(now: datetime) -> tuple[ColumnElement[bool], ...]:
    return (
        Schedule.enabled.is_(True),
        Schedule.next_fire_at.is_not(None),
        Schedule.next_fire_at <= now,
    )


def _claim_row(
    session: Session, row: Schedule, owner: str, now: datetime, manual: bool, grace: float
) -> Claim | ScheduleRun:
    """Claim one locked, due row: advance it, then a refused or a ``running`` run row."""
    scheduled_for = row.next_fire_at
    if not manual:
        row.next_fire_at = compute_next_fire(row, previous=scheduled_for, now=now)
    leased = row.lease_until is not None and row.lease_until > now
    context = _fire_context(row, scheduled_for, now, manual)
    if leased and row.overlap == OverlapPolicy.SKIP.value:
        refused = _overlap_refusal(row, context, owner, now)
        session.add(refused)
        row.last_fire_at = now
        session.flush()
        return refused
    _take_fire(row, owner, now, manual, grace)
    run = _running_run(row, context, owner, now)
    session.add(run)
    session.flush()
    return Claim.of(row, run.id, context)


class FiringStore(StoreBase):
    """Due schedules, claims, and the life of a run (part of engine.store.store.Store)."""

    def due_schedules(self, now: datetime | None = None) -> list[DueSchedule]:
        """Enabled schedules whose next fire is at or before ``now``, oldest first."""
        moment = now or self.clock()
        with self.transaction() as session:
            rows = session.execute(
                select(Schedule.id, Schedule.next_fire_at, Schedule.trigger_type)
                .where(
                    Schedule.enabled.is_(True),
                    Schedule.next_fire_at.is_not(None),
                    Schedule.next_fire_at <= moment,
                )
                .order_by(Schedule.next_fire_at, Schedule.id)
            )
            return [DueSchedule(id=r[0], next_fire_at=r[1], trigger_type=r[2]) for r in rows]

    def timetable(self) -> dict[int, tuple[datetime | None, str]]:
        """``{id: (next_fire_at, trigger_type)}`` of every enabled schedule (the timer's)."""
        with self.transaction() as session:
            rows = session.execute(
                select(Schedule.id, Schedule.next_fire_at, Schedule.trigger_type).where(
                    Schedule.enabled.is_(True)
                )
            )
            return {r[0]: (r[1], r[2]) for r in rows}

    def fingerprint(self) -> tuple[Any, ...]:
        """Changes whenever a schedule is added, edited, removed or fired anywhere."""
        with self.transaction() as session:
            row = session.execute(
                select(
                    func.count(Schedule.id),
                    func.max(Schedule.updated_at),
                    func.max(Schedule.last_fire_at),
                )
            ).one()
            return tuple(row)

    def timing_of(self, schedule_id: int) -> tuple[datetime | None, str] | None:
        """``(next_fire_at, trigger_type)`` of an enabled schedule; None if disabled/gone."""
        with self.transaction() as session:
            row = session.execute(
                select(Schedule.enabled, Schedule.next_fire_at, Schedule.trigger_type).where(
                    Schedule.id == schedule_id
                )
            ).one_or_none()
            if row is None or not row[0]:
                return None
            return row[1], row[2]

    def claim_fire(
        self, schedule_id: int, owner: str, *, manual: bool = False, kill_grace_seconds: float = 5.0
    ) -> Claim | ScheduleRun | None:
        """Claim the due occurrence of ``schedule_id`` for ``owner`` (see module doc).

        Returns a :class:`Claim` (run row inserted as ``running``), a refused
        :class:`ScheduleRun` (overlap with a live run under the ``skip`` policy; the
        occurrence is consumed), or None when the schedule is not due, disabled, gone
        or locked by another engine. ``manual`` fires now without touching the timetable.
        """
        with self.transaction() as session:
            now = self.clock()
            query = select(Schedule).where(Schedule.id == schedule_id)
            if not manual:
                query = query.where(*_due(now))
            row = session.scalars(query.with_for_update(skip_locked=True)).one_or_none()
            if row is None:
                return None
            return _claim_row(session, row, owner, now, manual, kill_grace_seconds)

    def claim_due(
        self, owner: str, limit: int, *, kill_grace_seconds: float = 5.0
    ) -> list[Claim | ScheduleRun]:
        """Claim up to ``limit`` due cron/interval occurrences in one transaction.

        Oldest ``next_fire_at`` first (then id), so no schedule starves. On PostgreSQL the
        rows are taken ``FOR UPDATE SKIP LOCKED``: engines calling this at once take
        disjoint batches, and a row another engine holds is passed over, not waited for.
        Each row is claimed exactly as :meth:`claim_fire` does it. github_poll schedules
        are not taken here (their poll pass has its own claim).
        """
        with self.transaction() as session:
            now = self.clock()
            query = (
                select(Schedule)
                .where(*_due(now), Schedule.trigger_type != TriggerType.GITHUB_POLL.value)
                .order_by(Schedule.next_fire_at, Schedule.id)
                .limit(limit)
                .with_for_update(skip_locked=True)
            )
            rows = list(session.scalars(query))
            return [_claim_row(session, r, owner, now, False, kill_grace_seconds) for r in rows]

    def next_due_at(self) -> datetime | None:
        """The earliest ``next_fire_at`` of an enabled cron/interval schedule (index read)."""
        with self.transaction() as session:
            return session.execute(
                select(func.min(Schedule.next_fire_at)).where(
                    Schedule.enabled.is_(True),
                    Schedule.trigger_type != TriggerType.GITHUB_POLL.value,
                )
            ).scalar_one_or_none()

    def schedule_version(self) -> int:
        """The schedule change counter (engine.store.changes): one row read."""
        with self.transaction() as session:
            return current_version(session)

    def schedule_changes(self, seen: int) -> ChangeSet:
        """The counter and the schedules changed or removed after version ``seen``."""
        with self.transaction() as session:
            return changes_since(session, seen)

    def list_runs(
        self, name: str | None = None, statuses: Iterable[str] = (), limit: int = 50
    ) -> list[ScheduleRun]:
        """Newest runs first, optionally for one schedule name and some statuses."""
        query = runs_query(name, list(statuses), limit)
        with self.transaction() as session:
            return list(session.scalars(query))

    def get_run(self, run_id: int) -> ScheduleRun:
        """One run by id; ``run_not_found`` otherwise."""
        with self.transaction() as session:
            run = session.get(ScheduleRun, run_id)
            if run is None:
                raise NotFound(f"no run with id {run_id}", "run_not_found")
            return run

    def set_run_argv(self, run_id: int, argv: list[str], *, owner: str | None = None) -> bool:
        """Record the argv a run is about to execute; fenced like :meth:`finish_run`:
        False (do not launch) when the run is no longer ``running`` under ``owner``."""
        query = update(ScheduleRun).where(
            ScheduleRun.id == run_id, ScheduleRun.status == RunStatus.RUNNING.value
        )
        if owner is not None:
            query = query.where(ScheduleRun.engine_id == owner)
        with self.transaction() as session:
            return cast(CursorResult[Any], session.execute(query.values(argv=argv))).rowcount == 1

    def mark_started(self, run_id: int, pid: int) -> None:
        """Record the pid of the launched process."""
        with self.transaction() as session:
            session.execute(update(ScheduleRun).where(ScheduleRun.id == run_id).values(pid=pid))

    def finish_run(self, run_id: int, result: FinishedRun, *, owner: str | None = None) -> bool:
        """Store the outcome of a run and release the schedule's lease held by ``owner``.

        Fenced: False (nothing written) when the run is no longer ``running`` under
        ``owner`` - another engine recovered it (see engine.store.recovery). A cancelled
        github_poll run is queued for another attempt (engine.store.attempts) in the same
        transaction.
        """

        def work(session: Session) -> bool:
            run = session.get(ScheduleRun, run_id, with_for_update=True)
            if run is None:
                return False
            if not fenced_finish_allowed(run, owner):
                return False
            run.status = result.status.value
            run.reason = result.reason
            run.exit_code = result.exit_code
            run.stdout_tail = _tail(result.stdout_tail)
            run.stderr_tail = _tail(result.stderr_tail)
            run.finished_at = result.finished_at or self.clock()
            if run.schedule_id is not None and owner is not None:
                session.execute(
                    update(Schedule)
                    .where(Schedule.id == run.schedule_id, Schedule.lease_owner == owner)
                    .values(lease_owner=None, lease_until=None)
                )
            if result.status is RunStatus.CANCELLED:
                requeue(session, run, run.finished_at)
            confirm_launch(session, run)
            return True

        return self.durable(lambda: self.in_transaction(work))

    def start_attempt(self, run_id: int, owner: str) -> int | None:
        """A new ``running`` attempt of the fire of failed run ``run_id`` (its retry
        policy said so); the event's claims move to it. None when the run is not a
        failed run of ``owner`` any more (fenced)."""
        return self.durable(
            lambda: self.in_transaction(
                lambda session: retry_attempt(session, run_id, owner, self.clock())
            )
        )

    def recover_orphans(self, live_engines: set[str]) -> list[ScheduleRun]:
        """Resolve ``running`` runs whose engine is gone (crash, kill -9, power loss).

        A run whose process was never launched (no pid) is marked ``cancelled`` with
        reason ``abandoned_before_launch``; one with a pid ``cancelled`` / ``engine_lost``.
        Leases of gone engines are released. A github_poll event is queued for another
        attempt under the delivery contract (engine.store.attempts); cron and interval runs
        are not re-fired.
        """
        return self.durable(
            lambda: self.in_transaction(
                lambda session: resolve_orphans(session, self.clock(), live_engines)
            )
        )
