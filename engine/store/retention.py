"""Retention: run rows and poll claims are kept for a while, then pruned (issue 19).

What is kept (docs/operations.md, "Retention"; docs/decisions.md):

- **Runs.** A finished run is pruned when it started more than ``LI_RUNS_KEEP_DAYS``
  (default 30) ago *and* is not among the newest ``LI_RUNS_KEEP_PER_SCHEDULE`` (default
  1000) runs of its schedule. A ``running`` run is never pruned, nor is a run an event
  claim or a mention key still points at.
- **Poll claims.** A github_poll claim is what keeps an event from firing twice. The
  cursor already keeps every event strictly older than it from being offered again, so a
  claim is pruned only when its event is strictly older than the schedule's cursor, it
  was made more than ``LI_RUNS_KEEP_DAYS`` ago, and its run (if any) is finished. A claim
  at or after the cursor, or one whose run is running or queued for another attempt, is
  never pruned: those are the claims the cursor still needs.

- **Trigger keys, schedule removals, engine rows, ETags of removed schedules**:
  :mod:`engine.store.keyretention` (a key goes only after a forward-only horizon makes
  its item unable to fire again).

Event decisions have their own bounds (engine.poll.decisions).

Each prune deletes in batches of :data:`BATCH` rows, one short transaction each, so an
engine firing at the same time waits at most one batch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial

from sqlalchemy import delete, exists, select
from sqlalchemy.orm import Session

from engine.errors import InvalidInput
from engine.jsonable import JsonForm
from engine.store.core import count_boundary
from engine.store.enums import RunStatus
from engine.store.keyretention import (
    BATCH,
    DEFAULT_KEYS_KEEP_DAYS,
    drain,
    prune_cache,
    prune_engines,
    prune_keys,
    prune_removals,
)
from engine.store.models import PollClaim, PollState, ScheduleRun, TriggerKey

DEFAULT_KEEP_DAYS = 30
DEFAULT_KEEP_PER_SCHEDULE = 1000


@dataclass(frozen=True)
class RunRetention:
    """How long runs and claims are kept; ``keep_per_schedule`` newest runs always stay."""

    keep_days: int = DEFAULT_KEEP_DAYS
    keep_per_schedule: int = DEFAULT_KEEP_PER_SCHEDULE
    keys_keep_days: int = DEFAULT_KEYS_KEEP_DAYS

    def __post_init__(self) -> None:
        if self.keep_days < 1 or self.keep_per_schedule < 0 or self.keys_keep_days < 1:
            raise InvalidInput(
                f"retention needs keep_days >= 1, keep_per_schedule >= 0 and "
                f"keys_keep_days >= 1, got {self.keep_days}, {self.keep_per_schedule} and "
                f"{self.keys_keep_days}",
                "invalid_retention",
            )


@dataclass(frozen=True)
class Pruned(JsonForm):
    """What one prune removed."""

    runs: int = 0
    claims: int = 0
    keys: int = 0
    removals: int = 0
    engines: int = 0
    cache: int = 0

    def __bool__(self) -> bool:
        return any(self.to_json().values())

    def summary(self) -> str:
        return (
            f"{self.runs} run(s), {self.claims} claim(s), {self.keys} trigger key(s), "
            f"{self.removals} removal(s), {self.engines} engine row(s) and {self.cache} "
            f"cache entr(ies)"
        )


Transaction = Callable[[Callable[[Session], int]], int]


def prune(in_transaction: Transaction, policy: RunRetention, now: datetime) -> Pruned:
    """Prune trigger keys and claims first (so their runs become free), then runs, then
    schedule removals; batch by batch."""
    cutoff = now - timedelta(days=policy.keep_days)
    keys = prune_keys(in_transaction, policy.keys_keep_days, now)
    claims = drain(in_transaction, lambda session: _prune_claims(session, cutoff))
    runs = 0
    for name in _schedule_names(in_transaction):
        runs += drain(in_transaction, partial(_prune_runs, name=name, cutoff=cutoff, policy=policy))
    removals = prune_removals(in_transaction, policy.keep_days, now)
    engines = prune_engines(in_transaction, policy.keep_days, now)
    cache = prune_cache(in_transaction)
    return Pruned(
        runs=runs, claims=claims, keys=keys, removals=removals, engines=engines, cache=cache
    )


def _schedule_names(in_transaction: Transaction) -> list[str]:
    """Schedule names that have runs (one indexed scan of ``ix_schedule_runs_name_id``)."""
    names: list[str] = []

    def work(session: Session) -> int:
        names.extend(session.scalars(select(ScheduleRun.schedule_name).distinct()))
        return len(names)

    in_transaction(work)
    return names


def _prune_claims(session: Session, cutoff: datetime) -> int:
    running = (
        select(ScheduleRun.id)
        .where(ScheduleRun.id == PollClaim.run_id)
        .where(ScheduleRun.status == RunStatus.RUNNING.value)
    )
    ids = list(
        session.scalars(
            select(PollClaim.id)
            .join(PollState, PollState.schedule_id == PollClaim.schedule_id)
            .where(
                PollState.cursor_at.is_not(None),
                PollClaim.occurred_at < PollState.cursor_at,
                PollClaim.created_at < cutoff,
                ~exists(running),
            )
            .limit(BATCH)
        )
    )
    ids = [claim_id for claim_id in ids if not _queued(session, claim_id)]
    if ids:
        session.execute(delete(PollClaim).where(PollClaim.id.in_(ids)))
    return len(ids)


def _queued(session: Session, claim_id: int) -> bool:
    """Whether the claim's run waits in its schedule's re-offer queue."""
    claim = session.get(PollClaim, claim_id)
    if claim is None or claim.run_id is None:
        return False
    state = session.get(PollState, claim.schedule_id)
    queue = state.retry_events if state is not None else []
    return any(item.get("run_id") == claim.run_id for item in queue or [])


def _prune_runs(session: Session, name: str, cutoff: datetime, policy: RunRetention) -> int:
    scope = ScheduleRun.schedule_name == name
    boundary = count_boundary(session, ScheduleRun.id, scope, policy.keep_per_schedule)
    if boundary is None:
        return 0
    claimed = select(PollClaim.id).where(PollClaim.run_id == ScheduleRun.id)
    keyed = select(TriggerKey.id).where(TriggerKey.run_id == ScheduleRun.id)
    ids = list(
        session.scalars(
            select(ScheduleRun.id)
            .where(
                ScheduleRun.schedule_name == name,
                ScheduleRun.id <= boundary,
                ScheduleRun.started_at < cutoff,
                ScheduleRun.status != RunStatus.RUNNING.value,
                ~exists(claimed),
                ~exists(keyed),
            )
            .order_by(ScheduleRun.id)
            .limit(BATCH)
        )
    )
    if ids:
        session.execute(delete(ScheduleRun).where(ScheduleRun.id.in_(ids)))
    return len(ids)
