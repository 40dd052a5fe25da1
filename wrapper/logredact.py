"""Secrets out of kdev's log lines (and so out of the stderr tail ``li`` stores).

:func:`install` (run by the CLI at start) raises the ``httpx`` and ``httpcore`` loggers to
WARNING (httpx logs every request URL at INFO, and a webhook URL is a secret) and puts
:data:`REDACTOR` on every root handler: each record's final message has every registered
secret replaced by ``***``. The CLI registers the GitHub token at start and
:func:`wrapper.leakscan.known_secrets` (webhook URLs, ``secret_env`` values, API keys)
once the config is read.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable

QUIET_LOGGERS = ("httpx", "httpcore")
MASK = "***"
_MIN_LENGTH = 8


class RedactSecrets(logging.Filter):
    """Rewrites a record whose message holds a registered secret; never drops one."""

    def __init__(self) -> None:
        super().__init__()
        self._secrets: tuple[str, ...] = ()
        self._lock = threading.Lock()

    def add(self, values: Iterable[str]) -> None:
        """Register ``values`` (shorter than 8 characters are ignored)."""
        with self._lock:
            merged = {*self._secrets, *(v for v in values if v and len(v) >= _MIN_LENGTH)}
            self._secrets = tuple(sorted(merged, key=len, reverse=True))

    def redact(self, text: str) -> str:
        """``text`` with every registered secret masked."""
        for secret in self._secrets:
            text = text.replace(secret, MASK)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        if not self._secrets:
            return True
        message = record.getMessage()
        redacted = self.redact(message)
        if redacted != message:
            record.msg = redacted
            record.args = None
        return True


REDACTOR = RedactSecrets()


def install(root: logging.Logger | None = None) -> None:
    """Quiet the HTTP client loggers and put :data:`REDACTOR` on ``root``'s handlers."""
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    for handler in (root or logging.getLogger()).handlers:
        if REDACTOR not in handler.filters:
            handler.addFilter(REDACTOR)
