"""The daemon under measurement, run by bench.daemon_idle in its own process.

Usage: ``LI_BENCH_DATABASE_URL=URL python -m bench.daemon_child IDLE_SECONDS LAUNCHED_MONOTONIC``
(the URL travels in the environment so a password never shows in ``ps``).

``LAUNCHED_MONOTONIC`` is the parent's ``time.monotonic()`` taken right before it spawned
this process (CLOCK_MONOTONIC is system-wide on Linux), so every phase below is timed
from process launch, interpreter start-up and imports included. The child builds
Settings + Store + Engine, calls ``start()``, then ``run_forever``; right after the
first sync it prints ``ready`` and starts a timer that stops the engine once it has
idled for ``IDLE_SECONDS``. Its CPU over that window is read from ``getrusage``
(all threads), so neither start-up nor shutdown is counted as idle.

Output, one ``key value...`` line each: ``imported``, ``started``, ``ready``, ``idle``,
``stopped`` (see :func:`main`); parsed by :func:`bench.daemon_idle.parse_child_output`.
"""

from __future__ import annotations

import os
import resource
import sys
import threading
import time
from collections.abc import Callable
from datetime import datetime

from bench.common import bench_settings
from engine.config import Settings
from engine.run.daemon import Engine
from engine.store import db as dbmod
from engine.store.store import Store

URL_VARIABLE = "LI_BENCH_DATABASE_URL"


def cpu_seconds() -> float:
    """User + system CPU of this whole process (every thread) so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class ReadyEngine(Engine):
    """An Engine that calls ``on_first_sync`` once, right after its first sync."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        on_first_sync: Callable[[ReadyEngine], None],
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        super().__init__(settings, store, clock)
        self._on_first_sync: Callable[[ReadyEngine], None] | None = on_first_sync

    def sync(self, force: bool = False) -> None:
        super().sync(force)
        hook, self._on_first_sync = self._on_first_sync, None
        if hook is not None:
            hook(self)

    def timer_jobs(self) -> int:
        """How many schedule jobs the APScheduler timer holds."""
        scheduler = self._scheduler
        if scheduler is None:
            return 0
        return sum(1 for job in scheduler.get_jobs() if job.id.isdigit())


def _say(*words: object) -> None:
    print(*words, flush=True)


def main(argv: list[str]) -> int:
    url = os.environ[URL_VARIABLE]
    idle_seconds, launched = float(argv[0]), float(argv[1])

    def since_launch() -> float:
        return time.monotonic() - launched

    _say("imported", f"{since_launch():.6f}")
    stop = threading.Event()
    idle_window: dict[str, float] = {}

    def end_idle() -> None:
        idle_window["cpu_end"] = cpu_seconds()
        idle_window["wall_end"] = time.monotonic()
        stop.set()

    def first_sync_done(engine: ReadyEngine) -> None:
        idle_window["cpu_start"] = cpu_seconds()
        idle_window["wall_start"] = time.monotonic()
        _say(
            "ready",
            f"{since_launch():.6f}",
            f"{idle_window['cpu_start']:.6f}",
            engine.timer_jobs(),
            len(engine.errors),
        )
        timer = threading.Timer(idle_seconds, end_idle)
        timer.daemon = True
        timer.start()

    sa_engine = dbmod.make_engine(url)
    engine = ReadyEngine(bench_settings(url), Store(sa_engine), first_sync_done)
    engine.start()
    _say("started", f"{since_launch():.6f}")
    try:
        engine.run_forever(stop)
    finally:
        engine.close()
        sa_engine.dispose()
    if "cpu_end" not in idle_window:
        _say("error", "the engine stopped before the idle window ended")
        return 1
    usage = resource.getrusage(resource.RUSAGE_SELF)
    _say(
        "idle",
        f"{idle_window['cpu_end'] - idle_window['cpu_start']:.6f}",
        f"{idle_window['wall_end'] - idle_window['wall_start']:.6f}",
        usage.ru_maxrss,  # KiB on Linux
    )
    for message in engine.errors:
        _say("engine_error", message.replace("\n", " "))
    _say("stopped", f"{since_launch():.6f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
