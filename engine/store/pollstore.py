"""SQL for github_poll schedules: poll leases, event claims, cursor, held batch, health.

Why it is built this way: docs/decisions.md D10.

Split from :mod:`engine.store.store`; it writes through the same public
:meth:`engine.store.core.StoreBase.transaction`, under the same rules. The contract the
poller relies on:

- :meth:`PollStore.claim_event` inserts the event's unique claim, its ``running`` run
  row and the forward-only cursor move in ONE transaction: two engines never fire one
  event, and a crash never loses one (the claim and run row exist, or neither does).
- :meth:`PollStore.settle_poll` writes everything a pass learnt (cursor, held batch,
  refusal counts, counters, health fields, trigger watermarks and open-PR set) in one
  transaction, and releases the lease. The ETags of the listings the pass acted on are
  stored in that same transaction, never before it (issue 19): a process that dies
  between a fetch and its settle leaves no ETag that could hide the listing behind a
  ``304``, so the cache survives restarts.
- :meth:`PollStore.claim_trigger` does for a trigger event (``mention``, ``pr_opened``)
  what ``claim_event`` does for a pull request event: insert-or-ignore of its dedupe key
  in ``trigger_keys`` + the run row + the link, in ONE transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from engine.errors import NotFound
from engine.github.types import CachedResponse
from engine.store.attempts import take_retries
from engine.store.core import compute_next_fire, seed_poll_state
from engine.store.enums import RunReason, RunStatus, TriggerType
from engine.store.firing import Claim
from engine.store.httpcache import put_entries
from engine.store.models import (
    PollClaim,
    PollState,
    Schedule,
    ScheduleRun,
    TriggerKey,
)
from engine.store.store import Store

# A pass holds its schedule's lease this long at most (a crashed poller's lease expires).
POLL_LEASE = timedelta(minutes=10)


@dataclass(frozen=True)
class PollTicket:
    """A poll pass this process now owns, with the state it starts from."""

    schedule_id: int
    schedule_name: str
    trigger_config: dict[str, Any]
    command: str
    args: list[str]
    cwd: str | None
    timeout_seconds: int
    env_passthrough: list[str]
    cursor_at: datetime | None
    held_batch: list[dict[str, Any]]
    refusals: dict[str, int]
    capped_counter: int
    pr_watermark: datetime | None = None
    comments_watermark: datetime | None = None
    open_prs: frozenset[int] | None = None  # None: unknown (no 200 from /pulls yet)


@dataclass
class PollOutcome:
    """What one pass learnt, written by :meth:`PollStore.settle_poll`."""

    polled: bool = False
    http_status: int | None = None
    error_reason: str | None = None
    error_message: str | None = None
    rate_limit_reset_at: datetime | None = None
    not_modified: bool = False
    cursor_to: datetime | None = None
    held_batch: list[dict[str, Any]] | None = None
    refusals: dict[str, int] | None = None
    capped_counter: int | None = None
    events_seen: int = 0
    excluded: int = 0
    held: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    # Trigger state (event "mentions"); None leaves the stored value as it is.
    pr_watermark_to: datetime | None = None
    comments_watermark_to: datetime | None = None
    open_prs: list[int] | None = None
    # (cache key, entry) of each listing the pass read and acted on: stored with the settle.
    etags: list[tuple[str, CachedResponse]] = field(default_factory=list)


def _insert_once(session: Session, row: PollClaim | TriggerKey) -> bool:
    """Insert-or-ignore on a unique key: False (and nothing written) if it exists."""
    savepoint = session.begin_nested()
    try:
        session.add(row)
        session.flush()
    except IntegrityError:
        savepoint.rollback()
        return False
    savepoint.commit()
    return True


def _event_run(
    session: Session,
    row: Schedule,
    context: dict[str, Any],
    argv: list[str] | None,
    status: RunStatus,
    reason: str | None,
    owner: str,
    now: datetime,
) -> ScheduleRun:
    """The run row of one claimed event (``running``, or already final when refused)."""
    run = ScheduleRun.begun(
        row.id, row.name, context, status, now, owner=owner, argv=argv, reason=reason
    )
    session.add(run)
    session.flush()
    return run


def _counted(
    state: PollState, row: Schedule, run: ScheduleRun, context: dict[str, Any], now: datetime
) -> Claim:
    """The claim of an event whose ``run`` was just written, counted on the poll state and
    the schedule: a launched (``running``) run is dispatched and is a fire of ``row``."""
    if run.status == RunStatus.RUNNING.value:
        state.dispatched += 1
        row.run_count += 1
        row.last_fire_at = now
    state.updated_at = now
    return Claim.of(row, run.id, context)


class PollStore:
    """Poll-specific statements over a :class:`engine.store.store.Store`'s database."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def _state(self, session: Session, schedule_id: int, *, lock: bool = False) -> PollState:
        query = select(PollState).where(PollState.schedule_id == schedule_id)
        if lock:
            query = query.with_for_update()
        state = session.scalars(query).one_or_none()
        if state is None:
            # Missing (a schedule from before poll state existed): seeded as at add time,
            # never with an unset cursor that would fire the whole backlog.
            row = session.get(Schedule, schedule_id)
            if row is None:
                raise NotFound(f"no schedule with id {schedule_id}", "schedule_not_found")
            seed_poll_state(session, row, self.store.clock())
            session.flush()
            state = session.scalars(query).one()
        return state

    def get_state(self, schedule_id: int) -> PollState:
        """The poll state row (created empty if missing)."""
        return self.store.in_transaction(lambda s: self._state(s, schedule_id))

    def claim_poll(
        self, schedule_id: int, owner: str, *, manual: bool = False, peek: bool = False
    ) -> PollTicket | None:
        """Take the schedule's poll lease for one pass (None: not due, or another engine
        is polling it). ``manual`` polls now without touching the timetable; ``peek``
        takes no lease and changes nothing (``li schedule preview``)."""

        def work(session: Session) -> PollTicket | None:
            now = self.store.clock()
            query = select(Schedule).where(
                Schedule.id == schedule_id, Schedule.trigger_type == TriggerType.GITHUB_POLL
            )
            if not manual and not peek:
                query = query.where(
                    Schedule.enabled.is_(True),
                    Schedule.next_fire_at.is_not(None),
                    Schedule.next_fire_at <= now,
                )
            row = session.scalars(query.with_for_update(skip_locked=True)).one_or_none()
            if row is None:
                return None
            if not peek:
                if (
                    row.lease_until is not None
                    and row.lease_until > now
                    and row.lease_owner != owner
                ):
                    return None
                if not manual:
                    row.next_fire_at = compute_next_fire(row, previous=row.next_fire_at, now=now)
                row.lease_owner = owner
                row.lease_until = now + POLL_LEASE
            state = self._state(session, schedule_id, lock=not peek)
            return PollTicket(
                schedule_id=row.id,
                schedule_name=row.name,
                trigger_config=dict(row.trigger_config or {}),
                **row.command_fields(),
                cursor_at=state.cursor_at,
                held_batch=list(state.held_batch or []),
                refusals={str(k): int(v) for k, v in (state.refusals or {}).items()},
                capped_counter=state.poller_consecutive_cap_no_dispatch,
                pr_watermark=state.pr_watermark,
                comments_watermark=state.comments_watermark,
                open_prs=(
                    None if state.open_prs is None else frozenset(int(n) for n in state.open_prs)
                ),
            )

        return self.store.in_transaction(work)

    def is_claimed(
        self, schedule_id: int, pr_number: int, occurred_at: datetime, head_sha: str = ""
    ) -> bool:
        """Whether this event already fired (or was recorded as skipped)."""
        return self.store.in_transaction(
            lambda s: (
                s.scalar(
                    select(PollClaim.id).where(
                        PollClaim.schedule_id == schedule_id,
                        PollClaim.pr_number == pr_number,
                        PollClaim.occurred_at == occurred_at,
                        PollClaim.head_sha == head_sha,
                    )
                )
                is not None
            )
        )

    def claim_event(
        self,
        ticket: PollTicket,
        *,
        pr_number: int,
        occurred_at: datetime,
        head_sha: str = "",
        context: dict[str, Any],
        argv: list[str] | None,
        owner: str,
        cursor_to: datetime | None,
        status: RunStatus = RunStatus.RUNNING,
        reason: str | None = None,
    ) -> Claim | None:
        """Claim one event: unique claim + run row + forward-only cursor, one transaction.

        Returns None when the event was already claimed (a re-offer: costs nothing).
        ``status`` REFUSED records an event skipped after repeated refusals the same way,
        so it is never offered again.
        """

        def work(session: Session) -> Claim | None:
            now = self.store.clock()
            row = session.get(Schedule, ticket.schedule_id, with_for_update=True)
            if row is None:
                raise NotFound(f"schedule {ticket.schedule_name} was removed", "schedule_not_found")
            claim = PollClaim(
                schedule_id=row.id,
                pr_number=pr_number,
                occurred_at=occurred_at,
                head_sha=head_sha,
                created_at=now,
            )
            if not _insert_once(session, claim):
                return None
            run = _event_run(session, row, context, argv, status, reason, owner, now)
            claim.run_id = run.id
            state = self._state(session, row.id, lock=True)
            if cursor_to is not None and (state.cursor_at is None or cursor_to > state.cursor_at):
                state.cursor_at = cursor_to
            return _counted(state, row, run, context, now)

        return self.store.in_transaction(work)

    def claim_retries(self, ticket: PollTicket, owner: str) -> list[Claim]:
        """New attempts of the events queued for another try (see engine.store.attempts)."""

        def work(session: Session) -> list[Claim]:
            row = session.get(Schedule, ticket.schedule_id, with_for_update=True)
            if row is None:
                return []
            runs = take_retries(session, row, owner, self.store.clock())
            return [Claim.of(row, run.id, dict(run.trigger_context or {})) for run in runs]

        return self.store.in_transaction(work)

    def claim_trigger(
        self,
        ticket: PollTicket,
        *,
        dedupe_key: str,
        context: dict[str, Any],
        argv: list[str] | None,
        owner: str,
        status: RunStatus = RunStatus.RUNNING,
        reason: str | None = None,
        once_per_prefix: str | None = None,
        created_at: datetime | None = None,
    ) -> Claim | None:
        """Claim one trigger event: its unique dedupe key + run row + link, one transaction.

        Returns None when the key is already present (a re-classified item: costs
        nothing, enqueues nothing), or when ``once_per_prefix`` is given and a key with
        that prefix is (a ``pr_opened`` re-offered at its boundary second after a push has
        a new head SHA, hence a new key, but is the same opening). ``status`` REFUSED
        records an event whose argv could not be rendered, once, so it is never offered
        again. Also None when the item was created (``created_at``) before the schedule's
        key horizon: its key may have been pruned (engine.store.keyretention). The
        horizon is read under the poll state's row lock, which the retention takes to
        move it, so a prune and a claim never interleave.
        """

        def work(session: Session) -> Claim | None:
            now = self.store.clock()
            row = session.get(Schedule, ticket.schedule_id, with_for_update=True)
            if row is None:
                raise NotFound(f"schedule {ticket.schedule_name} was removed", "schedule_not_found")
            state = self._state(session, row.id, lock=True)
            horizon = state.trigger_keys_horizon
            if horizon is not None and (created_at is None or created_at < horizon):
                return None
            if once_per_prefix is not None and session.scalar(
                select(TriggerKey.id).where(
                    TriggerKey.schedule_id == row.id,
                    TriggerKey.dedupe_key.startswith(once_per_prefix, autoescape=True),
                )
            ):
                return None
            key = TriggerKey(schedule_id=row.id, dedupe_key=dedupe_key, created_at=now)
            if not _insert_once(session, key):
                return None
            run = _event_run(session, row, context, argv, status, reason, owner, now)
            key.run_id = run.id
            return _counted(state, row, run, context, now)

        return self.store.in_transaction(work)

    def settle_poll(self, ticket: PollTicket, outcome: PollOutcome, owner: str) -> None:
        """Record a pass's outcome and health facts; release the poll lease."""

        def work(session: Session) -> None:
            now = self.store.clock()
            state = self._state(session, ticket.schedule_id, lock=True)
            if outcome.polled:
                state.polls += 1
                state.last_poll_at = now
                state.last_http_status = outcome.http_status
                if outcome.error_reason is None:
                    state.last_healthy_poll_at = now
                    state.last_error_reason = None
                    state.last_error_message = None
                    state.consecutive_errors = 0
                    state.consecutive_auth_failures = 0
                    state.rate_limit_reset_at = None
                else:
                    state.last_error_reason = outcome.error_reason
                    state.last_error_message = outcome.error_message
                    state.consecutive_errors += 1
                    if outcome.error_reason == "auth_error":
                        state.consecutive_auth_failures += 1
                    if outcome.rate_limit_reset_at is not None:
                        state.rate_limit_reset_at = outcome.rate_limit_reset_at
            if outcome.not_modified:
                state.not_modified += 1
            if outcome.cursor_to is not None and (
                state.cursor_at is None or outcome.cursor_to > state.cursor_at
            ):
                state.cursor_at = outcome.cursor_to
            if outcome.held_batch is not None:
                state.held_batch = outcome.held_batch
            if outcome.refusals is not None:
                state.refusals = outcome.refusals
            if outcome.capped_counter is not None:
                state.poller_consecutive_cap_no_dispatch = outcome.capped_counter
            # Watermarks are forward-only, whatever a pass hands in.
            for name in ("pr_watermark", "comments_watermark"):
                moved = getattr(outcome, f"{name}_to")
                current = getattr(state, name)
                if moved is not None and (current is None or moved > current):
                    setattr(state, name, moved)
            if outcome.open_prs is not None:
                state.open_prs = sorted(outcome.open_prs)
            state.events_seen += outcome.events_seen
            state.excluded += outcome.excluded
            state.held += outcome.held
            state.updated_at = now
            row = session.get(Schedule, ticket.schedule_id, with_for_update=True)
            if row is not None and row.lease_owner == owner:
                row.lease_owner = None
                row.lease_until = None
            put_entries(session, outcome.etags)

        self.store.durable(lambda: self.store.in_transaction(work))

    def set_cursor(
        self, schedule_id: int, value: datetime | None, *, reason: str, operator: str
    ) -> tuple[datetime | None, ScheduleRun]:
        """An operator moves the cursor (either way); recorded in the run history."""

        def work(session: Session) -> tuple[datetime | None, ScheduleRun]:
            now = self.store.clock()
            row = session.get(Schedule, schedule_id, with_for_update=True)
            if row is None:
                raise NotFound(f"no schedule with id {schedule_id}", "schedule_not_found")
            state = self._state(session, schedule_id, lock=True)
            before = state.cursor_at
            state.cursor_at = value
            state.updated_at = now
            context = {
                "cursor_from": before.isoformat() if before else None,
                "cursor_to": value.isoformat() if value else None,
                "reason": reason,
                "operator": operator,
                "trigger": RunReason.CURSOR_SET.value,
            }
            run = ScheduleRun.begun(
                row.id,
                row.name,
                context,
                RunStatus.SUCCEEDED,
                now,
                reason=RunReason.CURSOR_SET.value,
            )
            session.add(run)
            session.flush()
            return before, run

        return self.store.in_transaction(work)

    def github_schedules(self) -> list[tuple[int, str, dict[str, Any]]]:
        """``(id, name, trigger_config)`` of every github_poll schedule."""
        return self.store.in_transaction(
            lambda s: [
                (r[0], r[1], dict(r[2] or {}))
                for r in s.execute(
                    select(Schedule.id, Schedule.name, Schedule.trigger_config).where(
                        Schedule.trigger_type == TriggerType.GITHUB_POLL
                    )
                )
            ]
        )
