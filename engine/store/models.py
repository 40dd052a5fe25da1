"""SQLAlchemy 2 typed ORM models: schedules, schedule runs, engine instances.

Every timestamp is timezone-aware UTC in Python. SQLite has no zone-aware type, so
:class:`UTCDateTime` stores naive UTC there and hands back aware values on read.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, TypedDict

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Dialect,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
    event,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from engine.store.enums import TERMINAL_STATUSES as TERMINAL_STATUSES

# The value sets live in engine.store.enums; importable from here as before.
from engine.store.enums import OverlapPolicy as OverlapPolicy
from engine.store.enums import RunReason as RunReason
from engine.store.enums import RunStatus as RunStatus
from engine.store.enums import TriggerType as TriggerType


def utcnow() -> datetime:
    """The current time, aware, in UTC, to the microsecond."""
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """An aware UTC datetime on every backend; naive values are refused on write."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTCDateTime column")
        value = value.astimezone(UTC)
        if dialect.name == "sqlite":
            return value.replace(tzinfo=None)
        return value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


class Base(DeclarativeBase):
    type_annotation_map = {datetime: UTCDateTime(), dict[str, Any]: JSON, list[str]: JSON}


class CommandFields(TypedDict):
    """What a schedule runs, as the keyword fields of a claim, a poll ticket and a spec."""

    command: str
    args: list[str]
    cwd: str | None
    timeout_seconds: int
    env_passthrough: list[str]


class Schedule(Base):
    __tablename__ = "schedules"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    trigger_type: Mapped[str] = mapped_column(String(20))
    cron_expr: Mapped[str | None] = mapped_column(String(200))
    timezone: Mapped[str | None] = mapped_column(String(64))
    interval_seconds: Mapped[int | None] = mapped_column(Integer)
    trigger_config: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    command: Mapped[str] = mapped_column(String(200))
    args: Mapped[list[str]] = mapped_column(JSON, default=list)
    cwd: Mapped[str | None] = mapped_column(Text)
    timeout_seconds: Mapped[int] = mapped_column(Integer, default=3600)
    max_runs: Mapped[int | None] = mapped_column(Integer)
    run_count: Mapped[int] = mapped_column(Integer, default=0)
    env_passthrough: Mapped[list[str]] = mapped_column(JSON, default=list)
    overlap: Mapped[str] = mapped_column(String(10), default=OverlapPolicy.SKIP.value)
    # Retry policy (issue 15): a failed run is tried again as a new attempt of its fire,
    # up to retry_max_attempts in all (1: never), after retry_backoff_seconds, doubling.
    retry_max_attempts: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    retry_backoff_seconds: Mapped[int] = mapped_column(Integer, default=30, server_default="30")
    managed_by: Mapped[str | None] = mapped_column(String(200))
    next_fire_at: Mapped[datetime | None] = mapped_column(index=True)
    last_fire_at: Mapped[datetime | None]
    lease_owner: Mapped[str | None] = mapped_column(String(64))
    lease_until: Mapped[datetime | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)
    # The change counter (``schedule_changes.version``) at this row's last definitional
    # change (engine.store.changes); the timer reloads only rows newer than it has seen.
    version: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0", index=True)

    def command_fields(self) -> CommandFields:
        """The command, its arguments, directory, timeout and passed-through variables."""
        return CommandFields(
            command=self.command,
            args=list(self.args or []),
            cwd=self.cwd,
            timeout_seconds=self.timeout_seconds,
            env_passthrough=list(self.env_passthrough or []),
        )


class ScheduleChanges(Base):
    """One row (id 1): a counter bumped by every definitional schedule change (issue 19).

    Fires do not bump it (they only move ``next_fire_at``), so engines claiming work
    never contend on this row; an idle timer sync reads only this row.
    """

    __tablename__ = "schedule_changes"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    version: Mapped[int] = mapped_column(BigInteger, default=0)


class ScheduleRemoval(Base):
    """A removed schedule at the counter value of its removal, so a sync drops its job."""

    __tablename__ = "schedule_removals"

    version: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    schedule_id: Mapped[int] = mapped_column(Integer)
    # When it was removed: a removal every engine has long synced is pruned (issue 19).
    removed_at: Mapped[datetime] = mapped_column(default=utcnow)


