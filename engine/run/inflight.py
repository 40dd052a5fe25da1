"""The cancel events of an engine's running actions, so that a stop can end them."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


class Inflight:
    """The cancel events of the actions running now, so that a stop can end them."""

    def __init__(self) -> None:
        self._events: dict[int, threading.Event] = {}
        self._lock = threading.Lock()

    @contextmanager
    def track(self) -> Iterator[threading.Event]:
        """A fresh cancel event, known here while the block runs."""
        cancel = threading.Event()
        with self._lock:
            self._events[id(cancel)] = cancel
        try:
            yield cancel
        finally:
            with self._lock:
                self._events.pop(id(cancel), None)

    def count(self) -> int:
        with self._lock:
            return len(self._events)

    def wait(self, seconds: float) -> bool:
        """Wait up to ``seconds`` for every tracked action to end; True when they did."""
        deadline = time.monotonic() + seconds
        while self.count() and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.count() == 0

    def cancel_all(self) -> int:
        """Set every tracked cancel event; how many there were."""
        with self._lock:
            pending = list(self._events.values())
        for cancel in pending:
            cancel.set()
        return len(pending)
