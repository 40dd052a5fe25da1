"""The HTTP core every GitHub call goes through: one token, paced requests, one error map.

:class:`GitHubSession` owns the connection, the token and its pacer. It sends every
request (:meth:`~GitHubSession._send`, within the bounds of engine.github.bounded: the
decoded body capped, one deadline, redirects only within the API's origin), follows
``Link: rel="next"`` through the one pagination loop (:meth:`~GitHubSession._paginate`),
and translates every failure at this
one boundary into one :class:`~engine.github.types.GitHubError` class per failure kind,
from one table: :data:`_TRANSPORT_ERRORS` (httpx exceptions), :func:`status_error_class`
(HTTP statuses and rate-limit headers) and :data:`_GRAPHQL_ERRORS` (GraphQL error types).
Its public calls are the generic ones: :meth:`~GitHubSession.request` (one REST call)
and :meth:`~GitHubSession.graphql`; :meth:`~GitHubSession.error` builds a redacted,
logged error for a failure a caller finds in an answer. The typed, conditional reads
are engine.github.client's :class:`~engine.github.client.GitHubClient`, built on this.

The token never appears in a log line, an exception message, a repr or a returned
object: messages built from responses go through :func:`redact`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypedDict, TypeVar

import httpx

from engine import __version__
from engine.closable import Closable
from engine.errors import ConfigError, InvalidInput
from engine.github.bounded import ACCEPT_ENCODING, Bounds, OutOfBounds, send_bounded
from engine.github.limits import READ_POINTS, WRITE_POINTS, points_of
from engine.github.pacing import RequestPacer, pacer_for, token_identity, utcnow
from engine.github.parse import json_name, parse_rate, said_message
from engine.github.tokencache import TokenSource
from engine.github.types import (
    RATE_LIMITED,
    SECONDARY_RATE_LIMITED,
    GitHubAuthError,
    GitHubError,
    GitHubErrorKind,
    GitHubHttpError,
    GitHubMalformedPayload,
    GitHubNetworkError,
    GitHubNotFound,
    GitHubRateLimited,
    GitHubSecondaryRateLimited,
    GitHubServerError,
    GitHubSettings,
    RateInfo,
)

# The logger of every GitHub request line (named for the module the client was, so log
# filters keep working).
logger = logging.getLogger("engine.github.client")

API_VERSION = "2022-11-28"
DEFAULT_RETRY_AFTER = 60.0
_MESSAGE_LIMIT = 300
T = TypeVar("T")


def redact(text: str, token: str | None) -> str:
    """``text`` with every occurrence of ``token`` replaced by ``***``."""
    return text.replace(token, "***") if token else text


# == the error translation table =========================================================

# An httpx exception -> its error class and message; the first row that matches wins.
_TRANSPORT_ERRORS: tuple[tuple[type[httpx.HTTPError], type[GitHubErrorKind], str], ...] = (
    (httpx.ConnectError, GitHubNetworkError, "cannot reach {host} for {where}: {kind}: {exc}"),
    (
        httpx.TransportError,
        GitHubNetworkError,
        "no complete answer from {host} for {where}: {kind}: {exc}",
    ),
    (httpx.DecodingError, GitHubMalformedPayload, "{where}: undecodable body: {exc}"),
    (httpx.HTTPError, GitHubHttpError, "{where}: {kind}: {exc}"),
)
_STATUS_ERRORS: dict[int, type[GitHubErrorKind]] = {401: GitHubAuthError, 404: GitHubNotFound}
# A GraphQL error ``type`` -> its error class (any other type: malformed_payload).
_GRAPHQL_ERRORS: dict[str, type[GitHubErrorKind]] = {
    "NOT_FOUND": GitHubNotFound,
    "RATE_LIMITED": GitHubRateLimited,
}


def status_error_class(status: int, headers: Mapping[str, str], text: str) -> type[GitHubErrorKind]:
    """The error class of an unwanted HTTP answer (``text``: GitHub's message).

    403/429 is the primary rate limit when ``x-ratelimit-remaining`` is 0 and nothing
    names the secondary limit; the secondary one when the message names it, a
    ``retry-after`` is sent, or the status is 429; else 403 is a plain ``http_error``.
    """
    if status in (403, 429):
        secondary = "secondary rate limit" in text.lower() or "retry-after" in headers
        if headers.get("x-ratelimit-remaining") == "0" and not secondary:
            return GitHubRateLimited
        if secondary or status == 429:
            return GitHubSecondaryRateLimited
    if status in _STATUS_ERRORS:
        return _STATUS_ERRORS[status]
    return GitHubServerError if status >= 500 else GitHubHttpError


def _seconds(value: str | None) -> float:
    try:
        seconds = float(value) if value is not None else DEFAULT_RETRY_AFTER
    except ValueError:
        return DEFAULT_RETRY_AFTER
    return seconds if seconds >= 0 else DEFAULT_RETRY_AFTER


def _log_response(response: httpx.Response) -> None:
    """One DEBUG line per GitHub request: method, path, status and the rate budget left
    (never a header value that could hold the token; query strings are dropped)."""
    request = response.request
    logger.debug(
        "HTTP %s %s -> %d (rate remaining %s)",
        request.method,
        request.url.path,
        response.status_code,
        response.headers.get("x-ratelimit-remaining", "?"),
    )


@dataclass(frozen=True)
class _Pages:
    """What :meth:`GitHubSession._paginate` read. ``next_url`` is None when the listing was
    read to its end; ``first``/``first_next`` are the first page's items and next link."""

    items: list[Any]
    first: list[Any]
    first_next: str | None
    next_url: str | None
    pages: int
    rate: RateInfo | None
    stopped: bool


def _record_rate(identity: str, headers: Mapping[str, str]) -> None:
    """Note the rate-limit headers for the engine's gauges (engine.github.ratelog, read by
    engine.run.metrics at scrape time; the send path never loads prometheus_client)."""
    from engine.github import ratelog

    ratelog.note(identity, headers)


class SessionOptions(TypedDict, total=False):
    """The keyword options of :class:`GitHubSession` (and of the client built on it);
    each omitted one takes the default of ``GitHubSession.__init__``."""

    transport: httpx.BaseTransport | None
    pacer: RequestPacer | None
    clock: Callable[[], datetime]
    connect_timeout: float
    read_timeout: float
    record_rates: bool
    token_source: TokenSource | None


class GitHubSession(Closable):
    """The HTTP session of one token (``Settings.github_token``; None: anonymous).

    ``transport`` replaces the network (an ``httpx.MockTransport`` in tests); ``pacer``
    defaults to the process-wide :func:`pacer_for` of the token; ``clock`` dates
    secondary-limit deferrals (and, in the client, cache entries); ``record_rates=False``
    leaves the engine's rate-limit gauges alone (a process that exports no metrics);
    ``token_source`` gives the token of each request instead of the settings' (a GitHub
    App's, refreshed by the source; a 401 makes the source drop that token and the
    request goes once more with a new one, the only resend). It
    is thread-safe, never sleeps itself (waiting is the pacer's: inject ``sleep`` there) and never
    retries: a failure raises :class:`GitHubError` and the caller's next poll is the retry.
    """

    def __init__(
        self,
        settings: GitHubSettings,
        *,
        transport: httpx.BaseTransport | None = None,
        pacer: RequestPacer | None = None,
        clock: Callable[[], datetime] = utcnow,
        connect_timeout: float = 10.0,
        read_timeout: float = 30.0,
        record_rates: bool = True,
        token_source: TokenSource | None = None,
    ) -> None:
        self.api_url = settings.github_api_url.rstrip("/")
        self._record_rates = record_rates
        try:
            base = httpx.URL(self.api_url)
        except httpx.InvalidURL:
            base = httpx.URL()
        if base.scheme not in ("http", "https") or not base.host:
            raise ConfigError(
                f"GITHUB_API_URL must be an http(s) URL, got {self.api_url!r}", "invalid_setting"
            )
        self._origin = (base.scheme, base.host, base.port)
        self.bounds = Bounds.of(settings)
        self._token = settings.github_token
        self._source = token_source
        self.token_identity = (
            token_source.identity if token_source is not None else token_identity(self._token)
        )
        self.pacer = pacer if pacer is not None else pacer_for(self.token_identity)
        self._clock = clock
        headers = {
            "Accept": "application/vnd.github+json",
            "Accept-Encoding": ACCEPT_ENCODING,  # what engine.github.bounded inflates
            "X-GitHub-Api-Version": API_VERSION,
            "User-Agent": f"li/{__version__}",
        }
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        self._http = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(
                connect=connect_timeout, read=read_timeout, write=read_timeout, pool=read_timeout
            ),
            transport=transport,
            # GitHub answers 301 for a renamed repository: engine.github.bounded follows
            # it, within the API's origin only (issue 24).
            follow_redirects=False,
            event_hooks={"response": [_log_response, self._note_rate]},
        )

    def _note_rate(self, response: httpx.Response) -> None:
        if self._record_rates:
            _record_rate(self.token_identity, response.headers)
        rate = parse_rate(response.headers)
        if rate is not None and response.status_code < 400:
            self.pacer.observe(rate)

    def __repr__(self) -> str:
        token = "app" if self._source else "set" if self._token else "none"
        return f"<{type(self).__name__} {self.api_url} token={token} ({self.token_identity})>"

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    # -- generic calls ------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str | int] | None = None,
        body: Mapping[str, Any] | None = None,
        expect: type[T],
    ) -> T:
        """One unconditional ``GET``, ``POST`` or ``PATCH`` of ``{api_url}/{path}`` (a write
        sends ``body``); its JSON, of type ``expect`` (else ``malformed_payload``): GET and
        PATCH answer 200, POST 200 or 201; never retried, errors translated as always."""
        if method not in ("GET", "POST", "PATCH"):
            raise InvalidInput(f"a request is GET, POST or PATCH, not {method!r}", "invalid_method")
        url = self._url(path, params)
        if method == "GET":
            response = self._send("GET", url)
        else:
            ok = (200,) if method == "PATCH" else (200, 201)
            response = self._send(method, url, json_body=dict(body or {}), ok=ok)
        return self._json(response, expect, url)

    def graphql(
        self,
        query: str,
        variables: Mapping[str, Any] | None = None,
        *,
        what: str = "a GraphQL request",
    ) -> dict[str, Any]:
        """``POST /graphql``; returns ``data``. A response with ``errors`` raises the class
        :data:`_GRAPHQL_ERRORS` gives the first error's ``type`` (``not_found``,
        ``rate_limited``), else ``malformed_payload`` (GitHub refused the query itself);
        ``what`` names the request in that message."""
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("a GraphQL query is a non-empty string", "invalid_query")
        url = f"{self.api_url}/graphql"
        sent = {"query": query, "variables": dict(variables or {})}
        mutation = query.lstrip().startswith("mutation")
        points = WRITE_POINTS if mutation else READ_POINTS
        response = self._send("POST", url, json_body=sent, points=points)
        payload = self._json(response, dict, url)
        errors = payload.get("errors")
        if errors:
            first = errors[0] if isinstance(errors, list) and errors else {}
            kind = first.get("type") if isinstance(first, dict) else None
            text = first.get("message") if isinstance(first, dict) else None
            said = f"GitHub refused {what}: {text or errors!s}"[:_MESSAGE_LIMIT]
            error = _GRAPHQL_ERRORS.get(str(kind), GitHubMalformedPayload)
            raise self.error(error, said, status=response.status_code)
        data = payload.get("data")
        if not isinstance(data, dict):
            raise self.error(GitHubMalformedPayload, "GraphQL answer without a data object", 200)
        return data

    def error(
        self,
        kind: type[GitHubErrorKind],
        message: str,
        status: int | None = None,
        *,
        retry_after: float | None = None,
        reset_at: datetime | None = None,
    ) -> GitHubError:
        """The error of class ``kind`` for ``message``, with the token redacted, logged
        (WARNING for a rate limit, DEBUG otherwise); the caller raises it. For failures a
        caller of the generic calls detects in an answer (a missing object, a bad shape)."""
        message = redact(message, self._token)
        loud = kind.REASON in (RATE_LIMITED, SECONDARY_RATE_LIMITED)
        logger.log(logging.WARNING if loud else logging.DEBUG, "%s [%s]", message, kind.REASON)
        return kind(message, status=status, retry_after=retry_after, reset_at=reset_at)

    # -- plumbing -------------------------------------------------------------------------

    def _url(self, path: str, params: Mapping[str, str | int] | None = None) -> str:
        """``{api_url}/{path}?{params}``; ``path`` is relative, without dot segments."""
        if not path or path.startswith("/") or any(p in (".", "..") for p in path.split("/")):
            raise InvalidInput(f"a REST path is relative, got {path!r}", "invalid_path")
        return str(httpx.URL(f"{self.api_url}/{path}", params=dict(params or {})))

    def _paginate(
        self,
        response: httpx.Response,
        url: str,
        max_pages: int,
        *,
        items_key: str | None = None,
        stop: Callable[[list[Any]], bool] | None = None,
    ) -> _Pages:
        """The one pagination loop: the items of ``response`` (the first page, read from
        ``url``) and of every ``Link: rel="next"`` page after it, up to ``max_pages`` pages,
        or until ``stop`` says a page was the last one needed. A page is a JSON array, or
        with ``items_key`` an object holding the array under that key."""
        first = self._page_items(response, url, items_key)
        next_url = first_next = self._next_link(response)
        items, pages, rate = list(first), 1, parse_rate(response.headers)
        stopped = stop is not None and stop(first)
        while next_url is not None and pages < max_pages and not stopped:
            page = self._send("GET", next_url)
            rate = parse_rate(page.headers) or rate
            got = self._page_items(page, next_url, items_key)
            items += got
            next_url = self._next_link(page)
            pages += 1
            stopped = stop is not None and stop(got)
        return _Pages(items, first, first_next, next_url, pages, rate, stopped)

    def _page_items(self, page: httpx.Response, url: str, items_key: str | None) -> list[Any]:
        if items_key is None:
            return self._json(page, list, url)
        wrapper = self._json(page, dict, url)
        return self._as_list(wrapper.get(items_key), f"{items_key} of {self._where(url)}")

    def _send(
        self,
        method: str,
        url: str,
        *,
        etag: str | None = None,
        json_body: dict[str, Any] | None = None,
        ok: tuple[int, ...] = (200,),
        points: int | None = None,
    ) -> httpx.Response:
        """One paced request within :attr:`bounds` (engine.github.bounded: body size,
        deadline, same-origin redirects); returns an answer whose status is in ``ok`` (or
        a 304 when ``etag`` was sent), else raises the translated error. ``points``: its cost in
        GitHub's secondary limit (default: by method, engine.github.limits.points_of)."""
        where = f"{method} {self._where(url)}"
        self.pacer.acquire(points_of(method) if points is None else points)
        token = self._current_token()
        response = self._send_once(method, url, where, etag, json_body, token)
        if response.status_code == 401 and self._source is not None and token:
            self._source.invalidate(token)  # expired or revoked early: once more, fresh
            token = self._current_token()
            response = self._send_once(method, url, where, etag, json_body, token)
        if response.status_code in ok or (response.status_code == 304 and etag):
            return response
        raise self._status_error(response, where)

    def _current_token(self) -> str | None:
        """The token source's token for the next request (None without a source: the
        client's fixed header holds the settings' token)."""
        if self._source is None:
            return None
        token = self._source.token()
        self._token = token  # what redact() hides from now on
        return token

    def _send_once(
        self,
        method: str,
        url: str,
        where: str,
        etag: str | None,
        body: dict[str, Any] | None,
        token: str | None,
    ) -> httpx.Response:
        headers = {"If-None-Match": etag} if etag else {}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        try:
            with self.pacer.in_flight():
                return send_bounded(
                    self._http,
                    method,
                    url,
                    headers=headers or None,
                    json_body=body,
                    bounds=self.bounds,
                    origin=self._origin,
                )
        except httpx.HTTPError as exc:
            raise self._transport_error(exc, where) from None
        except OutOfBounds as exc:
            raise self.error(exc.kind, f"{where}: {exc.message}") from None

    def _transport_error(self, exc: httpx.HTTPError, where: str) -> GitHubError:
        for caught, kind, template in _TRANSPORT_ERRORS:
            if isinstance(exc, caught):
                host = self._host_port()
                said = template.format(where=where, host=host, kind=type(exc).__name__, exc=exc)
                return self.error(kind, said)
        raise AssertionError("httpx.HTTPError is the table's last row")  # pragma: no cover

    def _status_error(self, response: httpx.Response, where: str) -> GitHubError:
        status, headers = response.status_code, response.headers
        text = self._error_text(response)
        said = f"GitHub answered {status} for {where}: {text}"
        kind = status_error_class(status, headers, text)
        if kind is GitHubRateLimited:
            rate = parse_rate(headers)
            reset_at = rate.reset if rate else self._clock() + timedelta(minutes=1)
            self.pacer.defer_until(reset_at, RATE_LIMITED)
            return self.error(kind, said, status, reset_at=reset_at)
        if kind is GitHubSecondaryRateLimited:
            retry_after = _seconds(headers.get("retry-after"))
            reset_at = self._clock() + timedelta(seconds=retry_after)
            self.pacer.defer_until(reset_at, SECONDARY_RATE_LIMITED)
            return self.error(kind, said, status, retry_after=retry_after, reset_at=reset_at)
        return self.error(kind, said, status)

    def _error_text(self, response: httpx.Response) -> str:
        """GitHub's ``message`` (or the start of the body), one line, redacted."""
        text = said_message(response)
        if text is None:
            text = response.text[:_MESSAGE_LIMIT] or response.reason_phrase
        text = " ".join(text.split())[:_MESSAGE_LIMIT]
        return redact(text, self._token)

    def _json(self, response: httpx.Response, kind: type[T], url: str) -> T:
        where = f"{response.request.method} {self._where(url)}"
        try:
            payload = response.json()
        except ValueError as exc:
            said = f"{where}: the body is not JSON ({type(exc).__name__})"
            raise self.error(GitHubMalformedPayload, said, response.status_code) from None
        if not isinstance(payload, kind):
            said = f"{where}: expected a JSON {json_name(kind)}, got {json_name(type(payload))}"
            raise self.error(GitHubMalformedPayload, said, response.status_code)
        return payload

    def _as_list(self, value: Any, what: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.error(GitHubMalformedPayload, f"the {what} is not a list")
        return value

    def _next_link(self, response: httpx.Response) -> str | None:
        url = response.links.get("next", {}).get("url")
        if url is None:
            return None
        target = httpx.URL(url)
        # The Authorization header goes with every request: never follow it elsewhere.
        if (target.scheme, target.host, target.port) != self._origin:
            raise self.error(
                GitHubMalformedPayload,
                f"GitHub's next-page link leaves {self.api_url}: {self._where(url)}",
                response.status_code,
            )
        return url

    def _host_port(self) -> str:
        """``host:port`` of the API (the only origin a request goes to), the port always
        shown, default or not; an IPv6 host in brackets."""
        scheme, host, port = self._origin
        shown = f"[{host}]" if ":" in host else host
        return f"{shown}:{port or (443 if scheme == 'https' else 80)}"

    def _where(self, url: str) -> str:
        target = httpx.URL(url)
        path = target.raw_path.decode("ascii", errors="replace")
        return redact(path, self._token)
