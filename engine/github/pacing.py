"""Pacing of one token's GitHub requests: spacing by points, the primary budget, holding
back after a rate limit, and the concurrency cap (GitHub's limits: engine.github.limits).

Every request of :class:`~engine.github.client.GitHubClient` first passes its token's
:class:`RequestPacer`, which is shared process-wide per token (:func:`pacer_for`), so a
rate-limit deferral one schedule met holds back every other user of that token. The
rate-limit bookkeeping itself (``x-ratelimit-*`` per token) is engine.run.metrics'.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

from engine.errors import InvalidInput
from engine.github.limits import (
    DEFAULT_POINTS_PER_MINUTE,
    LOW_BUDGET_SHARE,
    MAX_CONCURRENT_REQUESTS,
    READ_POINTS,
)
from engine.github.types import ERROR_CLASSES, RATE_LIMITED, RateInfo
from engine.timefmt import iso_utc


def utcnow() -> datetime:
    """The current time, aware, in UTC (as engine.store.models.utcnow, without importing the
    ORM: the wrapper's fast paths import this module but never SQLAlchemy; issue 19)."""
    return datetime.now(UTC)


def token_identity(token: str | None) -> str:
    """A stable, non-reversible name for a token (``anonymous`` without one)."""
    if not token:
        return "anonymous"
    return "sha256:" + hashlib.sha256(token.encode()).hexdigest()[:16]


class RequestPacer:
    """Spaces one token's requests and holds them back after a rate-limit answer.

    Contract: call :meth:`acquire` right before each request. It returns (after sleeping
    if needed, with the injected ``sleep``) once the request may go, and returns the
    seconds it waited. Thread-safe: concurrent callers reserve successive slots under a
    lock and sleep outside it.

    Choices:

    * Minimum spacing, not a token bucket: requests are at least ``60 / rate_per_minute``
      seconds apart, never in bursts, because GitHub's secondary limits punish bursts and
      a poller gains nothing from them. Spacing runs on the ``monotonic`` clock so a wall
      clock stepping back cannot stall requests.
    * Deferral: the client calls :meth:`defer_until` on ``rate_limited`` (until the reset)
      and ``secondary_rate_limited`` (now + retry-after). The client never sleeps through
      a long reset inside a request: it raises, and the pacer remembers. A later
      :meth:`acquire` waits out a deferral of at most ``max_wait`` seconds, and raises a
      :class:`~engine.github.types.GitHubError` with the deferral's reason (``rate_limited`` or
      ``secondary_rate_limited``) and ``reset_at`` at once when the wait would be longer,
      so a daemon tick fails fast and the schedule retries on its next poll.
    * Points (issue 19): ``rate_per_minute`` counts GitHub's secondary-limit points, and
      :meth:`acquire` takes the request's cost (a read 1, a write 5), so a write pushes
      the next slot five spacings away.
    * The primary budget (issue 19): the session hands every successful answer's
      ``x-ratelimit-*`` to :meth:`observe`. While ``remaining`` is under
      :data:`LOW_BUDGET_SHARE` of the limit, requests are spread so that what is left
      lasts until the reset (never faster than the rate); at 0 the token is held until
      the reset, as a ``403`` would. Above that share nothing changes: ``304`` answers
      are free, so an idle poller would be slowed for nothing. A request the budget
      (not the rate) would hold longer than ``max_wait`` raises ``rate_limited`` at
      once, as a long deferral does.
    * Concurrency: :meth:`in_flight` admits at most ``max_concurrent`` requests at once
      (GitHub allows 100 per token).
    """

    def __init__(
        self,
        rate_per_minute: float = 600,
        *,
        max_wait: float = 5.0,
        max_concurrent: int = MAX_CONCURRENT_REQUESTS,
        clock: Callable[[], datetime] = utcnow,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if rate_per_minute <= 0:
            raise InvalidInput(
                f"rate_per_minute must be positive, got {rate_per_minute}", "invalid_rate"
            )
        self.rate_per_minute = rate_per_minute
        self.interval = 60.0 / rate_per_minute
        self.max_wait = max_wait
        self._clock = clock
        self._monotonic = monotonic
        self._sleep = sleep
        self._lock = threading.Lock()
        # The last slot granted (monotonic seconds) and its request's points: the next
        # slot is that many spacings later, the spacing as of the next acquire, so a low
        # budget an answer reported meanwhile applies at once.
        self._last: tuple[float, int] | None = None
        self._deferred_until: datetime | None = None  # wall clock, for messages
        self._deferred_slot: float | None = None  # the same moment, monotonic
        self._deferred_reason = RATE_LIMITED
        self._budget: tuple[int, float] | None = None  # (remaining, reset as monotonic)
        self._in_flight = threading.BoundedSemaphore(max_concurrent)

    @property
    def deferred_until(self) -> datetime | None:
        """When a deferral ends (None when none is pending)."""
        with self._lock:
            if self._deferred_slot is None or self._deferred_slot <= self._monotonic():
                return None
            return self._deferred_until

    def defer_until(self, when: datetime, reason: str = RATE_LIMITED) -> None:
        """Hold every later request of this token until ``when`` (a later one wins)."""
        with self._lock:
            slot = self._monotonic() + (when - self._clock()).total_seconds()
            if self._deferred_slot is None or slot > self._deferred_slot:
                self._deferred_slot, self._deferred_until = slot, when
                self._deferred_reason = reason

    def observe(self, rate: RateInfo) -> None:
        """The ``x-ratelimit-*`` of a successful answer: the primary budget left (``core``
        only; GraphQL and search have buckets of their own)."""
        if rate.resource != "core":
            return
        with self._lock:
            reset_slot = self._monotonic() + (rate.reset - self._clock()).total_seconds()
            low = rate.remaining < rate.limit * LOW_BUDGET_SHARE
            self._budget = (rate.remaining, reset_slot) if low else None
        if rate.remaining == 0:
            self.defer_until(rate.reset, RATE_LIMITED)

    def _spacing(self, now: float) -> float:
        """Seconds a point takes: the rate's, or slower while the primary budget is low."""
        if self._budget is None:
            return self.interval
        remaining, reset_slot = self._budget
        if reset_slot <= now:
            self._budget = None
            return self.interval
        return max(self.interval, (reset_slot - now) / max(remaining, 1))

    @contextmanager
    def in_flight(self) -> Iterator[None]:
        """Hold one of the token's ``max_concurrent`` request places while the block runs."""
        with self._in_flight:
            yield

    def acquire(self, points: int = READ_POINTS) -> float:
        """Wait for this token's next slot; raise if a deferral outlasts ``max_wait``.
        ``points``: the request's cost (engine.github.limits.points_of).

        A request that was already waiting when a rate-limit answer set a deferral
        re-checks it after its sleep (issue 10): it waits the deferral out or raises,
        it is never sent into the limit.
        """
        waited = 0.0
        while True:
            waited += self._acquire_once(points)
            with self._lock:
                held = self._deferred_slot is not None and self._deferred_slot > self._monotonic()
            if not held:
                return waited

    def _acquire_once(self, points: int) -> float:
        with self._lock:
            now = self._monotonic()
            slot = now
            if self._last is not None:
                last_slot, last_points = self._last
                slot = max(now, last_slot + self._spacing(now) * last_points)
                paced = last_slot + self.interval * last_points
                if slot > paced and slot - now > self.max_wait:
                    # The low primary budget, not the rate, holds this request too long:
                    # fail fast like a deferral (the schedule's next poll is the retry).
                    next_at = self._clock() + timedelta(seconds=slot - now)
                    raise ERROR_CLASSES[RATE_LIMITED](
                        "GitHub's rate limit for this token is nearly spent; requests are "
                        f"spread until its reset, the next at {iso_utc(next_at)}",
                        retry_after=slot - now,
                        reset_at=next_at,
                    )
            if self._deferred_slot is not None and self._deferred_slot > now:
                if self._deferred_slot - now > self.max_wait:
                    until = self._deferred_until
                    stamp = iso_utc(until) if until else "later"
                    raise ERROR_CLASSES[self._deferred_reason](
                        f"GitHub requests for this token are paused until {stamp}",
                        retry_after=self._deferred_slot - now,
                        reset_at=until,
                    )
                slot = max(slot, self._deferred_slot)
            self._last = (slot, points)
        wait = slot - now
        if wait > 0:
            self._sleep(wait)
        return max(wait, 0.0)


_PACERS: dict[str, RequestPacer] = {}
_PACERS_LOCK = threading.Lock()


def pacer_for(identity: str, rate_per_minute: float = DEFAULT_POINTS_PER_MINUTE) -> RequestPacer:
    """The process-wide pacer of one token identity (see :func:`token_identity`).

    The first call creates it with ``rate_per_minute``; later calls return that pacer as
    it is, so every schedule using the token shares one budget.
    """
    with _PACERS_LOCK:
        pacer = _PACERS.get(identity)
        if pacer is None:
            pacer = _PACERS[identity] = RequestPacer(rate_per_minute)
        return pacer
