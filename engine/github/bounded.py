"""The bounds of one GitHub answer (issue 24): its decoded size, one deadline, redirects.

:func:`send_bounded` is how :meth:`engine.github.session.GitHubSession._send` sends. It
streams the answer and inflates it itself (gzip or deflate, a mebibyte at a time),
counting the *decoded* bytes, so a small gzip body that inflates to a gigabyte stops at
:attr:`Bounds.max_body_bytes` (``body_too_large``) with at most a mebibyte over it held.

One monotonic deadline covers the whole request: each hop's connect, write and read
timeouts are clamped to the time left, and the time is checked again after the headers
and after every chunk, so a body dripped one byte a second ends at the deadline
(``request_deadline``), not after one read timeout per byte.

Redirects are followed here, not by httpx: at most :attr:`Bounds.max_redirects` hops,
only to the API's own origin (scheme, host and port), 307/308 keeping the method and
body and 301/302/303 only for a GET; anything else is ``redirect_refused``, so neither
the token nor the answer of another origin takes part in a decision.

What it raises beside httpx's own errors is :class:`OutOfBounds`, which names the error
class; the session turns it into that error (redacted, logged) as it does every failure.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from engine.github.limits import (
    DEFAULT_DEADLINE_SECONDS,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_REDIRECTS,
)
from engine.github.types import (
    GitHubBodyTooLarge,
    GitHubDeadlineExceeded,
    GitHubErrorKind,
    GitHubRedirectRefused,
    GitHubSettings,
)

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
# Statuses whose redirect repeats the request as it was (RFC 9110 15.4.8, 15.4.9).
_KEEPS_METHOD = frozenset({307, 308})
# Headers that are about the encoded body, not the decoded one a bounded answer holds.
_ENCODING_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})
Origin = tuple[str, str, int | None]
# What the session asks for and this module inflates itself, at most _STEP bytes a call,
# so no compressed chunk (httpcore reads 64 KiB) becomes 64 MiB before it is counted.
ACCEPT_ENCODING = "gzip, deflate"
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "deflate": 32 + zlib.MAX_WBITS}
_STEP = 1 << 20
# A timeout that ends this close to the deadline was the deadline's (clamped) one.
_SLACK = 0.05


@dataclass(frozen=True)
class Bounds:
    """The limits of one request: decoded body bytes, seconds in all, redirect hops."""

    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    deadline_seconds: float = DEFAULT_DEADLINE_SECONDS
    max_redirects: int = DEFAULT_MAX_REDIRECTS

    @classmethod
    def of(cls, settings: GitHubSettings) -> Bounds:
        """The bounds ``settings`` set (``LI_GITHUB_MAX_BODY_BYTES`` and the others)."""
        return cls(
            settings.github_max_body_bytes,
            settings.github_deadline_seconds,
            settings.github_max_redirects,
        )


class OutOfBounds(Exception):
    """An answer past one of the bounds; ``kind`` is the error class it becomes."""

    def __init__(self, kind: type[GitHubErrorKind], message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def send_bounded(
    client: httpx.Client,
    method: str,
    url: str,
    *,
    headers: Mapping[str, str] | None,
    json_body: dict[str, Any] | None,
    bounds: Bounds,
    origin: Origin,
    clock: Callable[[], float] = time.monotonic,
) -> httpx.Response:
    """Send ``method url`` on ``client`` (built with ``follow_redirects=False``) within
    ``bounds``; returns the final answer with its whole decoded body read. ``origin`` is
    the API's ``(scheme, host, port)``, the only one a redirect may lead to."""
    deadline = clock() + bounds.deadline_seconds
    for _hop in range(bounds.max_redirects + 1):
        left = _time_left(deadline, clock, bounds)
        request = client.build_request(
            method, url, headers=headers, json=json_body, timeout=_clamped(client.timeout, left)
        )
        try:
            response = _one_hop(client, request, bounds, deadline, clock)
        except httpx.TimeoutException:
            _time_left(deadline, clock, bounds, slack=_SLACK)  # the clamp was the deadline's
            raise
        if response.status_code not in REDIRECT_STATUSES or "location" not in response.headers:
            return response
        location = response.headers["location"]
        method, url, json_body = _follow(method, url, json_body, response.status_code, location)
        _check_origin(url, origin, response.status_code)
    raise OutOfBounds(
        GitHubRedirectRefused,
        f"more than {bounds.max_redirects} redirects (LI_GITHUB_MAX_REDIRECTS), the last to "
        f"{httpx.URL(url).path}",
    )


def _one_hop(
    client: httpx.Client,
    request: httpx.Request,
    bounds: Bounds,
    deadline: float,
    clock: Callable[[], float],
) -> httpx.Response:
    """One request: a redirect answer unread (its ``Location`` is all it says), any
    other with its body read within the bounds."""
    response = client.send(request, stream=True)
    try:
        _time_left(deadline, clock, bounds)
        if response.status_code in REDIRECT_STATUSES and "location" in response.headers:
            return response
        return _read(response, bounds, deadline, clock)
    finally:
        response.close()


