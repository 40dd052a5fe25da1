"""Every SQL statement about schedules, runs, claims, leases and engine instances.

The store is the one place that talks to the database. Each public method is one
transaction. Timestamps come from the injected ``clock`` so tests can move time.

Claiming (the contract the daemon relies on): :meth:`Store.claim_fire` locks the
schedule row (``FOR UPDATE SKIP LOCKED`` on PostgreSQL; SQLite serialises writers with
``BEGIN IMMEDIATE``), checks it is still due and not leased, then in the same
transaction advances ``next_fire_at``, takes the lease and inserts the ``running`` run
row. Two engines can therefore never fire one occurrence, and a crash after the commit
leaves a run row that start-up recovery resolves (see docs/engine.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar, cast

from sqlalchemy import CursorResult, Engine, Select, delete, func, select, update
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from engine.errors import Conflict, LiError, NotFound
from engine.health.losses import coalesced_slots
from engine.schedules.schedulefile import ExistingSchedule, PlanAction, PlanItem
from engine.schedules.spec import ScheduleSpec, next_fire_time
from engine.store.attempts import confirm_launch, requeue, retry_attempt
from engine.store.db import translate_db_error
from engine.store.models import (
    EngineInstance,
    OverlapPolicy,
    PollClaim,
    PollState,
    RunStatus,
    Schedule,
    ScheduleRun,
    TriggerType,
    utcnow,
)
from engine.store.recovery import fenced_finish_allowed, live_engine_ids, resolve_orphans
from engine.store.retrying import DB_RETRY_SECONDS, durable_write

T = TypeVar("T")
TAIL_LIMIT = 4096
MAX_KEPT_ERRORS = 10
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

    @classmethod
    def of(cls, row: Schedule, run_id: int, context: dict[str, Any]) -> Claim:
        """The claim of ``run_id``, a fire of ``row`` with ``context``."""
        return cls(
            run_id=run_id,
            schedule_id=row.id,
            schedule_name=row.name,
            command=row.command,
            args=list(row.args or []),
            cwd=row.cwd,
            timeout_seconds=row.timeout_seconds,
            env_passthrough=list(row.env_passthrough or []),
            context=context,
            next_fire_at=row.next_fire_at,
            retry_max_attempts=row.retry_max_attempts or 1,
            retry_backoff_seconds=row.retry_backoff_seconds or 30,
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


def spec_of(row: Schedule) -> ScheduleSpec:
    """The declarative part of a schedule row."""
    return ScheduleSpec(
        name=row.name,
        enabled=row.enabled,
        trigger_type=TriggerType(row.trigger_type),
        cron=row.cron_expr,
        timezone=row.timezone,
        interval_seconds=row.interval_seconds,
        trigger_config=dict(row.trigger_config or {}),
        command=row.command,
        args=list(row.args or []),
        cwd=row.cwd,
        timeout_seconds=row.timeout_seconds,
        max_runs=row.max_runs,
        env_passthrough=list(row.env_passthrough or []),
        overlap=OverlapPolicy(row.overlap),
        retry_max_attempts=row.retry_max_attempts,
        retry_backoff_seconds=row.retry_backoff_seconds,
    )


def _poll_interval(spec_or_row: ScheduleSpec | Schedule) -> int | None:
    if isinstance(spec_or_row, Schedule):
        trigger_type, config = spec_or_row.trigger_type, spec_or_row.trigger_config or {}
        interval = spec_or_row.interval_seconds
    else:
        trigger_type, config = spec_or_row.trigger_type, spec_or_row.trigger_config
        interval = spec_or_row.interval_seconds
    if trigger_type == TriggerType.GITHUB_POLL:
        value = config.get("poll_interval_seconds", 120)
        return int(value) if isinstance(value, int) else 120
    return interval


def compute_next_fire(
    row: Schedule, *, previous: datetime | None, now: datetime
) -> datetime | None:
    """Next due time for ``row`` after ``now``; None once ``max_runs`` is reached."""
    if row.max_runs is not None and row.run_count >= row.max_runs:
        return None
    return next_fire_time(
        row.trigger_type,
        cron=row.cron_expr,
        timezone=row.timezone,
        interval_seconds=_poll_interval(row),
        previous=previous,
        now=now,
    )


def seed_poll_state(session: Session, row: Schedule, now: datetime) -> None:
    """Create the poll state of a new github_poll schedule (after ``row`` is flushed).

    The cursor starts at ``now`` so the open backlog is not fired, unless the schedule
    asks for ``backfill`` (then every open pull request is an event).
    """
    if row.trigger_type != TriggerType.GITHUB_POLL:
        return
    backfill = bool((row.trigger_config or {}).get("backfill"))
    # GitHub stamps to the second: a cursor with microseconds would pass over a pull
    # request updated earlier in the same second.
    session.add(
        PollState(
            schedule_id=row.id,
            cursor_at=None if backfill else now.replace(microsecond=0),
            held_batch=[],
            refusals={},
            updated_at=now,
        )
    )


def reset_poll_state(session: Session, row: Schedule, now: datetime) -> None:
    """Start a github_poll schedule's memory afresh (its repository or mode changed, or it
    just became a github_poll schedule): new cursor as at add time, no held batch, no
    claims of the old stream."""
    session.execute(delete(PollClaim).where(PollClaim.schedule_id == row.id))
    session.execute(delete(PollState).where(PollState.schedule_id == row.id))
    session.flush()
    seed_poll_state(session, row, now)


def _poll_stream(config: dict[str, Any] | None) -> tuple[Any, ...]:
    data = config or {}
    return (data.get("repo"), data.get("event"))


def _tail(text: str) -> str:
    encoded = text.encode("utf-8", errors="replace")
    if len(encoded) <= TAIL_LIMIT:
        return text
    return encoded[-TAIL_LIMIT:].decode("utf-8", errors="ignore")


def runs_query(name: str | None, statuses: list[str], limit: int) -> Select[tuple[ScheduleRun]]:
    """Newest runs first; by name it is served by ``ix_schedule_runs_name_id``."""
    query = select(ScheduleRun)
    if name is not None:
        query = query.where(ScheduleRun.schedule_name == name)
    if statuses:
        query = query.where(ScheduleRun.status.in_(statuses))
    return query.order_by(ScheduleRun.id.desc()).limit(limit)


class Store:
    """Schedules, runs and engine instances in one SQL database."""

    def __init__(
        self,
        engine: Engine,
        clock: Callable[[], datetime] = utcnow,
        *,
        write_retry_seconds: float = DB_RETRY_SECONDS,
    ) -> None:
        self.engine = engine
        self.clock = clock
        # How long durable writes (engine.store.retrying) retry across a database outage.
        self.write_retry_seconds = write_retry_seconds
        self._sessions = sessionmaker(engine, expire_on_commit=False)

    # -- plumbing -------------------------------------------------------------------

    def _session(self) -> Session:
        return self._sessions()

    def _run(self, work: Callable[[Session], Any]) -> Any:
        try:
            with self._session() as session, session.begin():
                return work(session)
        except LiError:
            raise
        except IntegrityError as exc:
            raise Conflict(
                f"conflicting change: {str(exc.orig).splitlines()[0]}", "conflict"
            ) from None
        except SQLAlchemyError as exc:
            raise translate_db_error(exc, self.engine) from None

    def durable(self, work: Callable[[], T]) -> T:
        """``work()`` retried across a short database outage (engine.store.retrying)."""
        return durable_write(work, within=self.write_retry_seconds)

    @staticmethod
    def _by_name(session: Session, name: str, *, lock: bool = False) -> Schedule:
        query = select(Schedule).where(Schedule.name == name)
        if lock:
            query = query.with_for_update()
        row = session.scalars(query).one_or_none()
        if row is None:
            raise NotFound(f"no schedule named {name!r}", "schedule_not_found")
        return row

    # -- schedules ------------------------------------------------------------------

    def add_schedule(
        self,
        spec: ScheduleSpec,
        *,
        managed_by: str | None = None,
        first_fire_at: datetime | None = None,
    ) -> Schedule:
        """Insert a new schedule (spec already checked); ``schedule_exists`` if taken."""

        def work(session: Session) -> Schedule:
            exists = session.scalar(select(Schedule.id).where(Schedule.name == spec.name))
            if exists is not None:
                raise Conflict(f"a schedule named {spec.name!r} already exists", "schedule_exists")
            row = self._new_row(spec, managed_by, first_fire_at)
            session.add(row)
            session.flush()
            seed_poll_state(session, row, row.created_at)
            return row

        result: Schedule = self._run(work)
        return result

    def _new_row(
        self, spec: ScheduleSpec, managed_by: str | None, first_fire_at: datetime | None = None
    ) -> Schedule:
        now = self.clock()
        row = Schedule(name=spec.name, created_at=now, run_count=0)
        self._assign(row, spec, managed_by, now)
        row.next_fire_at = first_fire_at or compute_next_fire(row, previous=None, now=now)
        return row

    def _assign(
        self, row: Schedule, spec: ScheduleSpec, managed_by: str | None, now: datetime
    ) -> None:
        row.enabled = spec.enabled
        row.trigger_type = spec.trigger_type.value
        row.cron_expr = spec.cron
        row.timezone = spec.timezone
        row.interval_seconds = spec.interval_seconds
        row.trigger_config = dict(spec.trigger_config)
        row.command = spec.command
        row.args = list(spec.args)
        row.cwd = spec.cwd
        row.timeout_seconds = spec.timeout_seconds
        row.max_runs = spec.max_runs
        row.env_passthrough = list(spec.env_passthrough)
        row.overlap = spec.overlap.value
        row.retry_max_attempts = spec.retry_max_attempts
        row.retry_backoff_seconds = spec.retry_backoff_seconds
        row.managed_by = managed_by
        row.updated_at = now

    def get_schedule(self, name: str) -> Schedule:
        """The schedule row named ``name``; ``schedule_not_found`` otherwise."""
        result: Schedule = self._run(lambda s: self._by_name(s, name))
        return result

    def list_schedules(self) -> list[Schedule]:
        """All schedules ordered by name."""
        result: list[Schedule] = self._run(
            lambda s: list(s.scalars(select(Schedule).order_by(Schedule.name)))
        )
        return result

    def set_enabled(self, name: str, enabled: bool) -> Schedule:
        """Pause or resume; resuming recomputes the next fire from now."""

        def work(session: Session) -> Schedule:
            row = self._by_name(session, name, lock=True)
            now = self.clock()
            row.enabled = enabled
            row.updated_at = now
            if enabled and (row.next_fire_at is None or row.next_fire_at < now):
                row.next_fire_at = compute_next_fire(row, previous=None, now=now)
            return row

        result: Schedule = self._run(work)
        return result

    def remove_schedule(self, name: str) -> None:
        """Delete a schedule; its runs stay (schedule_id becomes NULL, the name is kept)."""

        def work(session: Session) -> None:
            row = self._by_name(session, name, lock=True)
            session.execute(
                update(ScheduleRun)
                .where(ScheduleRun.schedule_id == row.id)
                .values(schedule_id=None)
            )
            session.delete(row)

        self._run(work)

    def request_fire(self, name: str) -> Schedule:
        """Make ``name`` due now; a running engine fires it at its next sync."""

        def work(session: Session) -> Schedule:
            row = self._by_name(session, name, lock=True)
            now = self.clock()
            row.next_fire_at = now
            row.updated_at = now
            return row

        result: Schedule = self._run(work)
        return result

    def existing_for_plan(self) -> list[ExistingSchedule]:
        """Every schedule as ``(spec, managed_by)`` for ScheduleSet planning."""
        return [
            ExistingSchedule(spec=spec_of(row), managed_by=row.managed_by)
            for row in self.list_schedules()
        ]

    def apply_plan(self, items: Sequence[PlanItem], owner: str) -> None:
        """Apply CREATE/UPDATE/REMOVE items in one transaction (all or nothing)."""

        def work(session: Session) -> None:
            now = self.clock()
            for item in items:
                if item.action is PlanAction.CREATE:
                    assert item.spec is not None
                    row = self._new_row(item.spec, owner)
                    session.add(row)
                    session.flush()
                    seed_poll_state(session, row, now)
                elif item.action is PlanAction.UPDATE:
                    assert item.spec is not None
                    row = self._by_name(session, item.name, lock=True)
                    stream_before = (row.trigger_type, _poll_stream(row.trigger_config))
                    timing_changed = any(
                        field in item.changes
                        for field in (
                            "trigger_type",
                            "cron",
                            "timezone",
                            "interval_seconds",
                            "trigger_config",
                            "enabled",
                            "max_runs",
                        )
                    )
                    self._assign(row, item.spec, owner, now)
                    if timing_changed:
                        row.next_fire_at = compute_next_fire(row, previous=None, now=now)
                    stream_after = (row.trigger_type, _poll_stream(row.trigger_config))
                    if (
                        row.trigger_type == TriggerType.GITHUB_POLL
                        and stream_after != stream_before
                    ):
                        reset_poll_state(session, row, now)
                elif item.action is PlanAction.REMOVE:
                    row = self._by_name(session, item.name, lock=True)
                    session.execute(
                        update(ScheduleRun)
                        .where(ScheduleRun.schedule_id == row.id)
                        .values(schedule_id=None)
                    )
                    session.delete(row)
                session.flush()

        self._run(work)

    # -- runs -----------------------------------------------------------------------

    def list_runs(
        self, name: str | None = None, statuses: Iterable[str] = (), limit: int = 50
    ) -> list[ScheduleRun]:
        """Newest runs first, optionally for one schedule name and some statuses."""
        wanted = list(statuses)

        def work(session: Session) -> list[ScheduleRun]:
            return list(session.scalars(runs_query(name, wanted, limit)))

        result: list[ScheduleRun] = self._run(work)
        return result

    def get_run(self, run_id: int) -> ScheduleRun:
        """One run by id; ``run_not_found`` otherwise."""

        def work(session: Session) -> ScheduleRun:
            run = session.get(ScheduleRun, run_id)
            if run is None:
                raise NotFound(f"no run with id {run_id}", "run_not_found")
            return run

        result: ScheduleRun = self._run(work)
        return result

    def record_run(
        self,
        schedule: Schedule,
        status: RunStatus,
        reason: str | None,
        context: dict[str, Any],
        engine_id: str | None = None,
    ) -> ScheduleRun:
        """Insert a finished run without launching anything (a refusal, a cursor note)."""

        def work(session: Session) -> ScheduleRun:
            now = self.clock()
            run = ScheduleRun(
                schedule_id=schedule.id,
                schedule_name=schedule.name,
                trigger_context=context,
                status=status.value,
                reason=reason,
                engine_id=engine_id,
                started_at=now,
                finished_at=now,
                stdout_tail="",
                stderr_tail="",
            )
            session.add(run)
            session.flush()
            return run

        result: ScheduleRun = self._run(work)
        return result

    # -- firing ---------------------------------------------------------------------

    def due_schedules(self, now: datetime | None = None) -> list[DueSchedule]:
        """Enabled schedules whose next fire is at or before ``now``, oldest first."""
        moment = now or self.clock()

        def work(session: Session) -> list[DueSchedule]:
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

        result: list[DueSchedule] = self._run(work)
        return result

    def timetable(self) -> dict[int, tuple[datetime | None, str]]:
        """``{id: (next_fire_at, trigger_type)}`` of every enabled schedule (the timer's)."""

        def work(session: Session) -> dict[int, tuple[datetime | None, str]]:
            rows = session.execute(
                select(Schedule.id, Schedule.next_fire_at, Schedule.trigger_type).where(
                    Schedule.enabled.is_(True)
                )
            )
            return {r[0]: (r[1], r[2]) for r in rows}

        result: dict[int, tuple[datetime | None, str]] = self._run(work)
        return result

    def fingerprint(self) -> tuple[Any, ...]:
        """Changes whenever a schedule is added, edited, removed or fired anywhere."""

        def work(session: Session) -> tuple[Any, ...]:
            row = session.execute(
                select(
                    func.count(Schedule.id),
                    func.max(Schedule.updated_at),
                    func.max(Schedule.last_fire_at),
                )
            ).one()
            return tuple(row)

        result: tuple[Any, ...] = self._run(work)
        return result

    def claim_fire(
        self, schedule_id: int, owner: str, *, manual: bool = False, kill_grace_seconds: float = 5.0
    ) -> Claim | ScheduleRun | None:
        """Claim the due occurrence of ``schedule_id`` for ``owner`` (see module doc).

        Returns a :class:`Claim` (run row inserted as ``running``), a refused
        :class:`ScheduleRun` (overlap with a live run under the ``skip`` policy; the
        occurrence is consumed), or None when the schedule is not due, disabled, gone
        or locked by another engine. ``manual`` fires now without touching the timetable.
        """

        def work(session: Session) -> Claim | ScheduleRun | None:
            now = self.clock()
            query = select(Schedule).where(Schedule.id == schedule_id)
            if not manual:
                query = query.where(
                    Schedule.enabled.is_(True),
                    Schedule.next_fire_at.is_not(None),
                    Schedule.next_fire_at <= now,
                )
            row = session.scalars(query.with_for_update(skip_locked=True)).one_or_none()
            if row is None:
                return None
            scheduled_for = row.next_fire_at
            if not manual:
                row.next_fire_at = compute_next_fire(row, previous=scheduled_for, now=now)
            leased = row.lease_until is not None and row.lease_until > now
            context: dict[str, Any] = {
                "schedule_name": row.name,
                "fired_at": now.isoformat().replace("+00:00", "Z"),
                "trigger": "manual" if manual else row.trigger_type,
                "scheduled_for": (
                    scheduled_for.isoformat().replace("+00:00", "Z")
                    if scheduled_for and not manual
                    else None
                ),
            }
            folded = 0 if manual else coalesced_slots(row, scheduled_for, now)
            if folded:
                context["coalesced"] = folded
            if leased and row.overlap == OverlapPolicy.SKIP.value:
                run = ScheduleRun(
                    schedule_id=row.id,
                    schedule_name=row.name,
                    trigger_context=context,
                    status=RunStatus.REFUSED.value,
                    reason="overlap",
                    started_at=now,
                    finished_at=now,
                    engine_id=owner,
                    stdout_tail="",
                    stderr_tail=f"previous run still in progress (lease held by {row.lease_owner})",
                )
                session.add(run)
                row.last_fire_at = now
                session.flush()
                return run
            row.run_count += 1
            row.last_fire_at = now
            if not manual and row.max_runs is not None and row.run_count >= row.max_runs:
                row.next_fire_at = None
            if row.overlap == OverlapPolicy.SKIP.value:
                row.lease_owner = owner
                row.lease_until = (
                    now + timedelta(seconds=row.timeout_seconds + kill_grace_seconds) + LEASE_MARGIN
                )
            run = ScheduleRun(
                schedule_id=row.id,
                schedule_name=row.name,
                trigger_context=context,
                status=RunStatus.RUNNING.value,
                engine_id=owner,
                started_at=now,
                stdout_tail="",
                stderr_tail="",
            )
            session.add(run)
            session.flush()
            return Claim.of(row, run.id, context)

        result: Claim | ScheduleRun | None = self._run(work)
        return result

    def timing_of(self, schedule_id: int) -> tuple[datetime | None, str] | None:
        """``(next_fire_at, trigger_type)`` of an enabled schedule; None if disabled/gone."""

        def work(session: Session) -> tuple[datetime | None, str] | None:
            row = session.execute(
                select(Schedule.enabled, Schedule.next_fire_at, Schedule.trigger_type).where(
                    Schedule.id == schedule_id
                )
            ).one_or_none()
            if row is None or not row[0]:
                return None
            return row[1], row[2]

        result: tuple[datetime | None, str] | None = self._run(work)
        return result

    def set_run_argv(self, run_id: int, argv: list[str], *, owner: str | None = None) -> bool:
        """Record the argv a run is about to execute; fenced like :meth:`finish_run`:
        False (do not launch) when the run is no longer ``running`` under ``owner``."""
        query = update(ScheduleRun).where(
            ScheduleRun.id == run_id, ScheduleRun.status == RunStatus.RUNNING.value
        )
        if owner is not None:
            query = query.where(ScheduleRun.engine_id == owner)
        result: bool = self._run(
            lambda s: cast(CursorResult[Any], s.execute(query.values(argv=argv))).rowcount == 1
        )
        return result

    def mark_started(self, run_id: int, pid: int) -> None:
        """Record the pid of the launched process."""
        self._run(
            lambda s: s.execute(update(ScheduleRun).where(ScheduleRun.id == run_id).values(pid=pid))
        )

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
                requeue(session, run)
            confirm_launch(session, run)
            return True

        return self.durable(lambda: bool(self._run(work)))

    def start_attempt(self, run_id: int, owner: str) -> int | None:
        """A new ``running`` attempt of the fire of failed run ``run_id`` (its retry
        policy said so); the event's claims move to it. None when the run is not a
        failed run of ``owner`` any more (fenced)."""

        def work(session: Session) -> int | None:
            return retry_attempt(session, run_id, owner, self.clock())

        result = self.durable(lambda: self._run(work))
        return int(result) if result is not None else None

    # -- engine instances -------------------------------------------------------------

    def register_engine(self, engine_id: str, host: str, pid: int) -> None:
        """Insert this engine process's heartbeat row."""
        now = self.clock()
        self._run(
            lambda s: s.add(
                EngineInstance(
                    id=engine_id,
                    host=host,
                    pid=pid,
                    started_at=now,
                    heartbeat_at=now,
                    last_errors=[],
                )
            )
        )

    def heartbeat(self, engine_id: str) -> None:
        """Refresh this engine's heartbeat."""
        now = self.clock()
        self._run(
            lambda s: s.execute(
                update(EngineInstance)
                .where(EngineInstance.id == engine_id)
                .values(heartbeat_at=now)
            )
        )

    def record_engine_error(self, engine_id: str, message: str) -> None:
        """Keep the last few iteration errors on the engine row."""

        def work(session: Session) -> None:
            row = session.get(EngineInstance, engine_id)
            if row is None:
                return
            stamp = self.clock().isoformat(timespec="seconds")
            row.last_errors = [*list(row.last_errors or []), f"{stamp} {message}"][
                -MAX_KEPT_ERRORS:
            ]

        self._run(work)

    def stop_engine(self, engine_id: str) -> None:
        """Mark this engine stopped and release every lease it holds."""

        def work(session: Session) -> None:
            now = self.clock()
            session.execute(
                update(EngineInstance)
                .where(EngineInstance.id == engine_id)
                .values(stopped_at=now, heartbeat_at=now)
            )
            session.execute(
                update(Schedule)
                .where(Schedule.lease_owner == engine_id)
                .values(lease_owner=None, lease_until=None)
            )

        self._run(work)

    def list_engines(self) -> list[EngineInstance]:
        """Every engine row, newest first."""
        result: list[EngineInstance] = self._run(
            lambda s: list(
                s.scalars(select(EngineInstance).order_by(EngineInstance.started_at.desc()))
            )
        )
        return result

    def live_engine_ids(self, stale_after: timedelta) -> set[str]:
        """Engines not stopped, with a heartbeat newer than ``stale_after`` and (on this
        host) a live process (engine.store.recovery)."""
        result: set[str] = self._run(lambda s: live_engine_ids(s, self.clock(), stale_after))
        return result

    def recover_orphans(self, live_engines: set[str]) -> list[ScheduleRun]:
        """Resolve ``running`` runs whose engine is gone (crash, kill -9, power loss).

        A run whose process was never launched (no pid) is marked ``cancelled`` with
        reason ``abandoned_before_launch``; one with a pid ``cancelled`` / ``engine_lost``.
        Leases of gone engines are released. A github_poll event is queued for another
        attempt under the delivery contract (engine.store.attempts); cron and interval runs
        are not re-fired.
        """
        result: list[ScheduleRun] = self.durable(
            lambda: self._run(lambda s: resolve_orphans(s, self.clock(), live_engines))
        )
        return result
