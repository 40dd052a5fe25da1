"""Injected faults of :class:`ghsim.sim.GitHubSim`: error answers, delays, broken bodies,
secondary rate limits, the answer-bound faults (a gzip bomb, a huge body, a drip-fed
body, a redirect), and the payload faults (a ghost author, a deleted fork).

The HTTP server (``ghsim/server.py``) takes the first matching fault of each request.
"""

from __future__ import annotations

import struct
import threading
import zlib
from collections.abc import Iterator
from typing import Any

from ghsim.core import GhsimError, SimCore
from ghsim.model import Fault

BODY_KINDS = ("gzip_bomb", "huge", "drip")
GIB = 1 << 30
DEFAULT_SIZES = {"gzip_bomb": GIB, "huge": 100 * 1000 * 1000}
_MIB = 1 << 20
_FILL = b" " * _MIB  # JSON whitespace: an unbounded client inflates it all, then fails
_BOMBS: dict[int, bytes] = {}
_BOMBS_LOCK = threading.Lock()


def gzip_bomb(size: int = GIB) -> bytes:
    """A gzip body that inflates to ``size`` spaces (a whole number of MiB, rounded up),
    about a thousandth of it; built once a size and cached.

    Deflate after a full flush repeats itself, so one compressed MiB is reused: a
    gigabyte is built in half a second, never held inflated."""
    mib = max(1, -(-size // _MIB))
    with _BOMBS_LOCK:
        if mib not in _BOMBS:
            _BOMBS[mib] = _build_bomb(mib)
        return _BOMBS[mib]


def _build_bomb(mib: int) -> bytes:
    flushed = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = flushed.compress(_FILL) + flushed.flush(zlib.Z_FULL_FLUSH)
    final = zlib.compressobj(9, zlib.DEFLATED, -15)
    last = final.compress(_FILL) + final.flush(zlib.Z_FINISH)
    crc = 0
    for _ in range(mib):
        crc = zlib.crc32(_FILL, crc)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"  # gzip, no name, unknown OS
    trailer = struct.pack("<II", crc, (mib * _MIB) & 0xFFFFFFFF)
    return header + block * (mib - 1) + last + trailer


def plain_chunks(size: int) -> Iterator[bytes]:
    """``size`` bytes of spaces in MiB pieces, never held whole."""
    left = size
    while left > 0:
        piece = _FILL[: min(left, _MIB)]
        left -= len(piece)
        yield piece


class FaultSim(SimCore):
    """Fault injection (one of the bases of :class:`ghsim.sim.GitHubSim`)."""

    # == faults ================================================================================

    def inject_fault(
        self,
        method: str,
        path_regex: str,
        status: int | None = None,
        delay: float | None = None,
        truncate: bool = False,
        malformed: bool = False,
        times: int | None = 1,
        body: dict[str, Any] | None = None,
    ) -> Fault:
        """Next ``times`` matching requests (``None``: until cleared) get the fault.

        ``status`` answers with that status and a GitHub error body (not counted);
        ``delay`` sleeps that many seconds before answering; ``truncate`` sends half the
        body under the full Content-Length and closes the connection; ``malformed`` sends
        half the body as a complete (invalid JSON) response. ``method`` may be ``"*"``.
        """
        fault = Fault(
            method.upper(), path_regex, status, delay, truncate, malformed, times, body=body
        )
        with self.lock:
            self._faults.append(fault)
        return fault

    def inject_secondary_limit(
        self,
        retry_after: int | None = 60,
        method: str = "*",
        path_regex: str = ".*",
        times: int | None = 1,
        status: int = 403,
    ) -> Fault:
        """The secondary rate limit: ``status`` (403/429), its message, ``retry-after``."""
        fault = Fault(
            method.upper(),
            path_regex,
            status=status,
            times=times,
            retry_after=retry_after,
            secondary=True,
        )
        with self.lock:
            self._faults.append(fault)
        return fault

    def inject_body_fault(
        self,
        kind: str,
        method: str = "*",
        path_regex: str = ".*",
        times: int | None = 1,
        *,
        size: int | None = None,
        drip_seconds: float = 1.0,
    ) -> Fault:
        """An answer no client should read whole (issue 24); ``kind`` is one of:

        ``gzip_bomb``: a 200 with ``Content-Encoding: gzip`` whose ~1 MB body inflates to
        ``size`` spaces (default 1 GiB); ``huge``: a 200 of ``size`` plain bytes (default
        100 MB); ``drip``: the route's real answer, one byte every ``drip_seconds``.
        """
        if kind not in BODY_KINDS:
            raise GhsimError(f"a body fault is one of {', '.join(BODY_KINDS)}, got {kind!r}")
        if drip_seconds <= 0:
            raise GhsimError(f"drip_seconds must be positive, got {drip_seconds!r}")
        fault = Fault(
            method.upper(),
            path_regex,
            times=times,
            body_kind=kind,
            size=size if size is not None else DEFAULT_SIZES.get(kind),
            drip_seconds=drip_seconds,
        )
        if kind == "gzip_bomb":
            gzip_bomb(fault.size or GIB)  # built now, not while a client waits
        with self.lock:
            self._faults.append(fault)
        return fault

    def inject_redirect(
        self,
        location: str,
        method: str = "*",
        path_regex: str = ".*",
        times: int | None = 1,
        status: int = 301,
    ) -> Fault:
        """Answer ``status`` (301, 302, 307, 308) with ``Location: location``, as GitHub
        does for a renamed repository; the request's query is appended when ``location``
        has none. ``location`` may be a path on this host or another origin's URL."""
        if status not in (301, 302, 303, 307, 308):
            raise GhsimError(f"a redirect status is 301, 302, 303, 307 or 308, got {status}")
        fault = Fault(method.upper(), path_regex, status=status, times=times, location=location)
        with self.lock:
            self._faults.append(fault)
        return fault

    def clear_faults(self) -> None:
        """Remove injected faults, including the ``user``/``head.repo`` null payload faults."""
        with self.lock:
            self._faults.clear()
            for pulls in self._pulls.values():
                for pr in pulls.values():
                    pr.user_null = False
                    pr.head_repo_null = False

    def _take_fault(self, method: str, path: str) -> Fault | None:
        for fault in self._faults:
            if fault.matches(method, path):
                if fault.times is not None:
                    fault.times -= 1
                fault.hits += 1
                return fault
        return None

    # == payload faults ========================================================================

    def set_pr_user_null(self, repo: str, number: int, null: bool = True) -> None:
        """Serve the pull's ``user`` as ``null`` (a deleted "ghost" account)."""
        with self.lock:
            self.pull(repo, number).user_null = null

    def set_head_repo_null(self, repo: str, number: int, null: bool = True) -> None:
        """Serve ``head.repo: null`` / ``headRepository: null`` (a deleted fork)."""
        with self.lock:
            self.pull(repo, number).head_repo_null = null

    def set_comment_user_null(self, repo: str, comment_id: int, null: bool = True) -> None:
        with self.lock:
            self.get_comment(repo, comment_id).user_null = null
