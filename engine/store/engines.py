"""Engine instances: heartbeat rows, their errors, liveness, and the leases they hold.

Every engine process registers a row, refreshes its heartbeat, keeps its last few loop
errors on it, and at a clean stop marks it stopped and releases every schedule lease it
holds. Liveness (who counts as gone) is engine.store.recovery's rule; an engine's
:class:`EngineState` (``li engine status``) is read from it.
"""

from __future__ import annotations

import enum
from datetime import timedelta

from sqlalchemy import select, update

from engine.store.core import StoreBase
from engine.store.models import EngineInstance, Schedule
from engine.store.recovery import live_engine_ids

MAX_KEPT_ERRORS = 10


class EngineState(enum.StrEnum):
    """What became of an engine process (derived, never stored)."""

    RUNNING = "running"  # live: not stopped, fresh heartbeat, (this host) process exists
    STOPPED = "stopped"  # stopped cleanly: it marked itself stopped (a drain, an exit)
    LOST = "lost"  # never stopped cleanly and no longer live: it died or hangs


def engine_state(row: EngineInstance, live: set[str]) -> EngineState:
    """``row``'s state, given the ids of the live engines."""
    if row.stopped_at is not None:
        return EngineState.STOPPED
    return EngineState.RUNNING if row.id in live else EngineState.LOST


class EngineStore(StoreBase):
    """Engine instance rows and leases (part of engine.store.store.Store)."""

    def register_engine(self, engine_id: str, host: str, pid: int) -> None:
        """Insert this engine process's heartbeat row."""
        now = self.clock()
        with self.transaction() as session:
            session.add(
                EngineInstance(
                    id=engine_id,
                    host=host,
                    pid=pid,
                    started_at=now,
                    heartbeat_at=now,
                    last_errors=[],
                )
            )

    def heartbeat(self, engine_id: str) -> None:
        """Refresh this engine's heartbeat."""
        now = self.clock()
        with self.transaction() as session:
            session.execute(
                update(EngineInstance)
                .where(EngineInstance.id == engine_id)
                .values(heartbeat_at=now)
            )

    def record_engine_error(self, engine_id: str, message: str) -> None:
        """Keep the last few iteration errors on the engine row."""
        with self.transaction() as session:
            row = session.get(EngineInstance, engine_id)
            if row is None:
                return
            stamp = self.clock().isoformat(timespec="seconds")
            row.last_errors = [*list(row.last_errors or []), f"{stamp} {message}"][
                -MAX_KEPT_ERRORS:
            ]

    def stop_engine(self, engine_id: str) -> None:
        """Mark this engine stopped and release every lease it holds."""
        with self.transaction() as session:
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

    def list_engines(self) -> list[EngineInstance]:
        """Every engine row, newest first."""
        with self.transaction() as session:
            return list(
                session.scalars(select(EngineInstance).order_by(EngineInstance.started_at.desc()))
            )

    def engine_states(self, stale_after: timedelta) -> list[tuple[EngineInstance, EngineState]]:
        """Every engine row, newest first, with its state (one transaction)."""
        with self.transaction() as session:
            rows = session.scalars(
                select(EngineInstance).order_by(EngineInstance.started_at.desc())
            )
            live = live_engine_ids(session, self.clock(), stale_after)
            return [(row, engine_state(row, live)) for row in rows]

    def live_engine_ids(self, stale_after: timedelta) -> set[str]:
        """Engines not stopped, with a heartbeat newer than ``stale_after`` and (on this
        host) a live process (engine.store.recovery)."""
        with self.transaction() as session:
            return live_engine_ids(session, self.clock(), stale_after)
