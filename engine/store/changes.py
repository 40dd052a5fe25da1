"""The schedule change counter: what makes the daemon's re-sync incremental (issue 19).

Every flush that adds, removes or edits a schedule's definition bumps the one counter
row (``schedule_changes``), stamps the changed rows' ``version`` with the new value and,
for a removal, writes a ``schedule_removals`` row. It is a session hook on every
:class:`engine.store.core.StoreBase` session, so no write path can forget it.

Fires do *not* bump it: claiming an occurrence only moves ``next_fire_at``,
``last_fire_at``, ``run_count`` and the lease, and the engine that fires re-times its own
job. So engines claiming work never queue on the counter row.

A sync then reads the counter (one row; the schedules table is not touched when nothing
changed) and, when it moved, only the rows and removals newer than what it saw.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import inspect, select, update
from sqlalchemy.orm import Session

from engine.store.models import Schedule, ScheduleChanges, ScheduleRemoval

# What a fire or a lease changes: no definitional change, no bump.
FIRING_FIELDS = frozenset(
    {"next_fire_at", "last_fire_at", "run_count", "lease_owner", "lease_until", "version"}
)
COUNTER_ID = 1


@dataclass(frozen=True)
class Timing:
    """One schedule as the timer needs it: None ``next_fire_at`` when disabled or done."""

    schedule_id: int
    next_fire_at: datetime | None
    trigger_type: str


@dataclass(frozen=True)
class ChangeSet:
    """The schedules changed since a version: new timings and removed ids."""

    version: int
    changed: list[Timing]
    removed: list[int]


def _definition_changed(row: Schedule) -> bool:
    # Assigned, not only changed in value: an edit stamps ``updated_at`` with the clock,
    # and two edits within one clock tick (a fake clock in tests) must both count.
    # Firing code assigns only FIRING_FIELDS.
    return any(key not in FIRING_FIELDS for key in inspect(row).committed_state)


def bump(session: Session) -> int:
    """Advance the counter in this transaction; the new value (locks the row till commit)."""
    connection = session.connection()
    connection.execute(
        update(ScheduleChanges)
        .where(ScheduleChanges.id == COUNTER_ID)
        .values(version=ScheduleChanges.version + 1)
    )
    value = connection.execute(
        select(ScheduleChanges.version).where(ScheduleChanges.id == COUNTER_ID)
    ).scalar_one()
    return int(value)


def stamp_changes(session: Session, _context: Any, _instances: Any) -> None:
    """``before_flush`` hook: bump and stamp when a schedule's definition changes."""
    added = [o for o in session.new if isinstance(o, Schedule)]
    removed = [o for o in session.deleted if isinstance(o, Schedule)]
    edited = [
        o
        for o in session.dirty
        if isinstance(o, Schedule) and o not in session.deleted and _definition_changed(o)
    ]
    if not (added or removed or edited):
        return
    version = bump(session)
    for row in added + edited:
        row.version = version
    for index, row in enumerate(removed):
        if index:
            version = bump(session)
        session.add(ScheduleRemoval(version=version, schedule_id=row.id))


def current_version(session: Session) -> int:
    """The counter now (one row read)."""
    value = session.execute(
        select(ScheduleChanges.version).where(ScheduleChanges.id == COUNTER_ID)
    ).scalar_one()
    return int(value)


def _timing(row: Any) -> Timing:
    next_fire_at = row.next_fire_at if row.enabled else None
    return Timing(row.id, next_fire_at, row.trigger_type)


def changes_since(session: Session, seen: int) -> ChangeSet:
    """The counter, and every schedule changed or removed after version ``seen``.

    The counter is read first: a row stamped later is read again next time, never lost.
    """
    version = current_version(session)
    rows = session.execute(
        select(Schedule.id, Schedule.enabled, Schedule.next_fire_at, Schedule.trigger_type).where(
            Schedule.version > seen
        )
    )
    removed = session.scalars(
        select(ScheduleRemoval.schedule_id).where(ScheduleRemoval.version > seen)
    )
    return ChangeSet(version=version, changed=[_timing(r) for r in rows], removed=list(removed))
