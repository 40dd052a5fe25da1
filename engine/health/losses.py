"""Losses in a window: failed, cancelled, refused runs and coalesced slots (health).

Health used to look at the newest run only, so a failure followed by a success, or
refusals and cancellations, left a schedule ``healthy``. :func:`window_losses` counts
them over :data:`HEALTH_WINDOW`; :func:`engine.health.assess.assess` turns non-zero counts into
the ``degraded`` state with one cause per kind (docs/health.md).

A *coalesced* slot is a cron or interval occurrence that was due while the engine could
not fire it (down, overloaded) and was folded into the next fire: the claim records
their number in the run's ``trigger_context["coalesced"]``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Select, String, bindparam, cast, func, select
from sqlalchemy.orm import Session

from engine.health.assess import LossCounts
from engine.schedules.spec import cron_trigger
from engine.store.models import EngineInstance, RunStatus, Schedule, ScheduleRun, TriggerType

# Counting stops here: a schedule down for months is not walked slot by slot.
MAX_COUNTED_SLOTS = 10_000


def coalesced_slots(row: Schedule, scheduled_for: datetime | None, now: datetime) -> int:
    """Occurrences of ``row`` after ``scheduled_for`` and up to ``now`` that the fire now
    claimed at ``now`` folds in (0 for github_poll and a fire on time)."""
    if scheduled_for is None or now <= scheduled_for:
        return 0
    if row.trigger_type == TriggerType.INTERVAL.value and row.interval_seconds:
        missed = int((now - scheduled_for) // timedelta(seconds=row.interval_seconds))
        return min(missed, MAX_COUNTED_SLOTS)
    if row.trigger_type == TriggerType.CRON.value and row.cron_expr:
        trigger = cron_trigger(row.cron_expr, row.timezone)
        count, moment = 0, scheduled_for
        while count < MAX_COUNTED_SLOTS:
            moment = trigger.get_next_fire_time(moment, moment + timedelta(seconds=1))
            if moment is None or moment > now:
                break
            count += 1
        return count
    return 0


# Built once with bind parameters, so that health over many schedules does not pay
# SQLAlchemy's statement construction and cache-key cost per schedule (issue 19).
_BY_NAME = ScheduleRun.schedule_name == bindparam("name")
_IN_WINDOW = ScheduleRun.started_at >= bindparam("since")
# Whether the run's engine never stopped cleanly (or its row is gone): a run that
# engine cancelled is a loss. A cancelled ``engine_shutdown`` run of an engine that
# marked itself stopped is a planned drain (D71). ``IS NULL`` carries no bind
# parameter, so PostgreSQL sees the grouped expression and the selected one as equal.
_UNCLEAN = EngineInstance.stopped_at.is_(None)
_WINDOW = (
    select(ScheduleRun.status, ScheduleRun.reason, _UNCLEAN, func.count())
    .select_from(ScheduleRun)
    .outerjoin(EngineInstance, EngineInstance.id == ScheduleRun.engine_id)
    .where(_BY_NAME, _IN_WINDOW)
    .group_by(ScheduleRun.status, ScheduleRun.reason, _UNCLEAN)
)
# A textual pre-filter (portable across SQLite and PostgreSQL), checked exactly in Python.
_COALESCED = select(ScheduleRun.reason, ScheduleRun.trigger_context).where(
    _BY_NAME, _IN_WINDOW, cast(ScheduleRun.trigger_context, String).like('%"coalesced"%')
)
_NEWEST = (
    select(ScheduleRun.status, ScheduleRun.reason)
    .where(_BY_NAME)
    .order_by(ScheduleRun.id.desc())
    .limit(5)
)


def window_query(schedule_name: str, since: datetime) -> Select[tuple[str, str | None, bool, int]]:
    """The window's runs of one schedule counted by (status, reason, whether their
    engine never stopped cleanly); served by
    ``ix_schedule_runs_name_started`` (migration 0008)."""
    return _WINDOW.params(name=schedule_name, since=since)


def coalesced_query(schedule_name: str, since: datetime) -> Select[tuple[str | None, Any]]:
    """The window's runs whose context may name coalesced slots (same index)."""
    return _COALESCED.params(name=schedule_name, since=since)


def newest_query(schedule_name: str) -> Select[tuple[str, str | None]]:
    """The schedule's 5 newest runs; served by ``ix_schedule_runs_name_id``."""
    return _NEWEST.params(name=schedule_name)


def window_losses(session: Session, schedule_name: str, since: datetime) -> LossCounts:
    """Count the schedule's runs started at or after ``since`` (operator notes excluded).

    A run cancelled ``engine_shutdown`` by an engine that then marked itself stopped is
    counted as ``drained``, not as a loss: a clean stop (SIGTERM) is not an engine that
    died (D71)."""
    failed = cancelled = refused = coalesced = total = drained = 0
    params = {"name": schedule_name, "since": since}
    for status, reason, unclean, count in session.execute(_WINDOW, params):
        if reason == "cursor_set":
            continue
        total += count
        if status in (RunStatus.FAILED.value, RunStatus.TIMED_OUT.value):
            failed += count
        elif status == RunStatus.CANCELLED.value and reason == "engine_shutdown" and not unclean:
            drained += count
        elif status == RunStatus.CANCELLED.value:
            cancelled += count
        elif status == RunStatus.REFUSED.value:
            refused += count
    for reason, context in session.execute(_COALESCED, params):
        value = (context or {}).get("coalesced") if reason != "cursor_set" else None
        if isinstance(value, int) and value > 0:
            coalesced += value
    return LossCounts(failed, cancelled, refused, coalesced, total, drained)


def newest_outcome(session: Session, schedule_name: str) -> tuple[str | None, str | None]:
    """Status and reason of the schedule's newest run among its 5 newest rows that is not
    an operator note (``cursor_set``); served by ``ix_schedule_runs_name_id``."""
    for status, reason in session.execute(_NEWEST, {"name": schedule_name}):
        if reason != "cursor_set":
            return status, reason
    return None, None
