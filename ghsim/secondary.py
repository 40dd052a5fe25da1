"""GitHub's secondary rate limits, counted per installation (issue 30, D110).

GitHub's documented secondary limits ("Rate limits for the REST API", docs.github.com,
"About secondary rate limits" and "Calculating points for the secondary rate limit"):
no more than 100 concurrent requests, and no more than 900 points a minute for REST
endpoints, where a ``GET``, ``HEAD`` or ``OPTIONS`` request costs 1 point and a
``POST``, ``PATCH``, ``PUT`` or ``DELETE`` 5. They apply per user or per App
installation, so every token of one installation is counted together.

The simulator counts every authenticated request against its holder (``installation:<id>``
for an installation token, ``token:<digest>`` otherwise) on the real monotonic clock (a
test's frozen sim clock must not pile a day's requests into one minute): the points of
the trailing minute, the busiest minute, and the requests in flight (held until the
answer's injected delay is over). Counting is always on; refusing is opt-in
(:meth:`SecondarySim.enforce_secondary_limits`), since the benches of one token poll
faster than GitHub would allow on purpose. An enforced limit answers 403 with GitHub's
secondary-limit message and ``retry-after: 60``.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from ghsim.core import SimCore
from ghsim.model import TokenInfo

POINTS_PER_MINUTE = 900
MAX_CONCURRENT = 100
READS = frozenset({"GET", "HEAD", "OPTIONS"})


@dataclass
class Holder:
    """One holder's secondary-limit accounting."""

    points: deque[tuple[float, int]] = field(default_factory=deque)  # (monotonic, points)
    in_window: int = 0
    peak_minute: int = 0
    requests: int = 0
    in_flight: int = 0
    peak_in_flight: int = 0
    refused: int = 0


def holder_of(info: TokenInfo | None) -> str:
    if info is None:
        return "anonymous"
    if info.installation_id is not None:
        return f"installation:{info.installation_id}"
    return f"token:{info.digest[:12]}"


class SecondarySim(SimCore):
    """Secondary-limit accounting (one of the bases of :class:`ghsim.sim.GitHubSim`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._holders: dict[str, Holder] = {}
        self._secondary_enforced: tuple[int, int] | None = None

    def enforce_secondary_limits(
        self, points_per_minute: int = POINTS_PER_MINUTE, concurrent: int = MAX_CONCURRENT
    ) -> None:
        """Refuse requests over these limits from now on (GitHub's by default)."""
        with self.lock:
            self._secondary_enforced = (points_per_minute, concurrent)

    def secondary_usage(self) -> dict[str, dict[str, int]]:
        """Each holder's counts: ``points_last_minute``, ``peak_points_minute``,
        ``requests``, ``peak_in_flight``, ``refused``."""
        with self.lock:
            now = time.monotonic()
            usage = {}
            for name, holder in self._holders.items():
                self._slide(holder, now)
                usage[name] = {
                    "points_last_minute": holder.in_window,
                    "peak_points_minute": holder.peak_minute,
                    "requests": holder.requests,
                    "peak_in_flight": holder.peak_in_flight,
                    "refused": holder.refused,
                }
            return usage

    def reset_secondary_usage(self) -> None:
        with self.lock:
            self._holders.clear()

    @staticmethod
    def _slide(holder: Holder, now: float) -> None:
        while holder.points and holder.points[0][0] <= now - 60:
            holder.in_window -= holder.points.popleft()[1]

    def charge_secondary(self, info: TokenInfo | None, method: str) -> str | None:
        """Count one request; the holder's name, or None when an enforced limit refuses
        it (then nothing is held in flight). Call :meth:`secondary_done` with the name
        once the answer is sent."""
        with self.lock:
            name = holder_of(info)
            holder = self._holders.setdefault(name, Holder())
            now = time.monotonic()
            self._slide(holder, now)
            points = 1 if method.upper() in READS else 5
            limits = self._secondary_enforced
            if limits is not None and (
                holder.in_window + points > limits[0] or holder.in_flight + 1 > limits[1]
            ):
                holder.refused += 1
                return None
            holder.points.append((now, points))
            holder.in_window += points
            holder.peak_minute = max(holder.peak_minute, holder.in_window)
            holder.requests += 1
            holder.in_flight += 1
            holder.peak_in_flight = max(holder.peak_in_flight, holder.in_flight)
            return name

    def secondary_done(self, name: str) -> None:
        with self.lock:
            holder = self._holders.get(name)
            if holder is not None:
                holder.in_flight = max(0, holder.in_flight - 1)