class ScheduleRun(Base):
    __tablename__ = "schedule_runs"
    __table_args__ = (
        Index("ix_schedule_runs_schedule_started", "schedule_id", "started_at"),
        Index("ix_schedule_runs_status", "status"),
        Index("ix_schedule_runs_schedule_pr", "schedule_id", "pr_number"),
        # Health and `li runs --schedule` select by name (runs outlive their schedule):
        # the newest runs of one schedule, and its runs in the 24 h window (issue 19).
        Index("ix_schedule_runs_name_id", "schedule_name", "id"),
        Index("ix_schedule_runs_name_started", "schedule_name", "started_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True)
    # Kept when the schedule is removed (SET NULL) so the history is never lost.
    schedule_id: Mapped[int | None] = mapped_column(ForeignKey("schedules.id", ondelete="SET NULL"))
    schedule_name: Mapped[str] = mapped_column(String(100))
    trigger_context: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    argv: Mapped[list[str] | None] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(20))
    reason: Mapped[str | None] = mapped_column(String(64))
    exit_code: Mapped[int | None] = mapped_column(Integer)
    pid: Mapped[int | None] = mapped_column(Integer)
    engine_id: Mapped[str | None] = mapped_column(String(64))
    started_at: Mapped[datetime] = mapped_column(default=utcnow)
    finished_at: Mapped[datetime | None]
    stdout_tail: Mapped[str] = mapped_column(Text, default="")
    stderr_tail: Mapped[str] = mapped_column(Text, default="")
    # One fire may take several attempts (a github_poll event re-offered after its run
    # was lost or never launched): ``fire_id`` is the id of the fire's first run row
    # (None on that first row itself), ``attempt`` counts from 1.
    attempt: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    fire_id: Mapped[int | None] = mapped_column(Integer)
    # The pull request of a github_poll fire (from its trigger context), for filtering.
    pr_number: Mapped[int | None] = mapped_column(Integer)

    @classmethod
    def begun(
        cls,
        schedule_id: int | None,
        schedule_name: str,
        context: dict[str, Any],
        status: RunStatus,
        now: datetime,
        *,
        owner: str | None = None,
        argv: list[str] | None = None,
        reason: str | None = None,
        stderr_tail: str = "",
        attempt: int = 1,
        fire_id: int | None = None,
    ) -> ScheduleRun:
        """A new run row started at ``now``: ``running``, or already finished at ``now``
        (a refusal, a recorded operator action), with empty output tails."""
        return cls(
            schedule_id=schedule_id,
            schedule_name=schedule_name,
            trigger_context=context,
            argv=argv,
            status=status.value,
            reason=reason,
            engine_id=owner,
            started_at=now,
            finished_at=None if status is RunStatus.RUNNING else now,
            stdout_tail="",
            stderr_tail=stderr_tail,
            attempt=attempt,
            fire_id=fire_id,
        )


class EngineInstance(Base):
    __tablename__ = "engine_instances"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    host: Mapped[str] = mapped_column(String(255))
    pid: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[datetime] = mapped_column(default=utcnow)
    heartbeat_at: Mapped[datetime] = mapped_column(default=utcnow)
    stopped_at: Mapped[datetime | None]
    # The last few iteration errors (newest last), so a failing loop is visible.
    last_errors: Mapped[list[str]] = mapped_column(JSON, default=list)


class HttpCacheEntry(Base):
    """The last 200 answer to a conditional GET, so a 304 can hand back what it meant.

    ``key`` is the full request URL plus a hash of the token identity (two tokens never
    share an entry: they may see different data). ``body`` is the parsed JSON body, cut
    down by the client to the fields it reads.
    """

    __tablename__ = "http_cache"

    key: Mapped[str] = mapped_column(String(500), primary_key=True)
    etag: Mapped[str] = mapped_column(String(200))
    body: Mapped[Any] = mapped_column(JSON, nullable=False)
    # The first page's rel="next" link, so a 304 still tells whether more pages existed.
    link_next: Mapped[str | None] = mapped_column(Text)
    fetched_at: Mapped[datetime]
    status: Mapped[int] = mapped_column(Integer)


class PollState(Base):
    """The poller's memory of one github_poll schedule: cursor, held batch, health."""

    __tablename__ = "poll_states"

    schedule_id: Mapped[int] = mapped_column(
        ForeignKey("schedules.id", ondelete="CASCADE"), primary_key=True
    )
    # Newest event time already handled; events strictly older are not offered again.
    cursor_at: Mapped[datetime | None]
    # Dispatchable events over the per-pass cap, fired first on later passes.
    held_batch: Mapped[list[Any]] = mapped_column(JSON, default=list)
    # Occurrence key -> refusals before launch (skipped after 3).
    refusals: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    last_poll_at: Mapped[datetime | None]
    last_healthy_poll_at: Mapped[datetime | None]
    last_http_status: Mapped[int | None] = mapped_column(Integer)
    last_error_reason: Mapped[str | None] = mapped_column(String(64))
    last_error_message: Mapped[str | None] = mapped_column(Text)
    rate_limit_reset_at: Mapped[datetime | None]
    consecutive_auth_failures: Mapped[int] = mapped_column(Integer, default=0)
    consecutive_errors: Mapped[int] = mapped_column(Integer, default=0)
    poller_consecutive_cap_no_dispatch: Mapped[int] = mapped_column(Integer, default=0)
    polls: Mapped[int] = mapped_column(Integer, default=0)
    not_modified: Mapped[int] = mapped_column(Integer, default=0)
    events_seen: Mapped[int] = mapped_column(Integer, default=0)
    dispatched: Mapped[int] = mapped_column(Integer, default=0)
    excluded: Mapped[int] = mapped_column(Integer, default=0)
    held: Mapped[int] = mapped_column(Integer, default=0)
    # Mention triggers (event "mentions"): forward-only watermarks of the pulls leg
    # (created_at) and of the comment feeds (updated_at), and the open pull request
    # numbers of the latest 200 from /pulls (None: unknown, the open-PR filter is off).
    pr_watermark: Mapped[datetime | None]
    comments_watermark: Mapped[datetime | None]
    open_prs: Mapped[list[Any] | None] = mapped_column(JSON)
    # Events whose run was lost or never launched, re-offered first on the next pass
    # (see engine.store.attempts): [{"run_id", "fire_id", "attempt", "context"}].
    retry_events: Mapped[list[Any]] = mapped_column(JSON, default=list)
    # Retention of trigger keys (engine.store.keyretention): an item created before this
    # never fires again, so its key may be pruned. Forward-only; None: none pruned yet.
    trigger_keys_horizon: Mapped[datetime | None]
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class TriggerKey(Base):
    """One fired trigger event (``mention``/``pr_opened``): unique per (schedule, dedupe
    key), inserted with its run row, so a re-classified item never fires twice."""

    __tablename__ = "trigger_keys"
    __table_args__ = (
        UniqueConstraint("schedule_id", "dedupe_key", name="uq_trigger_keys_schedule_key"),
        Index("ix_trigger_keys_created", "created_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True)
    schedule_id: Mapped[int] = mapped_column(ForeignKey("schedules.id", ondelete="CASCADE"))
    dedupe_key: Mapped[str] = mapped_column(String(300))
    run_id: Mapped[int | None] = mapped_column(ForeignKey("schedule_runs.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class PollClaim(Base):
    """One fired event: unique per (schedule, pull request, event time, head SHA).

    The head SHA is part of the key because GitHub stamps ``updated_at`` to the second:
    a push in the same second as an earlier event of the same pull request is a new
    event. ``head_sha`` is ``""`` for claims made before it was part of the key.
    """

    __tablename__ = "poll_claims"
    __table_args__ = (
        UniqueConstraint(
            "schedule_id", "pr_number", "occurred_at", "head_sha", name="uq_poll_claims_event"
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True)
    schedule_id: Mapped[int] = mapped_column(ForeignKey("schedules.id", ondelete="CASCADE"))
    pr_number: Mapped[int] = mapped_column(Integer)
    occurred_at: Mapped[datetime]
    head_sha: Mapped[str] = mapped_column(String(64), default="", server_default="")
    run_id: Mapped[int | None] = mapped_column(ForeignKey("schedule_runs.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class PollDecision(Base):
    """What one github_poll pass decided for one event it saw (see engine.poll.decisions).

    Unique per (schedule, pull request, event time, head SHA, decision): a decision
    repeated on a later pass (an event held twice, a boundary event excluded again) is
    stored once, with the time it was first taken. ``detail`` is the finer reason (the
    exclusion's own code, a refusal's message); ``run_id`` the run of a ``fired`` event.
    """

    __tablename__ = "poll_decisions"
    __table_args__ = (
        UniqueConstraint(
            "schedule_id",
            "pr_number",
            "occurred_at",
            "head_sha",
            "decision",
            name="uq_poll_decisions_event",
        ),
        Index("ix_poll_decisions_schedule_pr", "schedule_id", "pr_number"),
        Index("ix_poll_decisions_schedule_decided", "schedule_id", "decided_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True)
    schedule_id: Mapped[int] = mapped_column(ForeignKey("schedules.id", ondelete="CASCADE"))
    pr_number: Mapped[int] = mapped_column(Integer)
    occurred_at: Mapped[datetime]
    head_sha: Mapped[str] = mapped_column(String(64), default="")
    decision: Mapped[str] = mapped_column(String(80))
    detail: Mapped[str | None] = mapped_column(String(200))
    run_id: Mapped[int | None] = mapped_column(Integer)
    decided_at: Mapped[datetime] = mapped_column(default=utcnow)


@event.listens_for(ScheduleRun, "before_insert")
def _run_pr_number(_mapper: Any, _connection: Any, run: ScheduleRun) -> None:
    """A run whose trigger context names a pull request carries its number (indexed)."""
    if run.pr_number is None and isinstance(run.trigger_context, dict):
        number = run.trigger_context.get("pr_number")
        if isinstance(number, int) and not isinstance(number, bool):
            run.pr_number = number
