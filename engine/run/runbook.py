"""What one engine process has in hand: claims not launched yet, runs in flight, and
outcomes the database did not take. The daemon's graceful stop and its repair loop.

- **pending**: claimed events waiting for a slot. A stop (SIGTERM) hands every one of
  them back in ONE transaction (:meth:`RunBook.release_pending`): their runs end
  ``cancelled`` / ``engine_shutdown`` and the events are queued for another attempt
  (engine.store.attempts), so the next pass - of this engine after a restart, or of another
  engine - offers them again.
- **active**: run ids this process is executing. A ``running`` run of this engine that
  is not active (its claim committed but the answer was lost in an outage, say) is a
  stray: :meth:`RunBook.repair` settles it like an orphan.
- **unrecorded**: outcomes whose write failed even after the retries of
  engine.store.retrying; :meth:`RunBook.repair` writes them on the next loop, so a database
  blip never leaves a run ``running`` (and its schedule leased) for an hour.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from engine.errors import LiError
from engine.store.attempts import requeue
from engine.store.models import RunStatus, ScheduleRun
from engine.store.store import Claim, FinishedRun, Store

log = logging.getLogger(__name__)

# A running run of ours that we do not know is left alone this long (claim in flight).
STRAY_AFTER = timedelta(seconds=30)


def _settle(session: Session, run: ScheduleRun, reason: str, now: datetime) -> None:
    run.status = RunStatus.CANCELLED.value
    run.reason = reason
    run.finished_at = now
    session.flush()
    requeue(session, run, now)


class RunBook:
    """Thread-safe bookkeeping of one engine's claims and runs (see module doc)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[int, Claim] = {}
        self._active: set[int] = set()
        self._unrecorded: dict[int, FinishedRun] = {}

    # -- pending claims ---------------------------------------------------------------

    def add_pending(self, claim: Claim) -> None:
        with self._lock:
            self._pending[claim.run_id] = claim
            self._active.add(claim.run_id)

    def take_pending(self, run_id: int) -> Claim | None:
        """The claim to launch now, or None when a stop handed it back already."""
        with self._lock:
            return self._pending.pop(run_id, None)

    def release_pending(self, store: Store, owner: str) -> list[int]:
        """Hand every pending claim back, in one transaction; their run ids."""
        with self._lock:
            claims = list(self._pending.values())
            self._pending.clear()
        if not claims:
            return []
        ids = [claim.run_id for claim in claims]

        def work(session: Session) -> None:
            now = store.clock()
            runs = session.scalars(
                select(ScheduleRun)
                .where(
                    ScheduleRun.id.in_(ids),
                    ScheduleRun.status == RunStatus.RUNNING.value,
                    ScheduleRun.engine_id == owner,
                )
                .with_for_update()
            )
            for run in runs:
                _settle(session, run, "engine_shutdown", now)

        store.durable(lambda: store.in_transaction(work))
        with self._lock:
            self._active.difference_update(ids)
        log.info("handed back %d claimed event(s) not launched yet", len(ids))
        return ids

    # -- runs -------------------------------------------------------------------------

    def started(self, run_id: int) -> None:
        with self._lock:
            self._active.add(run_id)

    def finish(self, store: Store, run_id: int, result: FinishedRun, owner: str) -> None:
        """Record an outcome; kept for :meth:`repair` if the database will not take it."""
        try:
            store.finish_run(run_id, result, owner=owner)
        except LiError as exc:
            log.error("could not record the outcome of run %s (kept for repair): %s", run_id, exc)
            with self._lock:
                self._unrecorded[run_id] = result
            return
        with self._lock:
            self._active.discard(run_id)

    def ended(self, run_id: int) -> None:
        """The run's execution is over (its outcome recorded or kept)."""
        with self._lock:
            if run_id not in self._unrecorded:
                self._active.discard(run_id)

    def repair(self, store: Store, owner: str) -> int:
        """Write kept outcomes, then settle strays; how many runs were repaired."""
        with self._lock:
            kept = dict(self._unrecorded)
        repaired = 0
        for run_id, result in kept.items():
            store.finish_run(run_id, result, owner=owner)  # raises: try again next loop
            repaired += 1
            with self._lock:
                self._unrecorded.pop(run_id, None)
                self._active.discard(run_id)
        with self._lock:
            known = set(self._active)

        def work(session: Session) -> int:
            now = store.clock()
            query = select(ScheduleRun).where(
                ScheduleRun.status == RunStatus.RUNNING.value,
                ScheduleRun.engine_id == owner,
                ScheduleRun.started_at < now - STRAY_AFTER,
            )
            strays = [r for r in session.scalars(query.with_for_update()) if r.id not in known]
            for run in strays:
                log.warning("run %s of %s is ours but unknown: settled", run.id, run.schedule_name)
                _settle(
                    session,
                    run,
                    "engine_lost" if run.pid is not None else "abandoned_before_launch",
                    now,
                )
            return len(strays)

        strays: int = store.in_transaction(work)
        return repaired + strays
