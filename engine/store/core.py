"""What every part of the store shares: the transaction plumbing and the row rules.

:class:`StoreBase` owns the database handle and the clock. Its public
:meth:`StoreBase.transaction` is the one way in: a session inside one transaction,
with database errors translated to :class:`engine.errors.LiError` (``conflict`` for a
unique-key clash, engine.store.db's codes for the rest). The parts of
:class:`engine.store.store.Store` (schedules, firing, engines) and
:class:`engine.store.pollstore.PollStore` all write through it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import TypeVar

from sqlalchemy import ColumnElement, Engine, event, select
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import InstrumentedAttribute, Session, sessionmaker

from engine.errors import Conflict, LiError, NotFound
from engine.schedules.spec import next_fire_time
from engine.store.changes import stamp_changes
from engine.store.db import translate_db_error
from engine.store.enums import TriggerType
from engine.store.models import PollState, Schedule, utcnow
from engine.store.retrying import DB_RETRY_SECONDS, durable_write

T = TypeVar("T")

# Every session, whoever opens it, stamps schedule changes (engine.store.changes).
if not event.contains(Session, "before_flush", stamp_changes):
    event.listen(Session, "before_flush", stamp_changes)


class StoreBase:
    """A database, a clock, and transactions over them."""

    def __init__(
        self,
        engine: Engine,
        clock: Callable[[], datetime] = utcnow,
        *,
        write_retry_seconds: float = DB_RETRY_SECONDS,
    ) -> None:
        self.engine = engine
        self.clock = clock
        # How long durable writes (engine.store.retrying) retry across a database outage.
        self.write_retry_seconds = write_retry_seconds
        self._sessions = sessionmaker(engine, expire_on_commit=False)

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """A session in one transaction: committed when the block ends, rolled back when
        it raises. Database errors leave as LiError (``conflict`` or engine.store.db's)."""
        try:
            with self._sessions() as session, session.begin():
                yield session
        except LiError:
            raise
        except IntegrityError as exc:
            raise Conflict(
                f"conflicting change: {str(exc.orig).splitlines()[0]}", "conflict"
            ) from None
        except SQLAlchemyError as exc:
            raise translate_db_error(exc, self.engine) from None

    def in_transaction(self, work: Callable[[Session], T]) -> T:
        """``work(session)`` inside :meth:`transaction`; its result."""
        with self.transaction() as session:
            return work(session)

    def durable(self, work: Callable[[], T]) -> T:
        """``work()`` retried across a short database outage (engine.store.retrying)."""
        return durable_write(work, within=self.write_retry_seconds)


def schedule_by_name(session: Session, name: str, *, lock: bool = False) -> Schedule:
    """The schedule row named ``name``; ``schedule_not_found`` otherwise."""
    query = select(Schedule).where(Schedule.name == name)
    if lock:
        query = query.with_for_update()
    row = session.scalars(query).one_or_none()
    if row is None:
        raise NotFound(f"no schedule named {name!r}", "schedule_not_found")
    return row


def _poll_interval(row: Schedule) -> int | None:
    if row.trigger_type == TriggerType.GITHUB_POLL:
        value = (row.trigger_config or {}).get("poll_interval_seconds", 120)
        return int(value) if isinstance(value, int) else 120
    return row.interval_seconds


def compute_next_fire(
    row: Schedule, *, previous: datetime | None, now: datetime
) -> datetime | None:
    """Next due time for ``row`` after ``now``; None once ``max_runs`` is reached."""
    if row.max_runs is not None and row.run_count >= row.max_runs:
        return None
    return next_fire_time(
        row.trigger_type,
        cron=row.cron_expr,
        timezone=row.timezone,
        interval_seconds=_poll_interval(row),
        previous=previous,
        now=now,
    )


def seed_poll_state(session: Session, row: Schedule, now: datetime) -> None:
    """Create the poll state of a new github_poll schedule (after ``row`` is flushed).

    The cursor starts at ``now`` so the open backlog is not fired, unless the schedule
    asks for ``backfill`` (then every open pull request is an event).
    """
    if row.trigger_type != TriggerType.GITHUB_POLL:
        return
    backfill = bool((row.trigger_config or {}).get("backfill"))
    # GitHub stamps to the second: a cursor with microseconds would pass over a pull
    # request updated earlier in the same second.
    session.add(
        PollState(
            schedule_id=row.id,
            cursor_at=None if backfill else now.replace(microsecond=0),
            held_batch=[],
            refusals={},
            updated_at=now,
        )
    )


def count_boundary(
    session: Session, row_id: InstrumentedAttribute[int], scope: ColumnElement[bool], keep: int
) -> int | None:
    """The id of the newest row in ``scope`` past its ``keep`` newest (ids grow with
    time): rows with an id at or below it are beyond a bound of ``keep`` rows. None when
    ``scope`` holds ``keep`` rows or fewer."""
    boundary: int | None = session.scalar(
        select(row_id).where(scope).order_by(row_id.desc()).offset(keep).limit(1)
    )
    return boundary
