"""GitHub's documented secondary rate limits, and the defaults li derives from them (issue 19).

Pure constants and arithmetic, no I/O. The figures are GitHub's own ("Rate limits for the
REST API", docs.github.com, section "About secondary rate limits" and "Calculating points
for the secondary rate limit"):

* at most 900 points a minute for REST endpoints;
* a ``GET``, ``HEAD`` or ``OPTIONS`` request costs 1 point, a ``POST``, ``PATCH``, ``PUT``
  or ``DELETE`` 5 points;
* at most 100 concurrent requests (REST and GraphQL together).

What li derives (docs/decisions.md, "Pacing and poll threads from GitHub's limits"):

* :data:`DEFAULT_POINTS_PER_MINUTE`: a token's pacer spends 90% of the 900 points, 810 a
  minute, leaving a tenth for other processes on the same token (another program's writes, an
  operator's ``gh``), since a pacer only sees its own process.
* :func:`default_poll_threads`: enough poll threads to keep that pace busy while each
  request waits :data:`DESIGN_LATENCY_SECONDS` for GitHub (Little's law: requests in
  flight = rate x latency), at least 2 and never over the concurrency limit.

And li's own bounds of one answer (issue 24, docs/decisions.md D68), enforced by
engine.github.bounded: :data:`DEFAULT_MAX_BODY_BYTES` of decoded body (a page of 100
pulls is 1-2 MB, a compare with its patches a few MB), :data:`DEFAULT_DEADLINE_SECONDS`
for the whole request (connect, every read, decompression, redirects) and
:data:`DEFAULT_MAX_REDIRECTS` hops, each within the API's origin.
"""

from __future__ import annotations

import math

REST_POINTS_PER_MINUTE = 900
READ_POINTS = 1
WRITE_POINTS = 5
MAX_CONCURRENT_REQUESTS = 100
SHARE_OF_LIMIT = 0.9
DEFAULT_POINTS_PER_MINUTE = int(REST_POINTS_PER_MINUTE * SHARE_OF_LIMIT)
# A slow GitHub answer: the threads keep the pace at up to this latency per request.
DESIGN_LATENCY_SECONDS = 0.5
MIN_POLL_THREADS = 2
# Under this share of its primary limit left, a pacer spreads the rest until the reset.
LOW_BUDGET_SHARE = 0.1
# The bounds of one answer (Settings: LI_GITHUB_MAX_BODY_BYTES, LI_GITHUB_DEADLINE,
# LI_GITHUB_MAX_REDIRECTS); the lowest values Settings accepts beside them.
DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024
MIN_MAX_BODY_BYTES = 1024
DEFAULT_DEADLINE_SECONDS = 60.0
MIN_DEADLINE_SECONDS = 1.0
DEFAULT_MAX_REDIRECTS = 5
MAX_MAX_REDIRECTS = 20
_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def points_of(method: str) -> int:
    """The secondary-limit points one REST request of ``method`` costs."""
    return READ_POINTS if method.upper() in _READ_METHODS else WRITE_POINTS


def default_poll_threads(points_per_minute: float) -> int:
    """Poll threads for a pacer of ``points_per_minute``: ``ceil(rate/s x latency)``,
    clamped to ``[MIN_POLL_THREADS, MAX_CONCURRENT_REQUESTS]`` (7 at the default 810)."""
    in_flight = math.ceil(points_per_minute / 60 * DESIGN_LATENCY_SECONDS)
    return max(MIN_POLL_THREADS, min(MAX_CONCURRENT_REQUESTS, in_flight))
