"""The GitHub REST client: auth, ETag cache, pagination, rate limits, typed results.

Why it is built this way: docs/decisions.md D11.

Every HTTP call of the engine goes through :class:`GitHubClient`. It returns frozen
dataclasses (:class:`PullRequest`, :class:`PullListing`, :class:`RateInfo`), never raw
dicts, and translates every failure at this one boundary into :class:`GitHubError`::

    GitHubError (LiError)          exit 1, ``status`` = the HTTP status or None
      auth_error                   401: the token is missing, wrong or revoked
      rate_limited                 403/429 with x-ratelimit-remaining 0 (``reset_at``)
      secondary_rate_limited       403/429 naming the secondary limit or with retry-after
                                   (``retry_after``, 60 s when GitHub gives none)
      not_found                    404
      http_error                   any other 4xx (and an unexpected 3xx/304)
      server_error                 5xx
      network_error                no complete answer: refused, timed out, cut off mid-body
      malformed_payload            not JSON, or not the shape this client parses

Conditional requests: the first page of a pull listing is sent with ``If-None-Match``;
the ETag and the body of the last 200 live in an :class:`EtagCache` (the SQL one
persists them in ``http_cache``), so a 304 - which costs no rate limit - still hands back
the last known pulls. Pacing: every request first passes the token's
:class:`RequestPacer`, which also remembers rate-limit deferrals for every other user of
that token in the process.

The token never appears in a log line, an exception message, a repr or a returned
object: messages built from responses go through :func:`redact`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol, TypeVar
from urllib.parse import quote

import httpx

from engine import __version__
from engine.config import Settings
from engine.errors import ConfigError, InvalidInput, LiError
from engine.run.metrics import record_rate

logger = logging.getLogger("engine.github.client")


def utcnow() -> datetime:
    """The current time, aware, in UTC (as engine.store.models.utcnow, without importing the
    ORM: the wrapper's fast paths import this module but never SQLAlchemy; issue 19)."""
    return datetime.now(UTC)


def __getattr__(name: str) -> Any:
    """``engine.github.client.SqlEtagCache`` still resolves; it lives in engine.github.etag so that
    importing the HTTP client does not import SQLAlchemy (issue 19)."""
    if name == "SqlEtagCache":
        from engine.github.etag import SqlEtagCache

        return SqlEtagCache
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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


AUTH_ERROR = "auth_error"
RATE_LIMITED = "rate_limited"
SECONDARY_RATE_LIMITED = "secondary_rate_limited"
NOT_FOUND = "not_found"
HTTP_ERROR = "http_error"
SERVER_ERROR = "server_error"
NETWORK_ERROR = "network_error"
MALFORMED_PAYLOAD = "malformed_payload"
# A skipped listing item whose author is a deleted ("ghost") account: ``user`` is null.
GHOST_USER = "ghost_user"

API_VERSION = "2022-11-28"
DEFAULT_RETRY_AFTER = 60.0
CACHE_KEY_LIMIT = 500
ETAG_LIMIT = 200
_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_MESSAGE_LIMIT = 300
T = TypeVar("T")


class GitHubError(LiError):
    """GitHub refused or failed a request; ``reason`` says how (see the module docstring)."""

    exit_code = 1

    def __init__(
        self,
        message: str,
        reason: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        reset_at: datetime | None = None,
    ) -> None:
        super().__init__(message, reason)
        self.status = status
        self.retry_after = retry_after
        self.reset_at = reset_at

    def __repr__(self) -> str:
        return f"GitHubError({self.message!r}, {self.reason!r}, status={self.status!r})"


def redact(text: str, token: str | None) -> str:
    """``text`` with every occurrence of ``token`` replaced by ``***``."""
    return text.replace(token, "***") if token else text


def token_identity(token: str | None) -> str:
    """A stable, non-reversible name for a token (``anonymous`` without one)."""
    if not token:
        return "anonymous"
    return "sha256:" + hashlib.sha256(token.encode()).hexdigest()[:16]


# == results ============================================================================


@dataclass(frozen=True)
class RateInfo:
    """The ``x-ratelimit-*`` headers of one response."""

    limit: int
    remaining: int
    used: int
    reset: datetime
    resource: str


@dataclass(frozen=True)
class PullRequest:
    """The facts of one pull request the engine acts on. Timestamps are aware UTC.

    ``head_repo_*`` are None when the head repository was deleted (``head.repo: null``).
    """

    number: int
    title: str
    html_url: str
    state: str
    draft: bool
    user_login: str
    user_id: int
    user_type: str
    created_at: datetime
    updated_at: datetime
    merged_at: datetime | None
    head_sha: str
    head_ref: str
    head_repo_full_name: str | None
    head_repo_id: int | None
    head_repo_fork: bool | None
    base_ref: str
    base_repo_full_name: str
    base_repo_id: int
    merge_commit_sha: str | None
    body: str = ""  # the description; GitHub's null becomes ""


def is_same_repo(pr: PullRequest) -> bool:
    """True only when the head repository is provably the base repository.

    Ids are compared first; names (case-insensitively) only when an id is missing. A
    missing head repository (deleted fork) or any missing field is *not* the same repo:
    fail closed.
    """
    if pr.head_repo_id is not None and pr.base_repo_id is not None:
        return pr.head_repo_id == pr.base_repo_id
    if pr.head_repo_full_name and pr.base_repo_full_name:
        return pr.head_repo_full_name.lower() == pr.base_repo_full_name.lower()
    return False


@dataclass(frozen=True)
class SkippedItem:
    """A listing item that could not be parsed; the rest of its page was kept."""

    number: int | None  # None when even the number was unreadable
    reason: str  # ghost_user | malformed_payload
    detail: str


@dataclass(frozen=True)
class PullListing:
    """One pass over a repository's pull list.

    ``unchanged``: the first page answered 304; ``pulls`` is then the cached first page
    and ``complete`` says whether that page was the whole listing. ``complete`` is False
    when more pages existed than ``max_pages`` allowed.
    """

    unchanged: bool
    pulls: list[PullRequest]
    complete: bool
    skipped: list[SkippedItem]
    rate: RateInfo | None


@dataclass(frozen=True)
class CommentListing:
    """One pass over a repository-wide comment feed, oldest ``updated_at`` first.

    ``items`` are the raw comment objects (parsed by the caller, item by item, so one
    unreadable item never hides the rest). ``unchanged``: the first page answered 304 and
    ``items`` is the cached page (the ETag is stored only for a one-page listing, so a
    304 stands for the whole feed). ``complete`` is False when more pages existed than
    ``max_pages`` allowed: the newest items were not read yet.
    """

    unchanged: bool
    items: list[Any]
    complete: bool
    rate: RateInfo | None


@dataclass(frozen=True)
class PullGraph:
    """The GraphQL facts of one pull request (``repository.pullRequest``).

    ``review_decision`` is APPROVED, CHANGES_REQUESTED, REVIEW_REQUIRED or None;
    ``auto_merge_*`` are None when auto-merge is off; ``head_repository`` (OWNER/NAME) is
    None when the head repository was deleted.
    """

    number: int
    state: str  # OPEN | CLOSED | MERGED
    is_draft: bool
    is_cross_repository: bool
    head_repository: str | None
    review_decision: str | None
    auto_merge_enabled_at: datetime | None
    auto_merge_method: str | None
    merge_state_status: str | None
    head_ref_oid: str
    head_ref_name: str
    base_ref_name: str
    url: str

    @property
    def auto_merge_armed(self) -> bool:
        """True when an auto-merge request is enabled."""
        return self.auto_merge_method is not None or self.auto_merge_enabled_at is not None


@dataclass(frozen=True)
class RestResult:
    """One conditional REST read (:meth:`GitHubClient.get_rest`).

    ``unchanged``: the first page answered 304 and ``body`` is the cached body of the last
    200. For a listing (``paginate``) ``body`` is every item of every page read, and
    ``complete`` is False when more pages existed than ``max_pages`` allowed.
    """

    unchanged: bool
    body: Any
    complete: bool
    rate: RateInfo | None


@dataclass(frozen=True)
class Comparison:
    """``GET /compare/{base}...{head}``: commits of head not in base, and of base not in head."""

    ahead_by: int
    behind_by: int
    status: str  # identical | ahead | behind | diverged


# == ETag cache ==========================================================================


@dataclass(frozen=True)
class CachedResponse:
    """What a 304 stands for: the ETag and body of the last 200."""

    etag: str
    body: Any
    link_next: str | None
    fetched_at: datetime
    status: int = 200


class EtagCache(Protocol):
    """Conditional-request memory, keyed by request URL plus token identity.

    ``get`` returns the entry or None; ``put`` replaces it; ``drop(prefix)`` deletes every
    entry whose key starts with ``prefix`` and returns how many went. Implementations are
    safe to share between threads.
    """

    def get(self, key: str) -> CachedResponse | None: ...

    def put(self, key: str, entry: CachedResponse) -> None: ...

    def drop(self, prefix: str) -> int: ...


class MemoryEtagCache:
    """An :class:`EtagCache` in a dict: for one process, or tests without a database."""

    def __init__(self) -> None:
        self._entries: dict[str, CachedResponse] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> CachedResponse | None:
        with self._lock:
            return self._entries.get(key)

    def put(self, key: str, entry: CachedResponse) -> None:
        with self._lock:
            self._entries[key] = entry

    def drop(self, prefix: str) -> int:
        with self._lock:
            gone = [key for key in self._entries if key.startswith(prefix)]
            for key in gone:
                del self._entries[key]
            return len(gone)


# == pacing ==============================================================================


class RequestPacer:
    """Spaces one token's requests and holds them back after a rate-limit answer.

    Contract: call :meth:`acquire` right before each request. It returns (after sleeping
    if needed, with the injected ``sleep``) once the request may go, and returns the
    seconds it waited. Thread-safe: concurrent callers reserve successive slots under a
    lock and sleep outside it.

    Choices:

    * Minimum spacing, not a token bucket: requests are at least ``60 / rate_per_minute``
      seconds apart, never in bursts, because GitHub's secondary limits punish bursts and
      a poller gains nothing from them. Spacing runs on the ``monotonic`` clock so a wall
      clock stepping back cannot stall requests.
    * Deferral: the client calls :meth:`defer_until` on ``rate_limited`` (until the reset)
      and ``secondary_rate_limited`` (now + retry-after). The client never sleeps through
      a long reset inside a request: it raises, and the pacer remembers. A later
      :meth:`acquire` waits out a deferral of at most ``max_wait`` seconds, and raises a
      :class:`GitHubError` with the deferral's reason (``rate_limited`` or
      ``secondary_rate_limited``) and ``reset_at`` at once when the wait would be longer,
      so a daemon tick fails fast and the schedule retries on its next poll.
    """

    def __init__(
        self,
        rate_per_minute: float = 600,
        *,
        max_wait: float = 5.0,
        clock: Callable[[], datetime] = utcnow,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if rate_per_minute <= 0:
            raise InvalidInput(
                f"rate_per_minute must be positive, got {rate_per_minute}", "invalid_rate"
            )
        self.rate_per_minute = rate_per_minute
        self.interval = 60.0 / rate_per_minute
        self.max_wait = max_wait
        self._clock = clock
        self._monotonic = monotonic
        self._sleep = sleep
        self._lock = threading.Lock()
        self._next_slot: float | None = None  # monotonic seconds
        self._deferred_until: datetime | None = None  # wall clock, for messages
        self._deferred_slot: float | None = None  # the same moment, monotonic
        self._deferred_reason = RATE_LIMITED

    @property
    def deferred_until(self) -> datetime | None:
        """When a deferral ends (None when none is pending)."""
        with self._lock:
            if self._deferred_slot is None or self._deferred_slot <= self._monotonic():
                return None
            return self._deferred_until

    def defer_until(self, when: datetime, reason: str = RATE_LIMITED) -> None:
        """Hold every later request of this token until ``when`` (a later one wins)."""
        with self._lock:
            slot = self._monotonic() + (when - self._clock()).total_seconds()
            if self._deferred_slot is None or slot > self._deferred_slot:
                self._deferred_slot, self._deferred_until = slot, when
                self._deferred_reason = reason

    def acquire(self) -> float:
        """Wait for this token's next slot; raise if a deferral outlasts ``max_wait``.

        A request that was already waiting when a rate-limit answer set a deferral
        re-checks it after its sleep (issue 10): it waits the deferral out or raises,
        it is never sent into the limit.
        """
        waited = 0.0
        while True:
            waited += self._acquire_once()
            with self._lock:
                held = self._deferred_slot is not None and self._deferred_slot > self._monotonic()
            if not held:
                return waited

    def _acquire_once(self) -> float:
        with self._lock:
            now = self._monotonic()
            slot = now if self._next_slot is None else max(now, self._next_slot)
            if self._deferred_slot is not None and self._deferred_slot > now:
                if self._deferred_slot - now > self.max_wait:
                    until = self._deferred_until
                    stamp = until.strftime("%Y-%m-%dT%H:%M:%SZ") if until else "later"
                    raise GitHubError(
                        f"GitHub requests for this token are paused until {stamp}",
                        self._deferred_reason,
                        retry_after=self._deferred_slot - now,
                        reset_at=until,
                    )
                slot = max(slot, self._deferred_slot)
            self._next_slot = slot + self.interval
        wait = slot - now
        if wait > 0:
            self._sleep(wait)
        return max(wait, 0.0)


_PACERS: dict[str, RequestPacer] = {}
_PACERS_LOCK = threading.Lock()


def pacer_for(identity: str, rate_per_minute: float = 600) -> RequestPacer:
    """The process-wide pacer of one token identity (see :func:`token_identity`).

    The first call creates it with ``rate_per_minute``; later calls return that pacer as
    it is, so every schedule using the token shares one budget.
    """
    with _PACERS_LOCK:
        pacer = _PACERS.get(identity)
        if pacer is None:
            pacer = _PACERS[identity] = RequestPacer(rate_per_minute)
        return pacer


# == parsing =============================================================================


# The parts of a pull object the parser reads. A cached page keeps only these (a list
# item is ~15 KB otherwise), and cache keys carry a digest of this shape, so an entry
# written under an older shape is never read back as a malformed page.
_PULL_SHAPE: dict[str, Any] = {
    "number": None,
    "title": None,
    "body": None,
    "html_url": None,
    "state": None,
    "draft": None,
    "user": {"login": None, "id": None, "type": None},
    "created_at": None,
    "updated_at": None,
    "merged_at": None,
    "merge_commit_sha": None,
    "head": {"sha": None, "ref": None, "repo": {"full_name": None, "id": None, "fork": None}},
    "base": {"ref": None, "repo": {"full_name": None, "id": None}},
}
PULL_SHAPE_ID = hashlib.sha256(json.dumps(_PULL_SHAPE, sort_keys=True).encode()).hexdigest()[:8]
# The same for a comment of a repository-wide feed (engine.triggers parses it).
_COMMENT_SHAPE: dict[str, Any] = {
    "id": None,
    "node_id": None,
    "body": None,
    "html_url": None,
    "user": {"login": None, "id": None, "type": None},
    "created_at": None,
    "updated_at": None,
    "issue_url": None,
    "pull_request_url": None,
}
_COMMENT_SHAPE_JSON = json.dumps(_COMMENT_SHAPE, sort_keys=True).encode()
COMMENT_SHAPE_ID = hashlib.sha256(_COMMENT_SHAPE_JSON).hexdigest()[:8]
# kind -> the path of its repository-wide comment feed.
_FEED_PATHS = {"issue": "issues/comments", "diff": "pulls/comments"}


def _project(value: Any, shape: dict[str, Any] | None) -> Any:
    """``value`` with only the keys of ``shape`` (missing keys stay missing)."""
    if shape is None or not isinstance(value, dict):
        return value
    return {key: _project(value[key], sub) for key, sub in shape.items() if key in value}


class _Malformed(Exception):
    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def _get(obj: Mapping[str, Any], key: str, kind: type[T], where: str) -> T:
    if key not in obj:
        raise _Malformed(MALFORMED_PAYLOAD, f"{where}{key} is missing")
    value = obj[key]
    # bool is an int in Python, never in JSON: an id of ``true`` is malformed.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise _Malformed(
            MALFORMED_PAYLOAD,
            f"{where}{key} is a JSON {_json_name(type(value))}, not {_json_name(kind)}",
        )
    return value


def _optional(obj: Mapping[str, Any], key: str, kind: type[T], where: str) -> T | None:
    if obj.get(key) is None:
        if key not in obj:
            raise _Malformed(MALFORMED_PAYLOAD, f"{where}{key} is missing")
        return None
    return _get(obj, key, kind, where)


def _time(value: str | None, where: str) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise _Malformed(MALFORMED_PAYLOAD, f"{where} is not a timestamp: {value!r}") from None
    if parsed.tzinfo is None:
        raise _Malformed(MALFORMED_PAYLOAD, f"{where} has no time zone: {value!r}")
    return parsed.astimezone(UTC)


def _parse_pull(item: Any) -> PullRequest:
    if not isinstance(item, dict):
        raise _Malformed(MALFORMED_PAYLOAD, f"a pull is {type(item).__name__}, not an object")
    number = _get(item, "number", int, "")
    if "user" in item and item["user"] is None:
        raise _Malformed(GHOST_USER, f"pull #{number} has no author (a deleted account)")
    user = _get(item, "user", dict, "")
    head = _get(item, "head", dict, "")
    base = _get(item, "base", dict, "")
    head_repo = _optional(head, "repo", dict, "head.")
    base_repo = _get(base, "repo", dict, "base.")
    created_at = _time(_get(item, "created_at", str, ""), "created_at")
    updated_at = _time(_get(item, "updated_at", str, ""), "updated_at")
    assert created_at is not None and updated_at is not None
    return PullRequest(
        number=number,
        title=_get(item, "title", str, ""),
        html_url=_get(item, "html_url", str, ""),
        state=_get(item, "state", str, ""),
        draft=_get(item, "draft", bool, ""),
        user_login=_get(user, "login", str, "user."),
        user_id=_get(user, "id", int, "user."),
        user_type=_get(user, "type", str, "user."),
        created_at=created_at,
        updated_at=updated_at,
        merged_at=_time(_optional(item, "merged_at", str, ""), "merged_at"),
        head_sha=_get(head, "sha", str, "head."),
        head_ref=_get(head, "ref", str, "head."),
        head_repo_full_name=(
            None if head_repo is None else _get(head_repo, "full_name", str, "head.repo.")
        ),
        head_repo_id=None if head_repo is None else _get(head_repo, "id", int, "head.repo."),
        head_repo_fork=(None if head_repo is None else _get(head_repo, "fork", bool, "head.repo.")),
        base_ref=_get(base, "ref", str, "base."),
        base_repo_full_name=_get(base_repo, "full_name", str, "base.repo."),
        base_repo_id=_get(base_repo, "id", int, "base.repo."),
        merge_commit_sha=_optional(item, "merge_commit_sha", str, ""),
        body=_optional(item, "body", str, "") or "",
    )


def parse_pull(item: Any) -> PullRequest:
    """One pull object as GitHub serves it, parsed strictly.

    A missing or wrongly typed required field, or a null author, raises
    ``malformed_payload``; ``head.repo: null`` (a deleted fork) is valid.
    """
    try:
        return _parse_pull(item)
    except _Malformed as exc:
        raise GitHubError(f"cannot read a pull: {exc.detail}", MALFORMED_PAYLOAD) from None


def parse_pull_page(items: list[Any]) -> tuple[list[PullRequest], list[SkippedItem]]:
    """Parse a page of pulls; malformed items are returned as skipped, not raised."""
    pulls: list[PullRequest] = []
    skipped: list[SkippedItem] = []
    for item in items:
        try:
            pulls.append(_parse_pull(item))
        except _Malformed as exc:
            number = item.get("number") if isinstance(item, dict) else None
            number = number if isinstance(number, int) and not isinstance(number, bool) else None
            skipped.append(SkippedItem(number, exc.reason, exc.detail))
    return pulls, skipped


def parse_rate(headers: Mapping[str, str]) -> RateInfo | None:
    """The ``x-ratelimit-*`` headers, or None when they are absent or unreadable."""
    try:
        limit = int(headers["x-ratelimit-limit"])
        remaining = int(headers["x-ratelimit-remaining"])
        reset = datetime.fromtimestamp(int(headers["x-ratelimit-reset"]), UTC)
        used = int(headers.get("x-ratelimit-used", limit - remaining))
    except (KeyError, ValueError, OverflowError, OSError):
        return None
    return RateInfo(limit, remaining, used, reset, headers.get("x-ratelimit-resource", "core"))


# == client ==============================================================================


class GitHubClient:
    """A GitHub REST client for one token (``Settings.github_token``; None: anonymous).

    ``transport`` replaces the network (an ``httpx.MockTransport`` in tests); ``cache``
    defaults to a :class:`MemoryEtagCache`; ``pacer`` defaults to the process-wide
    :func:`pacer_for` of the token; ``clock`` dates cache entries and secondary-limit
    deferrals. The client is thread-safe, never sleeps itself (waiting is the pacer's:
    inject ``sleep`` there) and never retries: a failure raises :class:`GitHubError` and
    the caller's next poll is the retry.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        cache: EtagCache | None = None,
        transport: httpx.BaseTransport | None = None,
        pacer: RequestPacer | None = None,
        clock: Callable[[], datetime] = utcnow,
        connect_timeout: float = 10.0,
        read_timeout: float = 30.0,
    ) -> None:
        self.api_url = settings.github_api_url.rstrip("/")
        try:
            base = httpx.URL(self.api_url)
        except httpx.InvalidURL:
            base = httpx.URL()
        if base.scheme not in ("http", "https") or not base.host:
            raise ConfigError(
                f"GITHUB_API_URL must be an http(s) URL, got {self.api_url!r}", "invalid_setting"
            )
        self._origin = (base.scheme, base.host, base.port)
        self._token = settings.github_token
        self.token_identity = token_identity(self._token)
        self._cache: EtagCache = cache if cache is not None else MemoryEtagCache()
        self.pacer = pacer if pacer is not None else pacer_for(self.token_identity)
        self._clock = clock
        headers = {
            "Accept": "application/vnd.github+json",
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
            follow_redirects=True,  # GitHub answers 301 for renamed repositories
            event_hooks={"response": [_log_response, self._note_rate]},
        )

    def _note_rate(self, response: httpx.Response) -> None:
        record_rate(self.token_identity, response.headers)

    def __repr__(self) -> str:
        token = "set" if self._token else "none"
        return f"<GitHubClient {self.api_url} token={token} ({self.token_identity})>"

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> GitHubClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- public API ---------------------------------------------------------------------

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
        """
        _check_repo(repo)
        if not 1 <= per_page <= 100:
            raise InvalidInput(f"per_page must be 1..100, got {per_page}", "invalid_per_page")
        if max_pages < 1:
            raise InvalidInput(f"max_pages must be at least 1, got {max_pages}", "invalid_pages")
        params: dict[str, str | int] = {
            "state": state,
            "sort": sort,
            "direction": direction,
            "per_page": per_page,
        }
        if base is not None:
            params["base"] = base
        url = str(httpx.URL(f"{self.api_url}/repos/{repo}/pulls", params=params))
        key = self.cache_key(url, cache_scope)
        cached = self._cache.get(key) if conditional and key else None

        response = self._request(url, etag=cached.etag if cached else None)
        rate = parse_rate(response.headers)
        if response.status_code == 304:
            assert cached is not None  # _request refuses a 304 nobody asked for
            pulls, skipped = parse_pull_page(_as_list(cached.body, "cached pull list"))
            self._log_skipped(repo, skipped)
            logger.debug("pulls of %s unchanged (304)", repo)
            return PullListing(True, pulls, True, skipped, rate)

        first_body = self._json(response, list, url)
        first_etag = response.headers.get("etag")
        first_next = next_url = self._next_link(response)
        pulls, skipped = parse_pull_page(first_body)
        pages = 1

        def reached(page: list[PullRequest]) -> bool:
            return stop_before is not None and any(p.updated_at < stop_before for p in page)

        stopped = reached(pulls)
        while next_url is not None and pages < max_pages and not stopped:
            response = self._request(next_url)
            rate = parse_rate(response.headers) or rate
            page_pulls, page_skipped = parse_pull_page(self._json(response, list, next_url))
            pulls += page_pulls
            skipped += page_skipped
            next_url = self._next_link(response)
            pages += 1
            stopped = reached(page_pulls)
        pulls = _unique(pulls)
        self._log_skipped(repo, skipped)
        if next_url is not None and not stopped:
            logger.warning("pulls of %s: more than %d pages, listing incomplete", repo, pages)
        complete = next_url is None or stopped
        if conditional and complete and key and first_etag and len(first_etag) <= ETAG_LIMIT:
            trimmed = [_project(item, _PULL_SHAPE) for item in first_body]
            self._cache.put(key, CachedResponse(first_etag, trimmed, first_next, self._clock()))
        return PullListing(False, pulls, complete, skipped, rate)

    def list_comment_feed(
        self,
        repo: str,
        kind: str,
        since: datetime | None,
        *,
        cache_scope: str = "",
        max_pages: int = 3,
        conditional: bool = True,
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
        on the first page of a longer feed would prove nothing.
        """
        _check_repo(repo)
        if kind not in _FEED_PATHS:
            raise InvalidInput(f"a comment feed is issue or diff, got {kind!r}", "invalid_feed")
        if max_pages < 1:
            raise InvalidInput(f"max_pages must be at least 1, got {max_pages}", "invalid_pages")
        params: dict[str, str | int] = {"sort": "updated", "direction": "asc", "per_page": 100}
        stable = str(httpx.URL(f"{self.api_url}/repos/{repo}/{_FEED_PATHS[kind]}", params=params))
        if since is not None:
            if since.tzinfo is None:
                raise InvalidInput("since must be timezone-aware", "invalid_since")
            stamp = since.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            params = {"since": stamp, **params}
        url = str(httpx.URL(f"{self.api_url}/repos/{repo}/{_FEED_PATHS[kind]}", params=params))
        key = f"{stable}#{self.token_identity};shape={COMMENT_SHAPE_ID};scope={cache_scope}"
        key_ok = conditional and len(key) <= CACHE_KEY_LIMIT
        cached = self._cache.get(key) if key_ok else None

        response = self._request(url, etag=cached.etag if cached else None)
        rate = parse_rate(response.headers)
        if response.status_code == 304:
            assert cached is not None  # _request refuses a 304 nobody asked for
            logger.debug("%s comments of %s unchanged (304)", kind, repo)
            return CommentListing(True, _as_list(cached.body, "cached comment feed"), True, rate)

        first_body = self._json(response, list, url)
        first_etag = response.headers.get("etag")
        next_url = self._next_link(response)
        items: list[Any] = list(first_body)
        pages = 1
        while next_url is not None and pages < max_pages:
            response = self._request(next_url)
            rate = parse_rate(response.headers) or rate
            items += self._json(response, list, next_url)
            next_url = self._next_link(response)
            pages += 1
        if next_url is not None:
            logger.warning(
                "%s comments of %s: more than %d pages, the rest next time", kind, repo, pages
            )
        if key_ok and pages == 1 and next_url is None and first_etag:
            if len(first_etag) <= ETAG_LIMIT:
                trimmed = [_project(item, _COMMENT_SHAPE) for item in first_body]
                self._cache.put(key, CachedResponse(first_etag, trimmed, None, self._clock()))
        return CommentListing(False, items, next_url is None, rate)

    def forget_comment_feeds(self, repo: str) -> int:
        """Drop the cached comment-feed ETags of ``repo`` (every token, every scope)."""
        _check_repo(repo)
        return sum(
            self._cache.drop(f"{self.api_url}/repos/{repo}/{path}?")
            for path in _FEED_PATHS.values()
        )

    def get_pull(self, repo: str, number: int) -> PullRequest:
        """``GET /repos/{repo}/pulls/{number}`` parsed strictly (a ghost author is malformed)."""
        _check_repo(repo)
        if isinstance(number, bool) or not isinstance(number, int) or number < 1:
            raise InvalidInput(
                f"a pull number is a positive integer, got {number!r}", "invalid_number"
            )
        url = f"{self.api_url}/repos/{repo}/pulls/{number}"
        response = self._request(url)
        try:
            return _parse_pull(self._json(response, dict, url))
        except _Malformed as exc:
            raise GitHubError(
                f"cannot read pull #{number} of {repo}: {exc.detail}", MALFORMED_PAYLOAD, status=200
            ) from None

    def pull_graph(self, repo: str, number: int) -> PullGraph:
        """The GraphQL view of pull ``number`` of ``repo`` (one ``POST /graphql``).

        Errors translate as for REST; in addition a ``pullRequest: null`` or a NOT_FOUND
        GraphQL error is ``not_found``, a RATE_LIMITED one ``rate_limited``, and any other
        GraphQL error or an unexpected shape ``malformed_payload``.
        """
        _check_repo(repo)
        if isinstance(number, bool) or not isinstance(number, int) or number < 1:
            raise InvalidInput(
                f"a pull number is a positive integer, got {number!r}", "invalid_number"
            )
        owner, name = repo.split("/", 1)
        url = f"{self.api_url}/graphql"
        response = self._request(
            url,
            json_body={
                "query": _PULL_GRAPH_QUERY,
                "variables": {"owner": owner, "name": name, "number": number},
            },
        )
        payload = self._json(response, dict, url)
        what = f"pull #{number} of {repo} (GraphQL)"
        errors = payload.get("errors")
        data = payload.get("data")
        repository = data.get("repository") if isinstance(data, dict) else None
        pull = repository.get("pullRequest") if isinstance(repository, dict) else None
        if errors:
            first = errors[0] if isinstance(errors, list) and errors else {}
            kind = first.get("type") if isinstance(first, dict) else None
            text = first.get("message") if isinstance(first, dict) else None
            said = f"GitHub refused {what}: {text or errors!s}"[:_MESSAGE_LIMIT]
            reason = {"NOT_FOUND": NOT_FOUND, "RATE_LIMITED": RATE_LIMITED}.get(
                str(kind), MALFORMED_PAYLOAD
            )
            raise self._fail(said, reason, status=response.status_code)
        if pull is None:
            raise self._fail(f"{what}: no such pull request", NOT_FOUND, status=200)
        try:
            return _parse_pull_graph(pull)
        except _Malformed as exc:
            raise self._fail(
                f"cannot read {what}: {exc.detail}", MALFORMED_PAYLOAD, status=200
            ) from None

    def compare(self, repo: str, base: str, head: str) -> Comparison:
        """``GET /repos/{repo}/compare/{base}...{head}``: how far head is ahead/behind base."""
        _check_repo(repo)
        for side in (base, head):
            if not side or ".." in side or any(c.isspace() for c in side):
                raise InvalidInput(f"a compare side is a ref or sha, got {side!r}", "invalid_ref")
        spec = quote(f"{base}...{head}", safe="/:.")
        url = f"{self.api_url}/repos/{repo}/compare/{spec}"
        body = self._json(self._request(url), dict, url)
        try:
            return Comparison(
                ahead_by=_get(body, "ahead_by", int, ""),
                behind_by=_get(body, "behind_by", int, ""),
                status=_get(body, "status", str, ""),
            )
        except _Malformed as exc:
            raise self._fail(
                f"cannot read compare {base}...{head} of {repo}: {exc.detail}",
                MALFORMED_PAYLOAD,
                status=200,
            ) from None

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
        _check_repo(repo)
        return self._cache.drop(f"{self.api_url}/repos/{repo}/pulls?")

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
        if not path or path.startswith("/") or ".." in path:
            raise InvalidInput(f"a REST path is relative, got {path!r}", "invalid_path")
        if max_pages < 1:
            raise InvalidInput(f"max_pages must be at least 1, got {max_pages}", "invalid_pages")
        url = str(httpx.URL(f"{self.api_url}/{path}", params=dict(params or {})))
        key = f"{url}#{self.token_identity};shape=raw;scope={cache_scope}"
        key_ok = conditional and len(key) <= CACHE_KEY_LIMIT
        cached = self._cache.get(key) if key_ok else None
        response = self._request(url, etag=cached.etag if cached else None)
        rate = parse_rate(response.headers)
        if response.status_code == 304:
            assert cached is not None  # _request refuses a 304 nobody asked for
            return RestResult(True, cached.body, True, rate)

        def page_items(page: httpx.Response, page_url: str) -> list[Any]:
            if items_key is None:
                return self._json(page, list, page_url)
            wrapper = self._json(page, dict, page_url)
            return _as_list(wrapper.get(items_key), f"{items_key} of {self._where(page_url)}")

        if not paginate:
            body: Any = self._json(response, object, url)
            next_url = None
        else:
            body = page_items(response, url)
            next_url = self._next_link(response)
            pages = 1
            while next_url is not None and pages < max_pages:
                page = self._request(next_url)
                rate = parse_rate(page.headers) or rate
                body += page_items(page, next_url)
                next_url = self._next_link(page)
                pages += 1
        etag = response.headers.get("etag")
        one_page = not paginate or (pages == 1 and next_url is None)
        if key_ok and one_page and etag and len(etag) <= ETAG_LIMIT:
            self._cache.put(key, CachedResponse(etag, body, None, self._clock()))
        return RestResult(False, body, next_url is None, rate)

    def post_rest(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        """``POST {api_url}/{path}`` with the JSON ``payload``; returns the created object
        (200 or 201). Never conditional, never retried; errors as for every request."""
        if not path or path.startswith("/") or ".." in path:
            raise InvalidInput(f"a REST path is relative, got {path!r}", "invalid_path")
        url = f"{self.api_url}/{path}"
        response = self._send_post(url, payload)
        return self._json(response, dict, url)

    def graphql(self, query: str, variables: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """``POST /graphql``; returns ``data``. A response with ``errors`` raises
        :class:`GitHubError`: ``not_found`` for a NOT_FOUND error, ``rate_limited`` for
        RATE_LIMITED, else ``malformed_payload`` (GitHub refused the query itself)."""
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("a GraphQL query is a non-empty string", "invalid_query")
        url = f"{self.api_url}/graphql"
        response = self._request(
            url, json_body={"query": query, "variables": dict(variables or {})}
        )
        payload = self._json(response, dict, url)
        errors = payload.get("errors")
        if errors:
            first = errors[0] if isinstance(errors, list) and errors else {}
            kind = first.get("type") if isinstance(first, dict) else None
            text = first.get("message") if isinstance(first, dict) else None
            said = f"GitHub refused a GraphQL request: {text or errors!s}"[:_MESSAGE_LIMIT]
            reason = {"NOT_FOUND": NOT_FOUND, "RATE_LIMITED": RATE_LIMITED}.get(
                str(kind), MALFORMED_PAYLOAD
            )
            raise self._fail(said, reason, status=response.status_code)
        data = payload.get("data")
        if not isinstance(data, dict):
            raise self._fail("GraphQL answer without a data object", MALFORMED_PAYLOAD, status=200)
        return data

    def _send_post(self, url: str, payload: dict[str, Any]) -> httpx.Response:
        """One paced POST of ``payload``; returns a 200/201 response, else raises."""
        where = f"POST {self._where(url)}"
        self.pacer.acquire()
        try:
            response = self._http.post(url, json=payload)
        except httpx.TransportError as exc:
            raise self._fail(
                f"no complete answer from GitHub for {where}: {type(exc).__name__}: {exc}",
                NETWORK_ERROR,
            ) from None
        except httpx.HTTPError as exc:
            raise self._fail(f"{where}: {type(exc).__name__}: {exc}", HTTP_ERROR) from None
        if response.status_code not in (200, 201):
            raise self._status_error(response, where)
        return response

    # -- plumbing -------------------------------------------------------------------------

    def _request(
        self, url: str, *, etag: str | None = None, json_body: dict[str, Any] | None = None
    ) -> httpx.Response:
        """One paced GET (a POST of ``json_body`` when given); returns a 200 (or a 304 when
        ``etag`` was sent), else raises."""
        where = f"{'POST' if json_body is not None else 'GET'} {self._where(url)}"
        self.pacer.acquire()
        headers = {"If-None-Match": etag} if etag else None
        try:
            if json_body is not None:
                response = self._http.post(url, json=json_body)
            else:
                response = self._http.get(url, headers=headers)
        except httpx.TransportError as exc:
            raise self._fail(
                f"no complete answer from GitHub for {where}: {type(exc).__name__}: {exc}",
                NETWORK_ERROR,
            ) from None
        except httpx.DecodingError as exc:
            raise self._fail(f"{where}: undecodable body: {exc}", MALFORMED_PAYLOAD) from None
        except httpx.HTTPError as exc:
            raise self._fail(f"{where}: {type(exc).__name__}: {exc}", HTTP_ERROR) from None
        status = response.status_code
        if status == 200 or (status == 304 and etag):
            return response
        raise self._status_error(response, where)

    def _status_error(self, response: httpx.Response, where: str) -> GitHubError:
        status, headers = response.status_code, response.headers
        text = self._error_text(response)
        said = f"GitHub answered {status} for {where}: {text}"
        if status == 401:
            return self._fail(said, AUTH_ERROR, status=status)
        if status in (403, 429):
            secondary = "secondary rate limit" in text.lower() or "retry-after" in headers
            if headers.get("x-ratelimit-remaining") == "0" and not secondary:
                rate = parse_rate(headers)
                reset_at = rate.reset if rate else self._clock() + timedelta(minutes=1)
                self.pacer.defer_until(reset_at, RATE_LIMITED)
                return self._fail(said, RATE_LIMITED, status=status, reset_at=reset_at)
            if secondary or status == 429:
                retry_after = _seconds(headers.get("retry-after"))
                reset_at = self._clock() + timedelta(seconds=retry_after)
                self.pacer.defer_until(reset_at, SECONDARY_RATE_LIMITED)
                return self._fail(
                    said,
                    SECONDARY_RATE_LIMITED,
                    status=status,
                    retry_after=retry_after,
                    reset_at=reset_at,
                )
        if status == 404:
            return self._fail(said, NOT_FOUND, status=status)
        if status >= 500:
            return self._fail(said, SERVER_ERROR, status=status)
        return self._fail(said, HTTP_ERROR, status=status)

    def _fail(
        self,
        message: str,
        reason: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        reset_at: datetime | None = None,
    ) -> GitHubError:
        message = redact(message, self._token)
        level = (
            logging.WARNING if reason in (RATE_LIMITED, SECONDARY_RATE_LIMITED) else logging.DEBUG
        )
        logger.log(level, "%s [%s]", message, reason)
        return GitHubError(
            message, reason, status=status, retry_after=retry_after, reset_at=reset_at
        )

    def _error_text(self, response: httpx.Response) -> str:
        """GitHub's ``message`` (or the start of the body), one line, redacted."""
        try:
            payload = response.json()
            text = payload.get("message") if isinstance(payload, dict) else None
        except ValueError:
            text = None
        if not isinstance(text, str):
            text = response.text[:_MESSAGE_LIMIT] or response.reason_phrase
        text = " ".join(text.split())[:_MESSAGE_LIMIT]
        return redact(text, self._token)

    def _json(self, response: httpx.Response, kind: type[T], url: str) -> T:
        try:
            payload = response.json()
        except ValueError as exc:
            raise self._fail(
                f"GET {self._where(url)}: the body is not JSON ({type(exc).__name__})",
                MALFORMED_PAYLOAD,
                status=response.status_code,
            ) from None
        if not isinstance(payload, kind):
            raise self._fail(
                f"GET {self._where(url)}: expected a JSON {_json_name(kind)}, "
                f"got {_json_name(type(payload))}",
                MALFORMED_PAYLOAD,
                status=response.status_code,
            )
        return payload

    def _next_link(self, response: httpx.Response) -> str | None:
        url = response.links.get("next", {}).get("url")
        if url is None:
            return None
        target = httpx.URL(url)
        # The Authorization header goes with every request: never follow it elsewhere.
        if (target.scheme, target.host, target.port) != self._origin:
            raise self._fail(
                f"GitHub's next-page link leaves {self.api_url}: {self._where(url)}",
                MALFORMED_PAYLOAD,
                status=response.status_code,
            )
        return url

    def _where(self, url: str) -> str:
        target = httpx.URL(url)
        path = target.raw_path.decode("ascii", errors="replace")
        return redact(path, self._token)

    def _log_skipped(self, repo: str, skipped: list[SkippedItem]) -> None:
        for item in skipped:
            logger.warning(
                "skipped pull #%s of %s: %s [%s]",
                item.number if item.number is not None else "?",
                repo,
                redact(item.detail, self._token),
                item.reason,
            )

    # -- single comments: read one, write one ---------------------------------------------

    def get_comment(self, repo: str, comment_id: int, kind: str = "issue") -> dict[str, Any]:
        """One comment as GitHub returns it: ``GET /repos/{repo}/issues/comments/{id}``
        (``kind="issue"``) or ``/pulls/comments/{id}`` (``kind="diff"``).

        Unconditional (no ETag). Errors translate as for every request (a missing
        comment is ``not_found``); a body that is not a JSON object is ``malformed_payload``.
        """
        _check_repo(repo)
        _check_id(comment_id, "a comment id")
        if kind not in _COMMENT_PATHS:
            raise InvalidInput(f"a comment kind is 'issue' or 'diff', got {kind!r}", "invalid_kind")
        url = f"{self.api_url}/repos/{repo}/{_COMMENT_PATHS[kind]}/{comment_id}"
        return self._json(self._request(url), dict, url)

    def post_issue_comment(self, repo: str, number: int, body: str) -> dict[str, Any]:
        """``POST /repos/{repo}/issues/{number}/comments`` with ``body``; returns the
        created comment (GitHub answers 201). Never conditional, never retried: a
        failure raises :class:`GitHubError` with the same reasons as a read."""
        _check_repo(repo)
        _check_id(number, "an issue number")
        if not isinstance(body, str) or not body:
            raise InvalidInput("a comment body is a non-empty string", "invalid_body")
        url = f"{self.api_url}/repos/{repo}/issues/{number}/comments"
        response = self._send_post(url, {"body": body})
        return self._json(response, dict, url)


_COMMENT_PATHS = {"issue": "issues/comments", "diff": "pulls/comments"}


def _check_id(value: int, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInput(f"{what} is a positive integer, got {value!r}", "invalid_number")


_PULL_GRAPH_QUERY = """
query($owner: String!, $name: String!, $number: Int!) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      number state isDraft isCrossRepository
      headRepository { nameWithOwner }
      reviewDecision
      autoMergeRequest { enabledAt mergeMethod }
      mergeStateStatus headRefOid headRefName baseRefName url
    }
  }
}
""".strip()


def _parse_pull_graph(item: Any) -> PullGraph:
    if not isinstance(item, dict):
        raise _Malformed(MALFORMED_PAYLOAD, "pullRequest is not an object")
    where = "pullRequest."
    head_repo = _optional(item, "headRepository", dict, where)
    auto = _optional(item, "autoMergeRequest", dict, where)
    return PullGraph(
        number=_get(item, "number", int, where),
        state=_get(item, "state", str, where),
        is_draft=_get(item, "isDraft", bool, where),
        is_cross_repository=_get(item, "isCrossRepository", bool, where),
        head_repository=None
        if head_repo is None
        else _get(head_repo, "nameWithOwner", str, "headRepository."),
        review_decision=_optional(item, "reviewDecision", str, where),
        auto_merge_enabled_at=None
        if auto is None
        else _time(_optional(auto, "enabledAt", str, "autoMergeRequest."), "enabledAt"),
        auto_merge_method=None
        if auto is None
        else _optional(auto, "mergeMethod", str, "autoMergeRequest.") or "MERGE",
        merge_state_status=_optional(item, "mergeStateStatus", str, where),
        head_ref_oid=_get(item, "headRefOid", str, where),
        head_ref_name=_get(item, "headRefName", str, where),
        base_ref_name=_get(item, "baseRefName", str, where),
        url=_get(item, "url", str, where),
    )


def _check_repo(repo: str) -> None:
    if not _REPO.match(repo) or ".." in repo:
        raise InvalidInput(f"a repository is owner/name, got {repo!r}", "invalid_repo")


def _seconds(value: str | None) -> float:
    try:
        seconds = float(value) if value is not None else DEFAULT_RETRY_AFTER
    except ValueError:
        return DEFAULT_RETRY_AFTER
    return seconds if seconds >= 0 else DEFAULT_RETRY_AFTER


def _as_list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise GitHubError(f"the {what} is not a list", MALFORMED_PAYLOAD)
    return value


def _unique(pulls: list[PullRequest]) -> list[PullRequest]:
    seen: set[int] = set()
    kept: list[PullRequest] = []
    for pull in pulls:
        if pull.number not in seen:
            seen.add(pull.number)
            kept.append(pull)
    return kept


def _json_name(kind: type[Any]) -> str:
    names = {list: "array", dict: "object", str: "string", bool: "boolean", int: "integer"}
    return names.get(kind, "null" if kind is type(None) else kind.__name__)


def github_client(settings: Settings, cache: EtagCache | None = None) -> GitHubClient:
    """The client a process uses: the settings' timeout and its token's shared pacer at
    ``LI_GITHUB_RATE`` requests a minute."""
    identity = token_identity(settings.github_token)
    return GitHubClient(
        settings,
        cache=cache,
        pacer=pacer_for(identity, settings.github_requests_per_minute),
        connect_timeout=min(10.0, settings.github_timeout_seconds),
        read_timeout=settings.github_timeout_seconds,
    )
