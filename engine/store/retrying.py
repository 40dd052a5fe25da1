"""Retries across a short database outage, and backoff with jitter for idle waits.

Writes that must not be lost - finishing a run, settling a poll pass (cursor, held
batch, claims' outcome), releasing unlaunched claims, recovering orphans - go through
:func:`durable_write`: a transient database error (SQLite locked past its busy timeout,
PostgreSQL restarting or unreachable) is retried with exponential backoff and jitter for
up to ``DB_RETRY_SECONDS``. What still fails is raised; the daemon keeps the outcome in
memory and repairs it on its next loop (engine.run.daemon).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from typing import TypeVar

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_delay,
    wait_exponential,
    wait_random,
)

from engine.errors import DatabaseError

log = logging.getLogger(__name__)

T = TypeVar("T")

# How long a durable write keeps trying across an outage before it gives up.
DB_RETRY_SECONDS = 30.0
TRANSIENT_REASONS = frozenset({"database_locked", "database_error", "database_unavailable"})


def is_transient(exc: BaseException) -> bool:
    """A database error worth retrying (not a constraint, not a read-only file)."""
    return isinstance(exc, DatabaseError) and exc.reason in TRANSIENT_REASONS


def _log_retry(state: RetryCallState) -> None:
    outcome = state.outcome
    error = outcome.exception() if outcome is not None else None
    log.warning("database write failed (attempt %d), retrying: %s", state.attempt_number, error)


def durable_write(work: Callable[[], T], *, within: float = DB_RETRY_SECONDS) -> T:
    """``work()``, retried on transient database errors for up to ``within`` seconds."""
    retrying = Retrying(
        retry=retry_if_exception(is_transient),
        wait=wait_exponential(multiplier=0.2, max=3.0) + wait_random(0, 0.5),
        stop=stop_after_delay(within),
        before_sleep=_log_retry,
        reraise=True,
    )
    return retrying(work)


class Backoff:
    """Per-key exponential backoff with full jitter, for waits on someone else's lease.

    ``next_delay(key)`` grows from ``initial`` towards ``maximum`` on each call;
    ``reset(key)`` starts over once the key made progress.
    """

    def __init__(self, initial: float = 1.0, maximum: float = 30.0) -> None:
        self.initial = initial
        self.maximum = maximum
        self._tries: dict[object, int] = {}
        self._random = random.Random()

    def next_delay(self, key: object) -> float:
        tries = self._tries.get(key, 0)
        self._tries[key] = tries + 1
        ceiling = min(self.maximum, self.initial * (2**tries))
        # Never below the initial wait: "full jitter" down to 0 would allow bursts.
        return self.initial + self._random.uniform(0, max(0.0, ceiling - self.initial))

    def reset(self, key: object) -> None:
        self._tries.pop(key, None)
