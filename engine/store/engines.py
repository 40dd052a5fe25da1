"""Engine instances: heartbeat rows, their errors, liveness, and the leases they hold.

Every engine process registers a row, refreshes its heartbeat, keeps its last few loop
errors on it, and at a clean stop marks it stopped and releases every schedule lease it
holds. Liveness (who counts as gone) is engine.store.recovery's rule.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select, update

from engine.store.core import StoreBase
from engine.store.models import EngineInstance, Schedule
from engine.store.recovery import live_engine_ids

MAX_KEPT_ERRORS = 10


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

    def live_engine_ids(self, stale_after: timedelta) -> set[str]:
        """Engines not stopped, with a heartbeat newer than ``stale_after`` and (on this
        host) a live process (engine.store.recovery)."""
        with self.transaction() as session:
            return live_engine_ids(session, self.clock(), stale_after)
