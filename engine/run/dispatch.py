"""Batch dispatch: how engines on PostgreSQL share cron and interval work (issue 19).

With one APScheduler job per schedule in every engine, all engines woke for every due
occurrence and raced for it, so a second engine added CPU, not fires. On PostgreSQL the
daemon instead runs one dispatcher thread per engine: it takes as many free action slots
as it can (up to the batch size), claims that many due occurrences in one transaction
(:meth:`engine.store.firing.FiringStore.claim_due`: oldest first, ``FOR UPDATE SKIP
LOCKED``, so engines take disjoint batches) and hands each claim to the engine with its
slot. A full batch means more may be due: it claims again at once. Otherwise it sleeps
until the earliest ``next_fire_at`` (one index read), at most the sync interval, or until
:meth:`Dispatcher.wake` (the timer saw a schedule change).

SQLite runs one engine by design (docs/engine.md) and keeps the per-schedule jobs.
github_poll schedules keep their jobs on both backends (their pass has its own claim).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime

from engine.store.firing import Claim
from engine.store.store import Store

# How long one wait for a free action slot lasts before the stop flag is looked at again.
SLOT_WAIT_SECONDS = 0.2
# After an error, wait this long before claiming again (no busy loop on a dead database).
ERROR_PAUSE_SECONDS = 1.0
# A due row left after a short batch is being claimed by another engine right now (its
# lock was skipped): look again after this pause rather than spinning on it.
SKIPPED_ROW_PAUSE_SECONDS = 0.02

Launch = Callable[[Claim], None]
RecordError = Callable[[str, BaseException], None]


class Dispatcher:
    """One engine's claiming thread (see module doc). ``launch`` owns the slot it gets."""

    def __init__(
        self,
        store: Store,
        owner: str,
        slots: threading.BoundedSemaphore,
        launch: Launch,
        *,
        batch_size: int,
        idle_seconds: float,
        kill_grace_seconds: float,
        stopping: threading.Event,
        record_error: RecordError,
    ) -> None:
        self.store = store
        self.owner = owner
        self._slots = slots
        self._launch = launch
        self.batch_size = max(1, batch_size)
        self.idle_seconds = max(0.05, idle_seconds)
        self._grace = kill_grace_seconds
        self._stopping = stopping
        self._record_error = record_error
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self.claimed = 0

    def start(self) -> None:
        """Start the claiming thread."""
        self._thread = threading.Thread(target=self._loop, name="li-dispatch", daemon=True)
        self._thread.start()

    def wake(self) -> None:
        """Look for due work now (a schedule was added or changed)."""
        self._wake.set()

    def join(self, timeout: float) -> None:
        """Wait for the thread to end (call after setting the stop flag)."""
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _loop(self) -> None:
        while not self._stopping.is_set():
            try:
                full = self.round()
            except Exception as exc:
                self._record_error("claiming due schedules", exc)
                self._stopping.wait(ERROR_PAUSE_SECONDS)
                continue
            if full is None or full:
                continue  # no free slot yet, or a full batch: more may be due
            self._sleep()

    def _take_slots(self) -> int:
        if not self._slots.acquire(timeout=SLOT_WAIT_SECONDS):
            return 0
        held = 1
        while held < self.batch_size and self._slots.acquire(blocking=False):
            held += 1
        return held

    def round(self) -> bool | None:
        """Claim once: None when no slot was free, else whether the batch was full."""
        held = self._take_slots()
        if held == 0:
            return None
        passed = 0
        try:
            if self._stopping.is_set():
                return False
            claims = self.store.claim_due(self.owner, held, kill_grace_seconds=self._grace)
            for claim in claims:
                if isinstance(claim, Claim):
                    passed += 1
                    self._launch(claim)
            self.claimed += len(claims)
            return len(claims) == held
        finally:
            for _ in range(held - passed):
                self._slots.release()

    def _sleep(self) -> None:
        self._wake.clear()
        delay = self.idle_seconds
        next_due = self.store.next_due_at()
        if next_due is not None:
            until = (next_due - self._now()).total_seconds()
            delay = min(delay, max(SKIPPED_ROW_PAUSE_SECONDS, until))
        self._wake.wait(delay)

    def _now(self) -> datetime:
        return self.store.clock()
