"""Retention of trigger keys and schedule removals (issue 19); see docs/operations.md,
"Retention", and docs/decisions.md D62.

**Trigger keys** (``trigger_keys``: ``mention:{repo}:{pr}:{comment}``,
``pr_opened:{repo}:{pr}:``). A key is what keeps an item from firing twice. Watermarks
alone cannot replace it: a comment is fresh by ``updated_at``, so an edit brings a
comment of any age back into the feed, and only its key keeps it from firing again. So
the retention first makes old items unable to fire, then drops their keys:

1. per schedule, a forward-only *key horizon* (``poll_states.trigger_keys_horizon``)
   moves to ``now - LI_TRIGGER_KEYS_KEEP_DAYS``. From then on
   :meth:`engine.store.pollstore.PollStore.claim_trigger` refuses every item created
   before it, whether or not its key is still there;
2. in the same transaction, under the poll state's row lock (which ``claim_trigger``
   takes before it looks at the horizon, so the two never interleave), the keys made
   more than :data:`SKEW` before the horizon are deleted - an item exists before its
   key, so its ``created_at`` is before the horizon unless GitHub's clock runs a day
   ahead of ours - except a key whose run is ``running`` or queued for another attempt
   (``poll_states.retry_events``): that fire is not over.

The price: editing a mention into a comment older than the keep period no longer fires.

**Schedule removals** (``schedule_removals``) tell a syncing engine which timer jobs to
drop. Every engine re-syncs every ``LI_SYNC_INTERVAL`` seconds, so a removal older than
``LI_RUNS_KEEP_DAYS`` has been seen by every engine that is alive; one that missed it
keeps a job that finds no schedule row and fires nothing.

**Engine instances** (``engine_instances``): one row per engine process, so one per
``li engine run --once`` from cron. A row goes when its heartbeat is older than
``LI_RUNS_KEEP_DAYS`` (the engine stopped or died long ago; liveness counts in seconds)
and no ``running`` run names it; ``li engine status`` still shows every recent one.

**ETag cache entries of removed schedules** (``http_cache`` keys scoped
``;scope=schedule:N``): no pass reads them again once schedule N is gone.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, timedelta
from functools import partial

from sqlalchemy import delete, exists, or_, select
from sqlalchemy.orm import Session

from engine.store.enums import RunStatus
from engine.store.models import (
    EngineInstance,
    HttpCacheEntry,
    PollState,
    Schedule,
    ScheduleRemoval,
    ScheduleRun,
    TriggerKey,
)

DEFAULT_KEYS_KEEP_DAYS = 90
SKEW = timedelta(days=1)
BATCH = 2000

Transaction = Callable[[Callable[[Session], int]], int]


def drain(in_transaction: Transaction, batch: Callable[[Session], int]) -> int:
    """Run ``batch`` (one transaction each) until it deletes fewer than :data:`BATCH`."""
    total = 0
    while True:
        deleted = in_transaction(batch)
        total += deleted
        if deleted < BATCH:
            return total


def prune_keys(in_transaction: Transaction, keep_days: int, now: datetime) -> int:
    """Move each schedule's key horizon and delete the keys behind it (module doc)."""
    horizon = now - timedelta(days=keep_days)
    cutoff = horizon - SKEW
    total = 0
    for schedule_id in _schedules_with_keys_before(in_transaction, cutoff):
        total += drain(
            in_transaction,
            partial(_prune_schedule_keys, schedule_id=schedule_id, horizon=horizon),
        )
    return total


def _schedules_with_keys_before(in_transaction: Transaction, cutoff: datetime) -> list[int]:
    found: list[int] = []

    def work(session: Session) -> int:
        found.extend(
            session.scalars(
                select(TriggerKey.schedule_id).where(TriggerKey.created_at < cutoff).distinct()
            )
        )
        return len(found)

    in_transaction(work)
    return found


def _prune_schedule_keys(session: Session, schedule_id: int, horizon: datetime) -> int:
    state = session.scalars(
        select(PollState).where(PollState.schedule_id == schedule_id).with_for_update()
    ).one_or_none()
    if state is None:
        return 0  # no poll state to hold a horizon: nothing can be pruned safely
    if state.trigger_keys_horizon is None or state.trigger_keys_horizon < horizon:
        state.trigger_keys_horizon = horizon
        session.flush()  # the horizon is written before any key goes
    cutoff = state.trigger_keys_horizon - SKEW
    running = (
        select(ScheduleRun.id)
        .where(ScheduleRun.id == TriggerKey.run_id)
        .where(ScheduleRun.status == RunStatus.RUNNING.value)
    )
    query = select(TriggerKey.id).where(
        TriggerKey.schedule_id == schedule_id,
        TriggerKey.created_at < cutoff,
        ~exists(running),
    )
    queued = _queued_runs(state)
    if queued:
        query = query.where(or_(TriggerKey.run_id.is_(None), TriggerKey.run_id.not_in(queued)))
    ids = list(session.scalars(query.limit(BATCH)))
    if ids:
        session.execute(delete(TriggerKey).where(TriggerKey.id.in_(ids)))
    return len(ids)


def _queued_runs(state: PollState) -> list[int]:
    """The runs of the schedule's events queued for another attempt."""
    runs: list[int] = []
    for item in state.retry_events or []:
        run_id = item.get("run_id") if isinstance(item, dict) else None
        if isinstance(run_id, int) and not isinstance(run_id, bool):
            runs.append(run_id)
    return runs


def prune_removals(in_transaction: Transaction, keep_days: int, now: datetime) -> int:
    """Delete the schedule removals older than ``keep_days`` (module doc)."""
    cutoff = now - timedelta(days=keep_days)

    def work(session: Session) -> int:
        result = session.execute(delete(ScheduleRemoval).where(ScheduleRemoval.removed_at < cutoff))
        return int(getattr(result, "rowcount", 0) or 0)

    return in_transaction(work)


def prune_engines(in_transaction: Transaction, keep_days: int, now: datetime) -> int:
    """Delete the engine rows silent for ``keep_days`` that no running run names."""
    cutoff = now - timedelta(days=keep_days)
    running = (
        select(ScheduleRun.id)
        .where(ScheduleRun.engine_id == EngineInstance.id)
        .where(ScheduleRun.status == RunStatus.RUNNING.value)
    )

    def work(session: Session) -> int:
        ids = list(
            session.scalars(
                select(EngineInstance.id)
                .where(EngineInstance.heartbeat_at < cutoff, ~exists(running))
                .limit(BATCH)
            )
        )
        if ids:
            session.execute(delete(EngineInstance).where(EngineInstance.id.in_(ids)))
        return len(ids)

    return drain(in_transaction, work)


_SCOPE = re.compile(r";scope=schedule:(\d+)(?::|$)")
SCHEDULE_SCOPE = ";scope=schedule:"


def prune_cache(in_transaction: Transaction) -> int:
    """Delete the ETag cache entries of schedules that no longer exist."""

    def work(session: Session) -> int:
        live = set(session.scalars(select(Schedule.id)))
        keys = session.scalars(
            select(HttpCacheEntry.key).where(
                HttpCacheEntry.key.contains(SCHEDULE_SCOPE, autoescape=True)
            )
        )
        gone = [
            key
            for key in keys
            if (found := _SCOPE.search(key)) is not None and int(found.group(1)) not in live
        ]
        for start in range(0, len(gone), 500):
            session.execute(
                delete(HttpCacheEntry).where(HttpCacheEntry.key.in_(gone[start : start + 500]))
            )
        return len(gone)

    return in_transaction(work)
