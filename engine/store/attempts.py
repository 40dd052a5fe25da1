"""Attempts of one fire: a github_poll event whose run was lost is offered again.

The delivery contract (docs/decisions.md, docs/engine.md): a github_poll event is
delivered at least once to an action that finishes. A claimed event whose run never
launched (``abandoned_before_launch``, ``engine_shutdown``) or was cut short by a stop
(``cancelled`` after launch) is re-offered on the next pass; a run lost with its engine
(``engine_lost``) is re-offered when the schedule's ``on_engine_lost`` policy is
``refire`` (the default). Cron and interval schedules are never re-fired: their next
occurrence comes on schedule.

Re-offering keeps the event's claim (so the normal pass never fires it as a new event)
and queues it in ``poll_states.retry_events``. The next pass of the schedule takes the
queue in one transaction: each entry becomes a new ``running`` run row, attempt n+1 of
the same fire (``fire_id`` = the first run's id), and the claim points at it.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, or_, select, update
from sqlalchemy.orm import Session

from engine.store.enums import UNLAUNCHED_REASONS, RunReason, RunStatus, TriggerType
from engine.store.models import PollClaim, PollState, Schedule, ScheduleRun, TriggerKey

log = logging.getLogger(__name__)

# An event lost with its engine (launched, then the engine died) is re-offered on the
# next pass; from its IMMEDIATE_LOST_ATTEMPTS-th loss on, it waits the schedule's retry
# backoff, doubling per loss up to MAX_LOST_BACKOFF, so a command that kills its engine
# every time crashes it a few times an hour at most instead of in a loop, while an event
# that was merely running through a string of unrelated restarts still gets delivered.
# After MAX_LOST_ATTEMPTS the event is left cancelled (health shows it). Attempts that
# never launched do not count. Why not a small hard cap: docs/decisions.md D58.
IMMEDIATE_LOST_ATTEMPTS = 3
MAX_LOST_ATTEMPTS = 20
MAX_LOST_BACKOFF = timedelta(hours=1)
LOST_REASON = RunReason.ENGINE_LOST


def reoffer_wanted(run: ScheduleRun, schedule: Schedule, lost_attempts: int) -> bool:
    """Whether a cancelled run of ``schedule`` is to be offered again (the policy);
    ``lost_attempts`` counts the fire's attempts that ended ``engine_lost``, ``run``
    included."""
    if schedule.trigger_type != TriggerType.GITHUB_POLL.value:
        return False
    if run.status != RunStatus.CANCELLED.value:
        return False
    if run.reason in UNLAUNCHED_REASONS:
        return True
    if run.reason == LOST_REASON and lost_attempts < MAX_LOST_ATTEMPTS:
        policy = (schedule.trigger_config or {}).get("on_engine_lost", "refire")
        return bool(policy == "refire")
    return False


def lost_attempts(session: Session, run: ScheduleRun) -> int:
    """How many attempts of ``run``'s fire ended ``engine_lost``."""
    fire = run.fire_id or run.id
    query = (
        select(func.count())
        .select_from(ScheduleRun)
        .where(
            or_(ScheduleRun.fire_id == fire, ScheduleRun.id == fire),
            ScheduleRun.reason == LOST_REASON,
        )
    )
    return int(session.scalar(query) or 0)


def lost_backoff(lost: int, base_seconds: float) -> timedelta:
    """How long the next attempt of an event lost ``lost`` times with its engine waits:
    nothing for the first IMMEDIATE_LOST_ATTEMPTS, then ``base_seconds`` doubling per
    further loss, at most MAX_LOST_BACKOFF."""
    if lost < IMMEDIATE_LOST_ATTEMPTS:
        return timedelta(0)
    doublings = min(lost - IMMEDIATE_LOST_ATTEMPTS, 16)
    wait = timedelta(seconds=max(base_seconds, 1.0) * 2**doublings)
    return min(wait, MAX_LOST_BACKOFF)


def _state_for_update(session: Session, schedule_id: int) -> PollState | None:
    query = select(PollState).where(PollState.schedule_id == schedule_id).with_for_update()
    return session.scalars(query).one_or_none()


