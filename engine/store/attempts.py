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
from datetime import datetime
from typing import Any

from sqlalchemy import func, or_, select, update
from sqlalchemy.orm import Session

from engine.store.enums import UNLAUNCHED_REASONS, RunReason, RunStatus, TriggerType
from engine.store.models import PollClaim, PollState, Schedule, ScheduleRun, TriggerKey

log = logging.getLogger(__name__)

# After this many attempts of one fire were lost with their engine (launched, then the
# engine died) the event is left cancelled (health shows it): a command that kills its
# engine every time cannot loop forever. Attempts that never launched do not count.
MAX_LOST_ATTEMPTS = 5
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


def _state_for_update(session: Session, schedule_id: int) -> PollState | None:
    query = select(PollState).where(PollState.schedule_id == schedule_id).with_for_update()
    return session.scalars(query).one_or_none()


def requeue(session: Session, run: ScheduleRun) -> bool:
    """Queue ``run``'s event for another attempt if the policy wants it (in the caller's
    transaction, after ``run`` got its final status). True when queued."""
    if run.schedule_id is None:
        return False
    schedule = session.get(Schedule, run.schedule_id)
    if schedule is None or not reoffer_wanted(run, schedule, lost_attempts(session, run)):
        return False
    state = _state_for_update(session, schedule.id)
    if state is None:
        return False
    entry = {
        "run_id": run.id,
        "fire_id": run.fire_id or run.id,
        "attempt": run.attempt,
        "context": dict(run.trigger_context or {}),
        "argv": list(run.argv) if run.argv is not None else None,
    }
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


def take_retries(
    session: Session, schedule: Schedule, owner: str, now: datetime
) -> list[ScheduleRun]:
    """Turn the schedule's queued events into new ``running`` attempts (one transaction
    with the caller's); their claims now point at the new run rows."""
    state = _state_for_update(session, schedule.id)
    if state is None or not state.retry_events:
        return []
    entries: list[dict[str, Any]] = list(state.retry_events)
    state.retry_events = []
    runs = []
    for entry in entries:
        context = dict(entry.get("context") or {})
        run = ScheduleRun(
            schedule_id=schedule.id,
            schedule_name=schedule.name,
            trigger_context=context,
            argv=entry.get("argv"),
            status=RunStatus.RUNNING.value,
            engine_id=owner,
            started_at=now,
            stdout_tail="",
            stderr_tail="",
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
    run = ScheduleRun(
        schedule_id=old.schedule_id,
        schedule_name=old.schedule_name,
        trigger_context=dict(old.trigger_context or {}),
        argv=None,
        status=RunStatus.RUNNING.value,
        engine_id=owner,
        started_at=now,
        stdout_tail="",
        stderr_tail="",
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
