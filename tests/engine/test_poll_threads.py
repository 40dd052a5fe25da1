"""LI_POLL_THREADS: the poll pool's size is a setting with a default derived from the pace
(issue 19)."""

from __future__ import annotations

import threading
import time

import pytest

from engine.config import Settings
from engine.errors import ConfigError
from engine.github.limits import (
    DEFAULT_POINTS_PER_MINUTE,
    MAX_CONCURRENT_REQUESTS,
    default_poll_threads,
)
from engine.run.timer import Timer


def peak_poll_concurrency(settings: Settings, jobs: int) -> int:
    """Run ``jobs`` blocking jobs on the timer's poll pool; the most that ran at once."""
    stopping = threading.Event()
    timer = Timer(settings, None, lambda *a: None, stopping, lambda w, e: None)  # type: ignore[arg-type]
    scheduler = timer.start()
    lock, running, peak, done = threading.Lock(), [0], [0], threading.Semaphore(0)
    release = threading.Event()

    def job() -> None:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        release.wait(5)
        with lock:
            running[0] -= 1
        done.release()

    try:
        for index in range(jobs):
            scheduler.add_job(job, id=f"p{index}", executor="polls")
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            with lock:
                if running[0] >= min(jobs, settings.poll_threads):
                    break
            time.sleep(0.01)
        time.sleep(0.2)  # any thread beyond the pool size would show up now
        release.set()
        for _ in range(jobs):
            assert done.acquire(timeout=5)
    finally:
        release.set()
        scheduler.shutdown(wait=False)
    return peak[0]


def test_the_poll_pool_runs_exactly_li_poll_threads_passes_at_once() -> None:
    settings = Settings.from_env({"LI_POLL_THREADS": "5"})
    assert settings.poll_threads == 5
    assert peak_poll_concurrency(settings, jobs=9) == 5


def test_the_default_follows_the_pace_and_was_two_before() -> None:
    default = Settings.from_env({})
    assert default.github_requests_per_minute == DEFAULT_POINTS_PER_MINUTE == 810
    # 810 points a minute at 0.5 s a request keep ceil(13.5 * 0.5) = 7 requests in flight.
    assert default.poll_threads == default_poll_threads(810) == 7
    assert peak_poll_concurrency(default, jobs=9) == 7
    assert Settings.from_env({"LI_GITHUB_RATE": "60"}).poll_threads == 2  # never under 2
    assert default_poll_threads(10**6) == MAX_CONCURRENT_REQUESTS  # GitHub's concurrency cap
    assert Settings.from_env({"LI_GITHUB_RATE": "1200"}).poll_threads == 10


@pytest.mark.parametrize("raw", ["0", "-1", "101", "many", "2.5", "nan"])
def test_a_bad_li_poll_threads_is_one_line_invalid_setting(raw: str) -> None:
    with pytest.raises(ConfigError) as caught:
        Settings.from_env({"LI_POLL_THREADS": raw})
    error = caught.value
    assert error.reason == "invalid_setting" and "\n" not in error.message
    assert error.message == f"LI_POLL_THREADS must be a whole number from 1 to 100, got {raw!r}"