def _time_left(
    deadline: float, clock: Callable[[], float], bounds: Bounds, *, slack: float = 0.0
) -> float:
    """Seconds left before ``deadline``; ``request_deadline`` when none (or no more than
    ``slack``: a timeout clamped to the deadline fires a hair before it) are."""
    left = deadline - clock()
    if left <= slack:
        raise OutOfBounds(
            GitHubDeadlineExceeded,
            f"no whole answer within {bounds.deadline_seconds:g} s (LI_GITHUB_DEADLINE)",
        )
    return left


def _clamped(timeout: httpx.Timeout, left: float) -> httpx.Timeout:
    """``timeout`` with no phase longer than the ``left`` seconds of the deadline."""

    def clamp(value: float | None) -> float:
        return left if value is None else min(value, left)

    return httpx.Timeout(
        connect=clamp(timeout.connect),
        read=clamp(timeout.read),
        write=clamp(timeout.write),
        pool=clamp(timeout.pool),
    )


def _read(
    response: httpx.Response, bounds: Bounds, deadline: float, clock: Callable[[], float]
) -> httpx.Response:
    """The decoded body of ``response``, counted chunk by chunk, as a read answer."""
    chunks: list[bytes] = []
    size = 0
    for chunk in _decoded(response):
        size += len(chunk)
        if size > bounds.max_body_bytes:
            raise OutOfBounds(
                GitHubBodyTooLarge,
                f"the decoded body passed {bounds.max_body_bytes} bytes (LI_GITHUB_MAX_BODY_BYTES)",
            )
        _time_left(deadline, clock, bounds)
        chunks.append(chunk)
    kept = [
        (name, value)
        for name, value in response.headers.multi_items()
        if name.lower() not in _ENCODING_HEADERS
    ]
    extensions = {
        key: value
        for key, value in response.extensions.items()
        if key in ("http_version", "reason_phrase")
    }
    return httpx.Response(
        response.status_code,
        headers=kept,
        content=b"".join(chunks),
        request=response.request,
        extensions=extensions,
    )


def _decoded(response: httpx.Response) -> Iterator[bytes]:
    """The body of ``response`` decoded from its ``Content-Encoding`` (none, gzip or
    deflate) in pieces of at most :data:`_STEP` bytes; ``httpx.DecodingError`` for
    another encoding or a broken stream (``malformed_payload``)."""
    if response.is_stream_consumed:  # an answer built in memory (a test's transport)
        body = response.content
        for start in range(0, len(body), _STEP):
            yield body[start : start + _STEP]
        return
    coding = response.headers.get("content-encoding", "identity").strip().lower()
    if coding in ("", "identity"):
        yield from response.iter_raw()
        return
    if coding not in _WBITS:
        raise httpx.DecodingError(f"unsupported Content-Encoding {coding!r}")
    decoder = zlib.decompressobj(_WBITS[coding])
    received = False
    try:
        for data in response.iter_raw():
            received = received or bool(data)
            piece = decoder.decompress(data, _STEP)
            yield piece
            while decoder.unconsumed_tail or len(piece) == _STEP:
                piece = decoder.decompress(decoder.unconsumed_tail, _STEP)
                if not piece and not decoder.unconsumed_tail:
                    break
                yield piece
    except zlib.error as exc:
        raise httpx.DecodingError(f"{coding} body: {exc}") from None
    if received and not decoder.eof:
        raise httpx.DecodingError(f"the {coding} body ends before its stream does")


def _follow(
    method: str, url: str, json_body: dict[str, Any] | None, status: int, location: str
) -> tuple[str, str, dict[str, Any] | None]:
    """The next hop of a ``status`` redirect to ``location``: 307/308 repeat the request,
    301/302/303 of a GET (or HEAD) stay a GET; a write they would turn into a GET is
    refused rather than silently dropped."""
    try:
        target = str(httpx.URL(url).join(location))
    except httpx.InvalidURL:
        raise OutOfBounds(
            GitHubRedirectRefused, f"a {status} redirect to an unreadable URL"
        ) from None
    if status in _KEEPS_METHOD:
        return method, target, json_body
    if method in ("GET", "HEAD"):
        return method, target, None
    raise OutOfBounds(
        GitHubRedirectRefused,
        f"a {status} redirect of a {method} would repeat it as a GET; not followed",
    )


def _check_origin(url: str, origin: Origin, status: int) -> None:
    target = httpx.URL(url)
    if (target.scheme, target.host, target.port) != origin:
        port = f":{target.port}" if target.port is not None else ""
        raise OutOfBounds(
            GitHubRedirectRefused,
            f"a {status} redirect leaves the API's origin for "
            f"{target.scheme}://{target.host}{port}; not followed",
        )
