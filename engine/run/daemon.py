"""The engine process: APScheduler timing over database leases; ``li engine run [--once]``.

Why it is built this way: docs/decisions.md D12.

Lifecycle (docs/engine.md has the long form):

1. Start: on SQLite take an exclusive file lock beside the database (a second engine
   is refused with ``engine_already_running``); on PostgreSQL refuse a schema that is
   not at head. Register an ``engine_instances`` row and resolve runs orphaned by dead
   engines (:meth:`engine.store.store.Store.recover_orphans`).
2. Run: one APScheduler job per enabled schedule, timed at its ``next_fire_at``. A job
   only *tries* to fire: the database claim decides (lease + due check), so several
   engines on PostgreSQL never fire one occurrence twice. A sync job re-reads the
   timetable when another process changed it; a heartbeat job refreshes our row. The
   timing lives in :mod:`engine.run.timer`; this module is the process around it.
3. Stop (SIGTERM/SIGINT): take no new work, hand claimed events that have not launched
   back in one transaction (re-offered on the next pass), give running actions
   ``shutdown_grace`` (``--drain-timeout``) to finish, then terminate them; they are
   recorded as ``cancelled`` and github_poll events are offered again.

Every job body is wrapped so an error is logged, kept on the engine row, and the loop
goes on: the daemon never dies silently.
"""

from __future__ import annotations

import collections
import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future, wait
from concurrent.futures import ThreadPoolExecutor as FuturesPool
from datetime import datetime, timedelta

from apscheduler.schedulers.background import BackgroundScheduler

from engine.config import Settings
from engine.errors import LiError
from engine.github.client import GitHubClient, github_client
from engine.github.etag import SqlEtagCache
from engine.github.installations import InstallationRouter
from engine.poll.pollpass import PassReport, poll_once
from engine.run.actions import execute_claim, fire_schedule
from engine.run.dispatch import Dispatcher
from engine.run.inflight import Inflight
from engine.run.lanes import PollLanes
from engine.run.metrics import record_poll
from engine.run.presence import EngineLock
from engine.run.runbook import RunBook
from engine.run.timer import HEARTBEAT_JOB_ID, RECOVERY_JOB_ID, SYNC_JOB_ID, Timer
from engine.store import db as dbmod
from engine.store.models import RunStatus, ScheduleRun, TriggerType
from engine.store.pollstore import PollStore, PollTicket
from engine.store.retention import Pruned, RunRetention, prune
from engine.store.store import Claim, FinishedRun, Store

RETENTION_JOB_ID = "__retention__"
log = logging.getLogger(__name__)


