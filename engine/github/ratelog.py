"""The newest GitHub rate-limit headers of each token identity in this process.

Every answer's ``x-ratelimit-remaining`` / ``-reset`` are noted here by the session
(engine.github.session); the engine's metrics (engine.run.metrics) read them at each
scrape. The GitHub layer so never imports the runner's metrics (nor prometheus_client):
the dependency points down, from metrics to this table. Identities are hash names, never
the token (engine.github.pacing.token_identity).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping

log = logging.getLogger("engine.github.client")

_lock = threading.Lock()
_remaining: dict[str, float] = {}
_reset: dict[str, float] = {}


def note(identity: str, headers: Mapping[str, str]) -> None:
    """Keep the newest rate-limit headers of ``identity``; unreadable ones are ignored."""
    remaining, reset = headers.get("x-ratelimit-remaining"), headers.get("x-ratelimit-reset")
    try:
        values = (
            float(remaining) if remaining is not None else None,
            float(reset) if reset is not None else None,
        )
    except ValueError:
        log.debug("unreadable rate-limit headers %r / %r", remaining, reset)
        return
    with _lock:
        if values[0] is not None:
            _remaining[identity] = values[0]
        if values[1] is not None:
            _reset[identity] = values[1]


def newest() -> tuple[dict[str, float], dict[str, float]]:
    """Copies of (remaining, reset) by identity, as last noted."""
    with _lock:
        return dict(_remaining), dict(_reset)
