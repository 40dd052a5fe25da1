"""One engine process's presence: the SQLite single-engine lock and the registered,
heartbeating engine-instance row (split from :mod:`engine.run.daemon`)."""

from __future__ import annotations

import fcntl
import logging
import os
import socket
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from engine.config import Settings
from engine.errors import Conflict, LiError
from engine.store.store import Store

log = logging.getLogger(__name__)


class EngineLock:
    """Exclusive OS lock beside a SQLite database: one engine per file, freed on exit."""

    def __init__(self, database: Path) -> None:
        self.path = database.with_name(database.name + ".engine.lock")
        self._handle: IO[str] | None = None

    def acquire(self) -> None:
        handle = self.path.open("a+")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            handle.close()
            raise Conflict(
                f"another li engine (pid {holder}) is running on this SQLite "
                "database; use PostgreSQL to run several",
                "engine_already_running",
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        self._handle = handle

    def release(self) -> None:
        if self._handle is not None:
            fcntl.flock(self._handle.fileno(), fcntl.LOCK_UN)
            self._handle.close()
            self._handle = None


@contextmanager
def registered_engine(
    store: Store, settings: Settings, *, kind: str = "engine", heartbeat: bool = True
) -> Iterator[str]:
    """Register an engine-instance row (with a heartbeat thread) for the block's duration.

    ``li schedule trigger --wait`` uses this too, so a run it owns is never mistaken
    for an orphan by an engine that starts meanwhile.
    """
    engine_id = f"{kind}-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    store.register_engine(engine_id, socket.gethostname(), os.getpid())
    stop = threading.Event()
    beat: threading.Thread | None = None
    if heartbeat:

        def beat_loop() -> None:
            while not stop.wait(settings.heartbeat_interval_seconds):
                try:
                    store.heartbeat(engine_id)
                except LiError as exc:
                    log.warning("heartbeat failed: %s", exc)

        beat = threading.Thread(target=beat_loop, name="li-heartbeat", daemon=True)
        beat.start()
    try:
        yield engine_id
    finally:
        stop.set()
        if beat is not None:
            beat.join(timeout=5)
        store.stop_engine(engine_id)
