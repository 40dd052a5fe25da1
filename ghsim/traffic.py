"""Per-request accounting of :class:`ghsim.sim.GitHubSim`: rate-limit buckets, request log.

The HTTP server (``ghsim/server.py``) charges every counted request to its token's bucket
(or the anonymous one) and appends it to the request log; tests read both.
"""

from __future__ import annotations

import re
from datetime import datetime

from ghsim.core import GhsimError, SimCore, token_digest
from ghsim.model import RateBucket, RequestRecord, TokenInfo


class TrafficSim(SimCore):
    """Rate limits and the request log (one of the bases of :class:`ghsim.sim.GitHubSim`)."""

    # == rate limits ===========================================================================

    def _limit_for(self, resource: str, anonymous: bool) -> int:
        if anonymous:
            return self.anonymous_limit
        return self.graphql_limit if resource == "graphql" else self.core_limit

    def bucket(self, token: str | None, resource: str = "core") -> RateBucket:
        """The live rate-limit bucket of ``token`` (``None``: anonymous) for ``resource``."""
        with self.lock:
            info = None if token is None else self._tokens.get(token_digest(token))
            if token is not None and info is None:
                raise GhsimError("unknown token")
            return self._bucket(info, resource)

    def _bucket(self, info: TokenInfo | None, resource: str) -> RateBucket:
        buckets = self._anonymous_buckets if info is None else info.buckets
        epoch = int(self.now().timestamp())
        bucket = buckets.get(resource)
        if bucket is None:
            limit = self._limit_for(resource, info is None)
            bucket = RateBucket(limit, limit, epoch + 3600)
            buckets[resource] = bucket
        elif epoch >= bucket.reset_at:
            bucket.remaining = bucket.limit
            bucket.reset_at = epoch + 3600
        return bucket

    def set_rate_limit(
        self,
        token: str | None,
        *,
        limit: int | None = None,
        remaining: int | None = None,
        reset_at: datetime | int | None = None,
        resource: str = "core",
    ) -> RateBucket:
        """Set a bucket; ``reset_at`` is a datetime or epoch seconds (on the sim clock)."""
        with self.lock:
            bucket = self.bucket(token, resource)
            if limit is not None:
                bucket.limit = limit
                bucket.remaining = min(bucket.remaining, limit)
            if remaining is not None:
                bucket.remaining = remaining
            if reset_at is not None:
                bucket.reset_at = (
                    int(reset_at.timestamp()) if isinstance(reset_at, datetime) else int(reset_at)
                )
            return bucket

    # == request log ===========================================================================

    @property
    def requests(self) -> list[RequestRecord]:
        """A copy of the request log (oldest first); tokens are never recorded."""
        with self.lock:
            return list(self._requests)

    def requests_to(self, path_regex: str, method: str | None = None) -> list[RequestRecord]:
        """Logged requests whose path matches ``path_regex`` (``re.search``)."""
        pattern = re.compile(path_regex)
        return [
            r
            for r in self.requests
            if pattern.search(r.path) and (method is None or r.method == method.upper())
        ]

    def clear_requests(self) -> None:
        with self.lock:
            self._requests.clear()

    def _record(self, record: RequestRecord) -> None:
        with self.lock:
            self._requests.append(record)
