"""The store: every SQL statement about schedules, runs, claims, leases and engines.

The store is the one place that talks to the database. Each public method is one
transaction (:meth:`Store.transaction`, engine.store.core). Timestamps come from the
injected ``clock`` so tests can move time. :class:`Store` is assembled from its parts:

- this module: schedule CRUD and applying a ScheduleSet plan (engine.schedules.plan);
- engine.store.firing: due schedules, claiming a fire, a run's life (the claiming
  contract is in its module doc);
- engine.store.engines: engine instance rows and their leases;
- engine.store.pollstore: github_poll statements, over a Store.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from engine.errors import Conflict
from engine.schedules.plan import ExistingSchedule, PlanAction, PlanItem
from engine.schedules.spec import ScheduleSpec
from engine.store.core import compute_next_fire, schedule_by_name, seed_poll_state
from engine.store.engines import EngineStore
from engine.store.enums import OverlapPolicy, TriggerType
from engine.store.firing import Claim, DueSchedule, FinishedRun, FiringStore, runs_query
from engine.store.models import PollClaim, PollState, Schedule, ScheduleRun

__all__ = [
    "Claim",
    "DueSchedule",
    "FinishedRun",
    "Store",
    "compute_next_fire",
    "runs_query",
    "seed_poll_state",
    "spec_of",
]

# A change to any of these recomputes the next fire from now.
_TIMING_FIELDS = (
    "trigger_type",
    "cron",
    "timezone",
    "interval_seconds",
    "trigger_config",
    "enabled",
    "max_runs",
)


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
        **row.command_fields(),
        max_runs=row.max_runs,
        overlap=OverlapPolicy(row.overlap),
        retry_max_attempts=row.retry_max_attempts,
        retry_backoff_seconds=row.retry_backoff_seconds,
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


def _assign(row: Schedule, spec: ScheduleSpec, managed_by: str | None, now: datetime) -> None:
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


def _delete_schedule(session: Session, row: Schedule) -> None:
    """Delete ``row``; its runs stay (schedule_id becomes NULL, the name is kept)."""
    session.execute(
        update(ScheduleRun).where(ScheduleRun.schedule_id == row.id).values(schedule_id=None)
    )
    session.delete(row)


def _update_row(
    session: Session, row: Schedule, spec: ScheduleSpec, item: PlanItem, owner: str, now: datetime
) -> None:
    """Apply one UPDATE item: new fields, a new timetable if timing changed, and fresh
    poll memory if the github_poll stream changed."""
    stream_before = (row.trigger_type, _poll_stream(row.trigger_config))
    timing_changed = any(field in item.changes for field in _TIMING_FIELDS)
    _assign(row, spec, owner, now)
    if timing_changed:
        row.next_fire_at = compute_next_fire(row, previous=None, now=now)
    stream_after = (row.trigger_type, _poll_stream(row.trigger_config))
    if row.trigger_type == TriggerType.GITHUB_POLL and stream_after != stream_before:
        reset_poll_state(session, row, now)


class Store(FiringStore, EngineStore):
    """Schedules, runs and engine instances in one SQL database."""

    def _new_row(
        self, spec: ScheduleSpec, managed_by: str | None, first_fire_at: datetime | None = None
    ) -> Schedule:
        now = self.clock()
        row = Schedule(name=spec.name, created_at=now, run_count=0)
        _assign(row, spec, managed_by, now)
        row.next_fire_at = first_fire_at or compute_next_fire(row, previous=None, now=now)
        return row

    def add_schedule(
        self,
        spec: ScheduleSpec,
        *,
        managed_by: str | None = None,
        first_fire_at: datetime | None = None,
    ) -> Schedule:
        """Insert a new schedule (spec already checked); ``schedule_exists`` if taken."""
        with self.transaction() as session:
            exists = session.scalar(select(Schedule.id).where(Schedule.name == spec.name))
            if exists is not None:
                raise Conflict(f"a schedule named {spec.name!r} already exists", "schedule_exists")
            row = self._new_row(spec, managed_by, first_fire_at)
            session.add(row)
            session.flush()
            seed_poll_state(session, row, row.created_at)
            return row

    def get_schedule(self, name: str) -> Schedule:
        """The schedule row named ``name``; ``schedule_not_found`` otherwise."""
        with self.transaction() as session:
            return schedule_by_name(session, name)

    def list_schedules(self) -> list[Schedule]:
        """All schedules ordered by name."""
        with self.transaction() as session:
            return list(session.scalars(select(Schedule).order_by(Schedule.name)))

    def set_enabled(self, name: str, enabled: bool) -> Schedule:
        """Pause or resume; resuming recomputes the next fire from now."""
        with self.transaction() as session:
            row = schedule_by_name(session, name, lock=True)
            now = self.clock()
            row.enabled = enabled
            row.updated_at = now
            if enabled and (row.next_fire_at is None or row.next_fire_at < now):
                row.next_fire_at = compute_next_fire(row, previous=None, now=now)
            return row

    def remove_schedule(self, name: str) -> None:
        """Delete a schedule; its runs stay (schedule_id becomes NULL, the name is kept)."""
        with self.transaction() as session:
            _delete_schedule(session, schedule_by_name(session, name, lock=True))

    def request_fire(self, name: str) -> Schedule:
        """Make ``name`` due now; a running engine fires it at its next sync."""
        with self.transaction() as session:
            row = schedule_by_name(session, name, lock=True)
            now = self.clock()
            row.next_fire_at = now
            row.updated_at = now
            return row

    def existing_for_plan(self) -> list[ExistingSchedule]:
        """Every schedule as ``(spec, managed_by)`` for ScheduleSet planning."""
        return [
            ExistingSchedule(spec=spec_of(row), managed_by=row.managed_by)
            for row in self.list_schedules()
        ]

    def apply_plan(self, items: Sequence[PlanItem], owner: str) -> None:
        """Apply CREATE/UPDATE/REMOVE items in one transaction (all or nothing)."""
        with self.transaction() as session:
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
                    row = schedule_by_name(session, item.name, lock=True)
                    _update_row(session, row, item.spec, item, owner, now)
                elif item.action is PlanAction.REMOVE:
                    _delete_schedule(session, schedule_by_name(session, item.name, lock=True))
                session.flush()
