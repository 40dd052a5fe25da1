"""The daemon's timer: one APScheduler job per enabled schedule, timed at its next fire.

Why it is built this way: docs/decisions.md D12.

A job only *tries* to fire (through the ``fire`` callable the engine gives): the
database claim decides (lease + due check), so several engines on PostgreSQL never fire
one occurrence twice. On PostgreSQL (``batched``) cron and interval schedules get no job
here: the engine's dispatcher (engine.run.dispatch) claims them in disjoint batches, and
the timer only wakes it when the table changed. After each fire a job follows the table
again. A schedule still due after a fire is held by another engine: its job backs off
with jitter instead of retrying at once. Upkeep jobs (sync, heartbeat, recovery) run at
fixed intervals on executors of their own.

:meth:`Timer.sync` is incremental (issue 19): it reads the schedule change counter
(engine.store.changes; one row) and, only when it moved, the rows changed or removed
since the version it saw. Fires do not move the counter: the engine that fires re-times
its own job, and a job fired elsewhere re-reads its row when it comes due.

Every job body records its errors through ``record_error`` and never raises.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.date import DateTrigger
from apscheduler.triggers.interval import IntervalTrigger

from engine.config import Settings
from engine.store.models import ScheduleRun, TriggerType
from engine.store.retrying import Backoff
from engine.store.store import Claim, Store

# A missed timer (the process was busy or asleep) still fires up to this late.
MISFIRE_GRACE_SECONDS = 3600
SYNC_JOB_ID = "__sync__"
HEARTBEAT_JOB_ID = "__heartbeat__"
RECOVERY_JOB_ID = "__recovery__"

Fire = Callable[[int, Callable[[Claim], None] | None, str | None], ScheduleRun | None]
RecordError = Callable[[str, BaseException], None]


class Timer:
    """The APScheduler side of one engine; :meth:`start` builds the scheduler."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        fire: Fire,
        stopping: threading.Event,
        record_error: RecordError,
        *,
        batched: bool = False,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        self.settings = settings
        # On PostgreSQL cron/interval work is claimed in batches (engine.run.dispatch).
        self.batched = batched
        self._on_change = on_change
        self.store = store
        self._fire = fire
        self._stopping = stopping
        self._record_error = record_error
        self.scheduler: BackgroundScheduler | None = None
        # The schedule change counter at the last sync (None: load everything).
        self._version: int | None = None
        # Waits on a schedule another engine holds back off, with jitter (no busy loop).
        self._backoff = Backoff(initial=1.0, maximum=30.0)

    def start(self) -> BackgroundScheduler:
        """A running scheduler with no jobs yet: actions, polls (``Settings.poll_threads``),
        default and upkeep pools."""
        scheduler = BackgroundScheduler(
            timezone=UTC,
            executors={
                "actions": ThreadPoolExecutor(self.settings.max_concurrent_actions),
                "polls": ThreadPoolExecutor(self.settings.poll_threads),
                "default": ThreadPoolExecutor(2),
                "upkeep": ThreadPoolExecutor(1),
            },
        )
        self.scheduler = scheduler
        scheduler.start()
        return scheduler

    def every(
        self, job_id: str, work: Callable[[], object], seconds: float, executor: str = "default"
    ) -> None:
        """Run ``work`` every ``seconds``; one instance at a time, missed runs coalesced."""
        assert self.scheduler is not None
        self.scheduler.add_job(
            work,
            IntervalTrigger(seconds=seconds),
            id=job_id,
            executor=executor,
            coalesce=True,
            max_instances=1,
            misfire_grace_time=None,
        )

    def _job_kwargs(self, trigger_type: str) -> dict[str, Any]:
        # Overlap is decided by the database lease, not by APScheduler: an instance
        # skipped by max_instances would leave the schedule un-timed and unrecorded.
        polls = trigger_type == TriggerType.GITHUB_POLL
        return {
            "misfire_grace_time": MISFIRE_GRACE_SECONDS,
            "coalesce": True,
            "max_instances": self.settings.max_concurrent_actions,
            "executor": "polls" if polls else "actions",
            "replace_existing": True,
        }

    def time_job(self, schedule_id: int, next_fire_at: datetime | None, trigger_type: str) -> None:
        """Time (or drop, for None) the job of one schedule."""
        scheduler = self.scheduler
        if scheduler is None or self._stopping.is_set():
            return
        job_id = str(schedule_id)
        if self.batched and trigger_type != TriggerType.GITHUB_POLL:
            next_fire_at = None  # the dispatcher claims it
        if next_fire_at is None:
            if scheduler.get_job(job_id) is not None:
                scheduler.remove_job(job_id)
            return
        run_at = max(next_fire_at, datetime.now(UTC))
        job = scheduler.get_job(job_id)
        if job is not None and job.next_run_time == run_at:
            return
        scheduler.add_job(
            self._fire_job,
            trigger=DateTrigger(run_date=run_at, timezone=UTC),
            id=job_id,
            args=[schedule_id, trigger_type],
            **self._job_kwargs(trigger_type),
        )

    def _fire_job(self, schedule_id: int, trigger_type: str) -> None:
        def retime(claim: Claim) -> None:
            timing = self.store.timing_of(claim.schedule_id)
            if timing is not None:
                self.time_job(claim.schedule_id, *timing)

        run = self._fire(schedule_id, retime, trigger_type)
        if run is not None and run.status != "refused":
            self._backoff.reset(schedule_id)
            return
        # A poll pass, or not ours (another engine fired it, or it was edited):
        # follow the table.
        try:
            timing = self.store.timing_of(schedule_id)
            if timing is None:
                self.time_job(schedule_id, None, trigger_type)
                return
            next_fire_at, kind = timing
            if next_fire_at is not None and next_fire_at <= datetime.now(UTC):
                # Still due: another engine holds it (a slow poll, a long run).
                # Back off with jitter instead of retrying at once.
                delay = self._backoff.next_delay(schedule_id)
                next_fire_at = datetime.now(UTC) + timedelta(seconds=delay)
            else:
                self._backoff.reset(schedule_id)
            self.time_job(schedule_id, next_fire_at, kind)
        except Exception as exc:
            self._record_error(f"re-timing schedule {schedule_id}", exc)

    def sync(self, force: bool = False) -> None:
        """Follow the database's schedule changes since the last sync (see module doc)."""
        if self._stopping.is_set():
            return
        try:
            if force or self._version is None:
                self._reload()
            else:
                self._follow_changes(self._version)
        except Exception as exc:
            self._record_error("sync", exc)

    def _reload(self) -> None:
        """Every job from the whole timetable (start, or when asked)."""
        # The counter first: a change made while the table is read is read again later.
        version = self.store.schedule_version()
        table = self.store.timetable()
        scheduler = self.scheduler
        if scheduler is None:
            return
        for job in scheduler.get_jobs():
            if job.id.isdigit() and int(job.id) not in table:
                scheduler.remove_job(job.id)
        for schedule_id, (next_fire_at, trigger_type) in table.items():
            self.time_job(schedule_id, next_fire_at, trigger_type)
        self._version = version
        self._changed()

    def _follow_changes(self, seen: int) -> None:
        """O(1) when nothing changed; otherwise only the changed and removed rows."""
        if self.store.schedule_version() == seen:
            return
        changes = self.store.schedule_changes(seen)
        for schedule_id in changes.removed:
            self.time_job(schedule_id, None, TriggerType.INTERVAL)
        for timing in changes.changed:
            self.time_job(timing.schedule_id, timing.next_fire_at, timing.trigger_type)
        self._version = changes.version
        self._changed()

    def _changed(self) -> None:
        if self._on_change is not None:
            self._on_change()