class Engine:
    """One engine process. Construct, then :meth:`run_once` or :meth:`run_forever`."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        clock: Callable[[], datetime] | None = None,
        github: GitHubClient | None = None,
        router: InstallationRouter | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.polls = PollStore(store)
        self._github = github
        self._github_lock = threading.Lock()
        self._router = router
        # One slot per running command, shared by cron/interval fires and poll events.
        self._slots = threading.BoundedSemaphore(settings.max_concurrent_actions)
        self._event_pool = FuturesPool(
            max_workers=settings.max_concurrent_actions, thread_name_prefix="li-event"
        )
        self._event_futures: list[Future[ScheduleRun | None]] = []
        self._event_futures_lock = threading.Lock()
        self.clock = clock or store.clock
        self.engine_id = f"engine-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self._lanes = PollLanes(settings.poll_threads, self.polls, self.engine_id)
        self.errors: collections.deque[str] = collections.deque(maxlen=10)
        self._lock: EngineLock | None = None
        self._stopping = threading.Event()
        # Held while a retention prune runs, so a stop waits for it (its connection).
        self._pruning = threading.Lock()
        self._inflight = Inflight()
        self.recovered: list[ScheduleRun] = []
        self.book = RunBook()
        # PostgreSQL: cron/interval work is claimed in disjoint batches (engine.run.dispatch);
        # SQLite (one engine by design) keeps one timer job per schedule.
        self.batched = store.engine.dialect.name == "postgresql"
        # Claimed batch work runs here with the slot the dispatcher took for it.
        self._claim_pool = FuturesPool(
            max_workers=settings.max_concurrent_actions, thread_name_prefix="li-claim"
        )
        self._dispatcher = Dispatcher(
            store,
            self.engine_id,
            self._slots,
            self._launch_claimed,
            batch_size=settings.max_concurrent_actions,
            idle_seconds=settings.sync_interval_seconds or 1.0,
            kill_grace_seconds=settings.kill_grace_seconds,
            stopping=self._stopping,
            record_error=self._record_error,
        )
        self._timer = Timer(
            settings,
            store,
            self.fire,
            self._stopping,
            self._record_error,
            batched=self.batched,
            on_change=self._dispatcher.wake if self.batched else None,
        )

    # -- start and stop -------------------------------------------------------------

    def start(self) -> None:
        """Checks, single-engine lock, registration and orphan recovery."""
        path = dbmod.sqlite_path(self.settings.database_url)
        if path is not None:
            self._lock = EngineLock(path)
            self._lock.acquire()
        try:
            dbmod.require_head(self.store.engine)
            others = self.store.live_engine_ids(self._stale_after)
            self.store.register_engine(self.engine_id, socket.gethostname(), os.getpid())
            self.recovered = self.store.recover_orphans(others | {self.engine_id})
            for run in self.recovered:
                log.warning(
                    "run %s of %s was left running by a dead engine: %s",
                    run.id,
                    run.schedule_name,
                    run.reason,
                )
            if others and path is None:
                log.info("%d other engine(s) are live; leases keep fires exclusive", len(others))
        except BaseException:
            self._release_lock()
            raise

    @property
    def _stale_after(self) -> timedelta:
        return timedelta(seconds=self.settings.heartbeat_interval_seconds * 3)

    def _release_lock(self) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def close(self) -> None:
        """Wait for launched events, mark this engine stopped (releasing its leases) and
        free the file lock."""
        try:
            self._claim_pool.shutdown(wait=True)
            self._event_pool.shutdown(wait=True)
            self.store.stop_engine(self.engine_id)
        finally:
            self._lanes.shutdown()
            for client in (self._github, self._router):
                if client is not None:
                    client.close()
            self._release_lock()

    @property
    def github(self) -> GitHubClient:
        """The process's GitHub client (ETags in the database, one pacer per token)."""
        # Poll threads ask for it concurrently: build exactly one (issue 19: start() no
        # longer builds it to drop ETags, so the first use may be on any thread).
        with self._github_lock:
            if self._github is None:
                self._github = github_client(self.settings, SqlEtagCache(self.store.engine))
            return self._github

    @property
    def router(self) -> InstallationRouter | None:
        """Each repository's App installation and client, with GITHUB_APP_INSTALLATIONS."""
        app = self.settings.github_app
        with self._github_lock:
            if self._router is None and app is not None and app.many:
                self._router = InstallationRouter(
                    app, self.settings, cache=SqlEtagCache(self.store.engine)
                )
            return self._router

    def request_stop(self) -> None:
        """Stop taking new work (safe to call from a signal handler)."""
        self._stopping.set()

    # -- one unit of work -----------------------------------------------------------

    def _record_error(self, where: str, exc: BaseException) -> None:
        message = f"{where}: {exc}"
        self.errors.append(message)
        log.error("%s", message, exc_info=not isinstance(exc, LiError))
        try:
            self.store.record_engine_error(self.engine_id, message)
        except LiError:
            log.exception("could not record the engine error")

    def fire(
        self,
        schedule_id: int,
        on_claimed: Callable[[Claim], None] | None = None,
        trigger_type: str | None = None,
    ) -> ScheduleRun | None:
        """Try to fire one schedule; errors are recorded, never raised.

        A github_poll schedule runs a poll pass instead; its events are launched in the
        background (see :meth:`poll`) and None is returned.
        """
        if self._stopping.is_set():
            return None
        if trigger_type == TriggerType.GITHUB_POLL:
            if self.router:  # one lane per App installation (engine.run.lanes)
                self._lanes.queue(self.router, schedule_id, self._run_pass, self._record_error)
            else:
                self.poll(schedule_id)
            return None
        claimed: list[int] = []

        def note(claim: Claim) -> None:
            claimed.append(claim.run_id)
            self.book.started(claim.run_id)
            if on_claimed is not None:
                on_claimed(claim)

        with self._inflight.track() as cancel:
            try:
                with self._slots:
                    return fire_schedule(
                        self.store,
                        self.settings,
                        schedule_id,
                        self.engine_id,
                        cancel=cancel,
                        on_claimed=note,
                        finish=self._finish,
                    )
            except Exception as exc:
                self._record_error(f"fire of schedule {schedule_id}", exc)
                return None
            finally:
                for run_id in claimed:
                    self.book.ended(run_id)

    def _finish(self, run_id: int, result: FinishedRun) -> None:
        self.book.finish(self.store, run_id, result, self.engine_id)

    def poll(self, schedule_id: int, *, manual: bool = False) -> PassReport | None:
        """One poll pass of a github_poll schedule (None: not due or polled elsewhere)."""
        try:
            ticket = self.polls.claim_poll(schedule_id, self.engine_id, manual=manual)
            if ticket is None:
                return None
            route = self._lanes.route(self.router, ticket) if self.router else None
            if self.router and route is None:
                return None
            return self._run_pass(ticket, route.client if route else self.github)
        except Exception as exc:
            self._record_error(f"poll of schedule {schedule_id}", exc)
            return None

    def _run_pass(self, ticket: PollTicket, client: GitHubClient) -> PassReport:
        report = poll_once(
            self.polls, self.settings, client, ticket, self.engine_id, launch=self.launch_event
        )
        if report.polled or report.status != "ok":
            record_poll(report.schedule_name, report.status)
        return report

    def launch_event(self, claim: Claim) -> bool | None:
        """Run a claimed event's command in the background (under the global cap).

        Until it gets a slot the claim is pending: a stop hands it back unlaunched
        (False). None: queued; the run's exit code confirms the launch.
        """
        self.book.add_pending(claim)
        if self._stopping.is_set():
            self._release_pending()
            return False
        future = self._event_pool.submit(self._run_event, claim)
        with self._event_futures_lock:
            if self._timer.scheduler is not None:
                # As a daemon nobody collects results: keep only what is still running.
                self._event_futures = [f for f in self._event_futures if not f.done()]
            self._event_futures.append(future)
        return None

    def _launch_claimed(self, claim: Claim) -> None:
        """Run a batch-claimed fire (engine.run.dispatch) on the slot taken for it.

        Until it starts it is pending like an event: a stop hands it back unlaunched.
        """
        self.book.add_pending(claim)
        try:
            self._claim_pool.submit(self._run_claimed, claim)
        except RuntimeError:  # the pool is shut down: we are stopping
            self._slots.release()
            self._release_pending()

    def _run_claimed(self, claim: Claim) -> None:
        try:
            if self._stopping.is_set():
                self._release_pending()
            if self.book.take_pending(claim.run_id) is None:
                return  # handed back by a stop
            with self._inflight.track() as cancel:
                self._execute(claim, cancel, [claim.run_id])
        finally:
            self._slots.release()

    def _run_event(self, claim: Claim) -> ScheduleRun | None:
        with self._slots:
            if self.book.take_pending(claim.run_id) is None:
                return None  # handed back by a stop before it got a slot
            attempts = [claim.run_id]
            with self._inflight.track() as cancel:
                if not self._execute(claim, cancel, attempts):
                    return None
        try:
            return self.store.get_run(attempts[-1])
        except LiError:
            return None

    def _execute(self, claim: Claim, cancel: threading.Event, attempts: list[int]) -> bool:
        """One claimed event to its end; False when an error ended it (recorded as the
        last attempt's end)."""
        try:
            # Its outcome goes through the run book: never raises for the write.
            execute_claim(
                self.store,
                self.settings,
                claim,
                self.engine_id,
                cancel=cancel,
                finish=self._finish,
                on_attempt=attempts.append,
            )
        except Exception as exc:
            self._record_error(f"event run {attempts[-1]} of {claim.schedule_name}", exc)
            self._finish(
                attempts[-1],
                FinishedRun(status=RunStatus.FAILED, reason="engine_error", stderr_tail=str(exc)),
            )
            return False
        finally:
            self.book.ended(claim.run_id)
        return True

    def _release_pending(self) -> None:
        try:
            self.book.release_pending(self.store, self.engine_id)
        except Exception as exc:
            self._record_error("handing back unlaunched claims", exc)

    def wait_for_events(self) -> list[ScheduleRun]:
        """Wait for every launched event run; their final run rows."""
        with self._event_futures_lock:
            futures, self._event_futures = self._event_futures, []
        wait(futures)
        return [run for f in futures if (run := f.result()) is not None]

    def run_once(self) -> list[ScheduleRun]:
        """Fire everything due now (polls included), wait for every launched command.

        At most ``max_concurrent_actions`` commands run at once, and at most
        ``poll_threads`` (``LI_POLL_THREADS``) poll passes, as in the daemon.
        """
        due = self.store.due_schedules(self.clock())
        results: list[ScheduleRun] = []
        with (
            FuturesPool(
                max_workers=self.settings.max_concurrent_actions + 2,
                thread_name_prefix="li-once",
            ) as pool,
            FuturesPool(
                max_workers=self.settings.poll_threads, thread_name_prefix="li-once-poll"
            ) as polls,
        ):
            futures = [
                (polls if item.trigger_type == TriggerType.GITHUB_POLL else pool).submit(
                    self.fire, item.id, None, item.trigger_type
                )
                for item in due
            ]
            wait(futures)
        for future in futures:
            run = future.result()
            if run is not None:
                results.append(run)
        results.extend(self.wait_for_events())
        return results

    # -- the daemon -----------------------------------------------------------------

    def sync(self, force: bool = False) -> None:
        """Rebuild the timer from the database when anything changed there."""
        self._timer.sync(force)

    def _heartbeat(self) -> None:
        try:
            self.store.heartbeat(self.engine_id)
        except Exception as exc:
            self._record_error("heartbeat", exc)

    def _recover(self) -> None:
        """Recovery on every loop, not only at start: orphans of gone engines
        (engine.store.recovery) and this engine's own unrecorded or stray runs (engine.run.runbook).
        Its own job and thread, so a slow database never delays the heartbeat."""
        try:
            live = self.store.live_engine_ids(self._stale_after) | {self.engine_id}
            for run in self.store.recover_orphans(live):
                log.warning(
                    "run %s of %s was left running by a gone engine: %s",
                    run.id,
                    run.schedule_name,
                    run.reason,
                )
            self.book.repair(self.store, self.engine_id)
        except Exception as exc:
            self._record_error("recovery", exc)

    def prune(self) -> Pruned | None:
        """Retention (engine.store.retention), hourly in the background; quiet when idle."""
        policy = RunRetention(
            keep_days=self.settings.runs_keep_days,
            keep_per_schedule=self.settings.runs_keep_per_schedule,
            keys_keep_days=self.settings.trigger_keys_keep_days,
        )
        try:
            with self._pruning:
                if self._stopping.is_set():
                    return None
                done = prune(self.store.in_transaction, policy, self.store.clock())
        except Exception as exc:
            self._record_error("retention", exc)
            return None
        if done:
            log.info("retention pruned %s", done.summary())
        return done

    @property
    def _scheduler(self) -> BackgroundScheduler | None:
        """The running APScheduler (None unless :meth:`run_forever` is running)."""
        return self._timer.scheduler

    def run_forever(self, stop: threading.Event | None = None) -> None:
        """Run until ``stop`` is set or :meth:`request_stop` is called; then drain."""
        scheduler = self._timer.start()
        self.sync(force=True)
        if self.batched:
            self._dispatcher.start()
        heartbeat = self.settings.heartbeat_interval_seconds
        self._timer.every(SYNC_JOB_ID, self.sync, self.settings.sync_interval_seconds)
        self._timer.every(HEARTBEAT_JOB_ID, self._heartbeat, heartbeat)
        self._timer.every(RECOVERY_JOB_ID, self._recover, heartbeat, executor="upkeep")
        retention = self.settings.retention_interval_seconds
        self._timer.every(RETENTION_JOB_ID, self.prune, retention, executor="upkeep")
        log.info("engine %s running", self.engine_id)
        while not self._stopping.is_set():
            if stop is not None and stop.is_set():
                self._stopping.set()
                break
            self._stopping.wait(0.2)
        self._drain(scheduler)

    def _drain(self, scheduler: BackgroundScheduler) -> None:
        # shutdown(wait=True) would hold APScheduler's job-store lock while waiting for
        # jobs, and a job touching the scheduler (sync, re-timing) would deadlock on it.
        # So: stop the scheduler without waiting, then wait for our own actions.
        self._stopping.set()
        scheduler.shutdown(wait=False)
        if self._pruning.acquire(timeout=self.settings.shutdown_grace_seconds):
            self._pruning.release()  # no prune runs now, and none starts after the stop
        self._dispatcher.join(timeout=30)
        # Claimed but not launched: back to the queue, in one transaction.
        self._release_pending()
        if not self._inflight.wait(self.settings.shutdown_grace_seconds):
            count = self._inflight.cancel_all()
            log.warning("cancelling %d running action(s) after the shutdown grace", count)
            self._inflight.wait(self.settings.kill_grace_seconds + 10)
        self._timer.scheduler = None
