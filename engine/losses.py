"""Losses in a window: failed, cancelled, refused runs and coalesced slots (health).

Health used to look at the newest run only, so a failure followed by a success, or
refusals and cancellations, left a schedule ``healthy``. :func:`window_losses` counts
them over :data:`HEALTH_WINDOW`; :func:`engine.health.assess` turns non-zero counts into
the ``degraded`` state with one cause per kind (docs/health.md).

A *coalesced* slot is a cron or interval occurrence that was due while the engine could
not fire it (down, overloaded) and was folded into the next fire: the claim records
their number in the run's ``trigger_context["coalesced"]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Select, select
from sqlalchemy.orm import Session

from engine.models import RunStatus, Schedule, ScheduleRun, TriggerType
from engine.spec import cron_trigger

HEALTH_WINDOW = timedelta(hours=24)
# Counting stops here: a schedule down for months is not walked slot by slot.
MAX_COUNTED_SLOTS = 10_000


@dataclass(frozen=True)
class LossCounts:
    """Runs in the window by outcome, plus coalesced slots."""

    failed: int = 0  # failed or timed_out
    cancelled: int = 0
    refused: int = 0
    coalesced: int = 0
    total: int = 0  # every run in the window


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


def window_query(schedule_name: str, since: datetime) -> Select[tuple[str, str | None, Any]]:
    """The window's runs of one schedule; served by ``ix_schedule_runs_name_started``."""
    return select(ScheduleRun.status, ScheduleRun.reason, ScheduleRun.trigger_context).where(
        ScheduleRun.schedule_name == schedule_name, ScheduleRun.started_at >= since
    )


def window_losses(session: Session, schedule_name: str, since: datetime) -> LossCounts:
    """Count the schedule's runs started at or after ``since`` (operator notes excluded)."""
    rows = session.execute(window_query(schedule_name, since))
    failed = cancelled = refused = coalesced = total = 0
    for status, reason, context in rows:
        if reason == "cursor_set":
            continue
        total += 1
        if status in (RunStatus.FAILED.value, RunStatus.TIMED_OUT.value):
            failed += 1
        elif status == RunStatus.CANCELLED.value:
            cancelled += 1
        elif status == RunStatus.REFUSED.value:
            refused += 1
        value = (context or {}).get("coalesced")
        if isinstance(value, int) and value > 0:
            coalesced += value
    return LossCounts(failed, cancelled, refused, coalesced, total)
