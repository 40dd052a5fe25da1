"""The GitHub client: the engine's typed, conditional reads on top of the HTTP core.

Why it is built this way: docs/decisions.md D11.

:class:`GitHubClient` is a :class:`~engine.github.session.GitHubSession` (one token,
paced requests, the one pagination loop and the one error translation table) plus an
ETag cache. It returns frozen dataclasses of engine.github.types, never raw dicts
(except from the generic :meth:`~GitHubClient.get_rest`, ``request`` and ``graphql``).

Conditional requests: the first page of a listing is sent with ``If-None-Match``; the
ETag and the body of the last 200 live in an :class:`~engine.github.types.EtagCache` (the
SQL one, engine.github.etag, persists them in ``http_cache``), so a 304 - which costs no
rate limit - still hands back the last known body.

Calls only the wrapper makes (GraphQL pull facts, compare, single comments) are not here but in
wrapper.gh, built on the generic calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Unpack

import httpx

from engine.errors import InvalidInput
from engine.github.pacing import pacer_for, token_identity
from engine.github.parse import (
    COMMENT_SHAPE,
    COMMENT_SHAPE_ID,
    PULL_SHAPE,
    PULL_SHAPE_ID,
    parse_pull_page,
    parse_rate,
    project,
    unique_pulls,
)
from engine.github.session import GitHubSession, SessionOptions, logger, redact
from engine.github.types import (
    CachedResponse,
    CommentListing,
    EtagCache,
    EtagSink,
    GitHubSettings,
    MemoryEtagCache,
    PullListing,
    RestResult,
    SkippedItem,
    validate_repo_name,
)
from engine.timefmt import iso_utc

CACHE_KEY_LIMIT = 500
ETAG_LIMIT = 200
# kind -> the path of its repository-wide comment feed.
_FEED_PATHS = {"issue": "issues/comments", "diff": "pulls/comments"}


class GitHubClient(GitHubSession):
    """A GitHub REST client for one token (``Settings.github_token``; None: anonymous).

    ``transport`` replaces the network (an ``httpx.MockTransport`` in tests); ``cache``
    defaults to a :class:`MemoryEtagCache`; the other options are the session's
    (:class:`~engine.github.session.SessionOptions`); ``pacer`` defaults to the process-wide
    :func:`pacer_for` of the token; ``clock`` dates cache entries and secondary-limit
    deferrals. The client is thread-safe, never sleeps itself (waiting is the pacer's:
    inject ``sleep`` there) and never retries: a failure raises
    :class:`~engine.github.types.GitHubError` and the caller's next poll is the retry.
    """

    def __init__(
        self,
        settings: GitHubSettings,
        *,
        cache: EtagCache | None = None,
        **options: Unpack[SessionOptions],
    ) -> None:
        super().__init__(settings, **options)
        self._cache: EtagCache = cache if cache is not None else MemoryEtagCache()

    # -- listings -----------------------------------------------------------------------

    def list_pulls(
        self,
        repo: str,
        *,
        state: str = "open",
        base: str | None = None,
        sort: str = "updated",
        direction: str = "desc",
        per_page: int = 100,
        max_pages: int = 3,
        conditional: bool = True,
        stop_before: datetime | None = None,
        cache_scope: str = "",
        etag_sink: EtagSink | None = None,
    ) -> PullListing:
        """Pulls of ``repo`` (``owner/name``), following ``Link: rel="next"`` verbatim.

        Only the first page is conditional. Its ETag entry is written only after every
        page was read, so a listing that failed half-way is fetched in full next time
        instead of being hidden behind a 304. Items that cannot be parsed (a ghost
        author, a missing field) are skipped with a warning; duplicates that a concurrent
        update pushes onto the next page are dropped.

        ``stop_before`` (with ``sort=updated``, ``direction=desc``): stop paging once a page
        holds an item updated strictly before it; everything at or after it has then been
        read, and the listing counts as ``complete``.

        ``cache_scope`` separates ETag entries of callers that must not share one (two
        schedules on one repository: a 200 seen by one must not become the other's 304).
        The ETag is stored only for a conditional, complete listing, so a 304 always
        stands for a complete listing (``complete`` is True then) and an incomplete scan
        is read in full again at the next poll.

        ``etag_sink``: the new cache entry goes there instead of into the cache, for a
        caller that stores it only once it has acted on the listing (engine.poll).
        """
        validate_repo_name(repo)
        if not 1 <= per_page <= 100:
            raise InvalidInput(f"per_page must be 1..100, got {per_page}", "invalid_per_page")
        _check_pages(max_pages)
        params: dict[str, str | int] = {
            "state": state,
            "sort": sort,
            "direction": direction,
            "per_page": per_page,
        }
        if base is not None:
            params["base"] = base
        url = self._url(f"repos/{repo}/pulls", params)
        key = self.cache_key(url, cache_scope) if conditional else None
        response, cached = self._conditional_get(url, key)
        if cached is not None:
            pulls, skipped = parse_pull_page(self._as_list(cached.body, "cached pull list"))
            self._log_skipped(repo, skipped)
            logger.debug("pulls of %s unchanged (304)", repo)
            return PullListing(True, pulls, True, skipped, parse_rate(response.headers))

        def reached(page: list[Any]) -> bool:
            assert stop_before is not None
            return any(pull.updated_at < stop_before for pull in parse_pull_page(page)[0])

        read = self._paginate(
            response, url, max_pages, stop=None if stop_before is None else reached
        )
        pulls, skipped = parse_pull_page(read.items)
        self._log_skipped(repo, skipped)
        if read.next_url is not None and not read.stopped:
            logger.warning("pulls of %s: more than %d pages, listing incomplete", repo, read.pages)
        complete = read.next_url is None or read.stopped
        if key and complete:
            first = [project(item, PULL_SHAPE) for item in read.first]
            self._remember(key, response, first, read.first_next, etag_sink)
        return PullListing(False, unique_pulls(pulls), complete, skipped, read.rate)

    def list_comment_feed(
        self,
        repo: str,
        kind: str,
        since: datetime | None,
        *,
        cache_scope: str = "",
        max_pages: int = 3,
        conditional: bool = True,
        etag_sink: EtagSink | None = None,
    ) -> CommentListing:
        """A repository-wide comment feed, ``updated_at`` ascending, from ``since`` on.

        ``kind`` ``issue`` reads ``GET /repos/{repo}/issues/comments`` (conversation
        comments, on issues and pull requests alike), ``diff`` reads
        ``/pulls/comments`` (comments on diff lines). ``since`` (aware; None: from the
        start) is sent as ``since=<ISO Z>``, which GitHub applies inclusively to
        ``updated_at``. ``Link: rel="next"`` is followed verbatim up to ``max_pages``.

        The first page is conditional. Its cache key leaves ``since`` out, so one entry
        per feed and ``cache_scope`` is kept however the watermark moves: an ETag names a
        body, so a 304 for another ``since`` still means "this very body". The ETag is
        stored only for a one-page listing: new comments land on the last page, so a 304
        on the first page of a longer feed would prove nothing. ``etag_sink`` as for
        :meth:`list_pulls`.
        """
        validate_repo_name(repo)
        if kind not in _FEED_PATHS:
            raise InvalidInput(f"a comment feed is issue or diff, got {kind!r}", "invalid_feed")
        _check_pages(max_pages)
        params: dict[str, str | int] = {"sort": "updated", "direction": "asc", "per_page": 100}
        stable = self._url(f"repos/{repo}/{_FEED_PATHS[kind]}", params)
        if since is not None:
            if since.tzinfo is None:
                raise InvalidInput("since must be timezone-aware", "invalid_since")
            stamp = iso_utc(since)
            params = {"since": stamp, **params}
        url = self._url(f"repos/{repo}/{_FEED_PATHS[kind]}", params)
        key = f"{stable}#{self.token_identity};shape={COMMENT_SHAPE_ID};scope={cache_scope}"
        key_ok = conditional and len(key) <= CACHE_KEY_LIMIT
        response, cached = self._conditional_get(url, key if key_ok else None)
        if cached is not None:
            logger.debug("%s comments of %s unchanged (304)", kind, repo)
            items = self._as_list(cached.body, "cached comment feed")
            return CommentListing(True, items, True, parse_rate(response.headers))

        read = self._paginate(response, url, max_pages)
        if read.next_url is not None:
            logger.warning(
                "%s comments of %s: more than %d pages, the rest next time", kind, repo, read.pages
            )
        if key_ok and read.pages == 1 and read.next_url is None:
            first = [project(item, COMMENT_SHAPE) for item in read.first]
            self._remember(key, response, first, None, etag_sink)
        return CommentListing(False, read.items, read.next_url is None, read.rate)

    def forget_comment_feeds(self, repo: str) -> int:
        """Drop the cached comment-feed ETags of ``repo`` (every token, every scope)."""
        validate_repo_name(repo)
        return sum(
            self._cache.drop(f"{self.api_url}/repos/{repo}/{path}?")
            for path in _FEED_PATHS.values()
        )

    def cache_key(self, url: str, scope: str = "") -> str | None:
        """The ETag cache key of a pull-list ``url`` for this token and caller scope
        (None: too long)."""
        key = f"{url}#{self.token_identity};shape={PULL_SHAPE_ID};scope={scope}"
        return key if len(key) <= CACHE_KEY_LIMIT else None

    def forget_pulls(self, repo: str) -> int:
        """Drop the cached pull-list ETags of ``repo`` (every token, every filter).

        The next :meth:`list_pulls` is then a full 200. A caller that could not act on a
        listing (a crash between fetch and record) calls this at start-up.
        """
        validate_repo_name(repo)
        return self._cache.drop(f"{self.api_url}/repos/{repo}/pulls?")

    # -- generic conditional reads ------------------------------------------------------

    def get_rest(
        self,
        path: str,
        params: Mapping[str, str | int] | None = None,
        *,
        paginate: bool = False,
        items_key: str | None = None,
        max_pages: int = 10,
        conditional: bool = True,
        cache_scope: str = "",
    ) -> RestResult:
        """``GET {api_url}/{path}`` with ``params``; raw JSON, errors translated as for
        every request.

        Conditional: the first page carries the ``If-None-Match`` of the last 200 of the
        same URL (token and ``cache_scope`` in the key), so an unchanged resource costs no
        rate limit and hands back the cached body. With ``paginate`` the body is a list:
        ``Link: rel="next"`` is followed verbatim up to ``max_pages``, and each page's items
        are the page itself or, with ``items_key``, the list under that key (e.g.
        ``check_runs``). The ETag is stored only for a one-page answer, since a 304 on the
        first page of a longer listing would prove nothing about the others.
        """
        url = self._url(path, params)
        _check_pages(max_pages)
        key = f"{url}#{self.token_identity};shape=raw;scope={cache_scope}"
        key_ok = conditional and len(key) <= CACHE_KEY_LIMIT
        response, cached = self._conditional_get(url, key if key_ok else None)
        if cached is not None:
            return RestResult(True, cached.body, True, parse_rate(response.headers))
        if not paginate:
            body: Any = self._json(response, object, url)
            if key_ok:
                self._remember(key, response, body, None)
            return RestResult(False, body, True, parse_rate(response.headers))
        read = self._paginate(response, url, max_pages, items_key=items_key)
        if key_ok and read.pages == 1 and read.next_url is None:
            self._remember(key, response, read.items, None)
        return RestResult(False, read.items, read.next_url is None, read.rate)

    def post_rest(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        """``POST {api_url}/{path}`` with the JSON ``payload``; returns the created object
        (200 or 201). Never conditional, never retried; errors as for every request."""
        return self.request("POST", path, body=payload, expect=dict)

    # -- the ETag cache ------------------------------------------------------------------

    def _conditional_get(
        self, url: str, key: str | None
    ) -> tuple[httpx.Response, CachedResponse | None]:
        """GET ``url`` with the ETag cached under ``key`` (None: unconditionally); the cached
        entry comes back only when GitHub answered 304."""
        cached = self._cache.get(key) if key else None
        response = self._send("GET", url, etag=cached.etag if cached else None)
        return response, cached if response.status_code == 304 else None

    def _remember(
        self,
        key: str,
        response: httpx.Response,
        body: Any,
        link: str | None,
        sink: EtagSink | None = None,
    ) -> None:
        """Cache ``body`` under ``key`` with the ETag of ``response`` (if it has a short one),
        or hand the entry to ``sink``."""
        etag = response.headers.get("etag")
        if etag and len(etag) <= ETAG_LIMIT:
            entry = CachedResponse(etag, body, link, self._clock())
            if sink is not None:
                sink(key, entry)
            else:
                self._cache.put(key, entry)

    def _log_skipped(self, repo: str, skipped: list[SkippedItem]) -> None:
        for item in skipped:
            logger.warning(
                "skipped pull #%s of %s: %s [%s]",
                item.number if item.number is not None else "?",
                repo,
                redact(item.detail, self._token),
                item.reason,
            )


def _check_pages(max_pages: int) -> None:
    if max_pages < 1:
        raise InvalidInput(f"max_pages must be at least 1, got {max_pages}", "invalid_pages")


def github_client(
    settings: GitHubSettings, cache: EtagCache | None = None, *, record_rates: bool = True
) -> GitHubClient:
    """The client a process uses: the settings' timeout and its token's shared pacer at
    ``LI_GITHUB_RATE`` requests a minute; ``record_rates=False`` for a process that
    exports no metrics (a caller outside the engine). With ``github_app`` set, the token
    is the App installation's, shared by every process (engine.github.appauth)."""
    source = None
    app = getattr(settings, "github_app", None)
    if app is not None and app.many:  # an engine's router serves these (D110)
        from engine.errors import ConfigError

        raise ConfigError(
            "GITHUB_APP_INSTALLATIONS names many installations; one client needs "
            "GITHUB_APP_INSTALLATION_ID or GITHUB_APP_REPOSITORY",
            "invalid_app_config",
        )
    if app is not None:  # a GitHub App's installation token (issue 30)
        from engine.github.appauth import AppTokenSource

        source = AppTokenSource(app, settings)
    identity = source.identity if source else token_identity(settings.github_token)
    return GitHubClient(
        settings,
        cache=cache,
        pacer=pacer_for(identity, settings.github_requests_per_minute),
        token_source=source,
        connect_timeout=min(10.0, settings.github_timeout_seconds),
        read_timeout=settings.github_timeout_seconds,
        record_rates=record_rates,
    )
