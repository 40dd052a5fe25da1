"""Orphan recovery, fenced: runs left ``running`` by an engine that is gone.

Every live engine runs :func:`recover` on every heartbeat, not only at start. An engine
is gone when it stopped, when its heartbeat is older than three heartbeat intervals, or
at once when it ran on this host and its process no longer exists (a ``kill -9``
followed by a quick restart is seen at the restart, not 15 s later).

Fencing: a recovered run is no longer ``running`` under its engine. Every write that
finishes a run is a compare-and-set on (status ``running``, owning engine), see
:func:`fenced_finish_allowed`, so an engine that comes back from a pause cannot finish
a run another engine recovered (its outcome is logged and dropped; the event was
re-offered under the delivery contract). A paused engine that resumes heartbeats again
and is live again: only its runs from before the pause were taken from it.
"""

from __future__ import annotations

import logging
import os
import socket
from datetime import datetime, timedelta

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from engine.store.attempts import requeue
from engine.store.enums import RunReason, RunStatus
from engine.store.models import EngineInstance, Schedule, ScheduleRun

log = logging.getLogger(__name__)


def fenced_finish_allowed(run: ScheduleRun, owner: str | None) -> bool:
    """Whether ``owner`` may still write the outcome of ``run`` (see module doc)."""
    if run.status != RunStatus.RUNNING.value:
        log.warning(
            "run %s was already settled as %s (%s): outcome from %s dropped",
            run.id,
            run.status,
            run.reason,
            owner,
        )
        return False
    if owner is not None and run.engine_id is not None and run.engine_id != owner:
        log.warning("run %s belongs to %s, not %s: outcome dropped", run.id, run.engine_id, owner)
        return False
    return True


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def live_engine_ids(session: Session, now: datetime, stale_after: timedelta) -> set[str]:
    """Engines not stopped, with a fresh heartbeat, and (on this host) a live process."""
    host = socket.gethostname()
    rows = session.execute(
        select(EngineInstance.id, EngineInstance.host, EngineInstance.pid).where(
            EngineInstance.stopped_at.is_(None),
            EngineInstance.heartbeat_at >= now - stale_after,
        )
    )
    return {
        engine_id
        for engine_id, engine_host, pid in rows
        if engine_host != host or _process_exists(pid)
    }


def resolve_orphans(session: Session, now: datetime, live: set[str]) -> list[ScheduleRun]:
    """Cancel ``running`` runs of engines not in ``live``, release their leases, and
    queue github_poll events for another attempt (engine.store.attempts)."""
    query = select(ScheduleRun).where(ScheduleRun.status == RunStatus.RUNNING.value)
    if live:
        query = query.where(
            or_(ScheduleRun.engine_id.is_(None), ScheduleRun.engine_id.not_in(live))
        )
    orphans = list(session.scalars(query.with_for_update()))
    for run in orphans:
        run.status = RunStatus.CANCELLED.value
        run.reason = (
            RunReason.ENGINE_LOST if run.pid is not None else RunReason.ABANDONED_BEFORE_LAUNCH
        ).value
        run.finished_at = now
        session.flush()
        requeue(session, run, now)
    lease_query = update(Schedule).where(Schedule.lease_owner.is_not(None))
    if live:
        lease_query = lease_query.where(Schedule.lease_owner.not_in(live))
    session.execute(lease_query.values(lease_owner=None, lease_until=None))
    return orphans