def requeue(session: Session, run: ScheduleRun, now: datetime) -> bool:
    """Queue ``run``'s event for another attempt if the policy wants it (in the caller's
    transaction, after ``run`` got its final status). True when queued."""
    if run.schedule_id is None:
        return False
    schedule = session.get(Schedule, run.schedule_id)
    lost = lost_attempts(session, run)
    if schedule is None or not reoffer_wanted(run, schedule, lost):
        return False
    state = _state_for_update(session, schedule.id)
    if state is None:
        return False
    entry: dict[str, Any] = {
        "run_id": run.id,
        "fire_id": run.fire_id or run.id,
        "attempt": run.attempt,
        "context": dict(run.trigger_context or {}),
        "argv": list(run.argv) if run.argv is not None else None,
    }
    wait = (
        lost_backoff(lost, float(schedule.retry_backoff_seconds or 0))
        if run.reason == LOST_REASON
        else timedelta(0)
    )
    if wait:
        entry["not_before"] = (now + wait).timestamp()
        log.warning(
            "run %s of %s: lost with its engine %d times; attempt %d waits %ds",
            run.id,
            schedule.name,
            lost,
            run.attempt + 1,
            int(wait.total_seconds()),
        )
    queued = [item for item in (state.retry_events or []) if item.get("run_id") != run.id]
    state.retry_events = [*queued, entry]
    log.info(
        "run %s of %s (%s) is offered again as attempt %d",
        run.id,
        schedule.name,
        run.reason,
        run.attempt + 1,
    )
    return True


def _due(entry: dict[str, Any], now: datetime) -> bool:
    not_before = entry.get("not_before")
    return not_before is None or float(not_before) <= now.timestamp()


def take_retries(
    session: Session, schedule: Schedule, owner: str, now: datetime
) -> list[ScheduleRun]:
    """Turn the schedule's queued events into new ``running`` attempts (one transaction
    with the caller's); their claims now point at the new run rows."""
    state = _state_for_update(session, schedule.id)
    if state is None or not state.retry_events:
        return []
    queue: list[dict[str, Any]] = list(state.retry_events)
    entries = [entry for entry in queue if _due(entry, now)]
    if not entries:
        return []
    state.retry_events = [entry for entry in queue if not _due(entry, now)]
    runs = []
    for entry in entries:
        context = dict(entry.get("context") or {})
        run = ScheduleRun.begun(
            schedule.id,
            schedule.name,
            context,
            RunStatus.RUNNING,
            now,
            owner=owner,
            argv=entry.get("argv"),
            attempt=int(entry.get("attempt", 1)) + 1,
            fire_id=int(entry["fire_id"]),
        )
        session.add(run)
        session.flush()
        old = int(entry["run_id"])
        for table in (PollClaim, TriggerKey):
            session.execute(update(table).where(table.run_id == old).values(run_id=run.id))
        runs.append(run)
    schedule.run_count += len(runs)
    schedule.last_fire_at = now
    state.updated_at = now
    return runs


def confirm_launch(session: Session, run: ScheduleRun) -> None:
    """A github_poll event run that ended with an exit code was launched: reset its
    schedule's capped-poll counter (issue 10: a claim alone never counts as a launch;
    see engine.health.assess.capped_counter_next, rule 3)."""
    if run.exit_code is None or run.schedule_id is None or run.attempt != 1:
        return
    if "pr_number" not in (run.trigger_context or {}):
        return
    state = _state_for_update(session, run.schedule_id)
    if state is not None and state.poller_consecutive_cap_no_dispatch:
        state.poller_consecutive_cap_no_dispatch = 0


def retry_attempt(session: Session, run_id: int, owner: str, now: datetime) -> int | None:
    """Attempt n+1 of the fire of failed run ``run_id`` under its schedule's retry policy
    (engine.run.actions.execute_claim); the event's claims point at it. None if fenced."""
    old = session.get(ScheduleRun, run_id, with_for_update=True)
    if old is None or old.status != RunStatus.FAILED.value or old.engine_id != owner:
        return None
    run = ScheduleRun.begun(
        old.schedule_id,
        old.schedule_name,
        dict(old.trigger_context or {}),
        RunStatus.RUNNING,
        now,
        owner=owner,
        attempt=old.attempt + 1,
        fire_id=old.fire_id or old.id,
    )
    session.add(run)
    session.flush()
    for table in (PollClaim, TriggerKey):
        session.execute(update(table).where(table.run_id == old.id).values(run_id=run.id))
    log.info(
        "run %s of %s failed (%s): retried as attempt %d (run %s)",
        old.id,
        old.schedule_name,
        old.reason,
        run.attempt,
        run.id,
    )
    return run.id
