"""Retries for calls to a flaky world: the reviewer endpoint and webhook notifications.

:func:`call_with_retries` runs one HTTP attempt several times with tenacity. An attempt
is retried when it raises :class:`RetryableStatus` (HTTP 408, 425, 429 or 5xx; the caller
raises it after reading the answer) or a transport error of httpx (timeouts, refused or
reset connections). The wait is exponential with jitter; a ``Retry-After`` header (in
seconds or as an HTTP date) replaces the exponential part when it is present. A
``Retry-After`` longer than :attr:`HttpRetryPolicy.max_wait_seconds` ends the retries at
once: waiting that long inside one kdev run would hold a worktree and a leg slot.

What still fails after the last attempt is raised unchanged, so the caller keeps its own
error mapping (``reviewer_http_error``, ``reviewer_timed_out``, a notification failure).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, TypeVar

import httpx

if TYPE_CHECKING:  # tenacity is imported by the first retried call (D35, issue 19)
    from tenacity import RetryCallState

log = logging.getLogger(__name__)

T = TypeVar("T")

RETRYABLE_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})


class RetryableStatus(Exception):
    """An HTTP answer worth another attempt; carries what the caller needs if it is the
    last one."""

    def __init__(self, status: int, body: bytes, retry_after: float | None) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.body = body
        self.retry_after = retry_after


@dataclass(frozen=True)
class HttpRetryPolicy:
    """How often and how patiently one HTTP call is tried."""

    max_attempts: int = 4
    initial_wait_seconds: float = 1.0
    max_wait_seconds: float = 30.0
    jitter_seconds: float = 0.5


DEFAULT_POLICY = HttpRetryPolicy()


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or HTTP date)."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def retryable_status(response: httpx.Response, body: bytes) -> RetryableStatus | None:
    """The exception to raise for ``response``, or None when it is final."""
    if response.status_code not in RETRYABLE_STATUSES:
        return None
    return RetryableStatus(
        response.status_code, body, parse_retry_after(response.headers.get("Retry-After"))
    )


def _is_retryable(exc: BaseException) -> bool:
    return isinstance(exc, RetryableStatus | httpx.TransportError)


class _Wait:
    def __init__(self, policy: HttpRetryPolicy, rng: random.Random) -> None:
        self.policy = policy
        self.rng = rng

    def __call__(self, state: RetryCallState) -> float:
        policy = self.policy
        error = state.outcome.exception() if state.outcome is not None else None
        jitter = self.rng.uniform(0, policy.jitter_seconds)
        if isinstance(error, RetryableStatus) and error.retry_after is not None:
            return min(error.retry_after, policy.max_wait_seconds) + jitter
        exponential = policy.initial_wait_seconds * 2.0 ** (state.attempt_number - 1)
        return min(exponential, policy.max_wait_seconds) + jitter


def _stop(policy: HttpRetryPolicy) -> Callable[[RetryCallState], bool]:
    from tenacity import stop_after_attempt

    by_count = stop_after_attempt(policy.max_attempts)

    def stop(state: RetryCallState) -> bool:
        error = state.outcome.exception() if state.outcome is not None else None
        if (
            isinstance(error, RetryableStatus)
            and error.retry_after is not None
            and error.retry_after > policy.max_wait_seconds
        ):
            return True  # the server asks for longer than we are willing to hold a run
        return by_count(state)

    return stop


def call_with_retries(
    attempt: Callable[[], T],
    *,
    what: str,
    policy: HttpRetryPolicy = DEFAULT_POLICY,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
) -> T:
    """``attempt()``, retried per ``policy``; ``what`` names the call in log lines (never
    a URL with a secret in it)."""
    from tenacity import Retrying, retry_if_exception

    def before_sleep(state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome is not None else None
        wait = state.next_action.sleep if state.next_action is not None else 0.0
        log.warning(
            "%s failed (attempt %d of %d: %s), retrying in %.1f s",
            what,
            state.attempt_number,
            policy.max_attempts,
            type(error).__name__ if not isinstance(error, RetryableStatus) else error,
            wait,
        )

    retrying = Retrying(
        retry=retry_if_exception(_is_retryable),
        wait=_Wait(policy, rng or random.Random()),
        stop=_stop(policy),
        sleep=sleep,
        before_sleep=before_sleep,
        reraise=True,
    )
    return retrying(attempt)
