"""What the GitHub client hands out and raises: frozen data classes and the error classes.

Pure: no httpx, no database, no clock. The planning code (engine.poll.plan) and the wrapper's
fast paths import this module alone.

One exception class per failure kind, all under :class:`GitHubError` (``reason`` is the
stable code, ``status`` the HTTP status or None)::

    GitHubError (LiError)             exit 1
      GitHubAuthError                 auth_error: 401, the token is missing, wrong or revoked
      GitHubRateLimited               rate_limited: 403/429 with x-ratelimit-remaining 0
                                      (``reset_at``), or a RATE_LIMITED GraphQL error
      GitHubSecondaryRateLimited      secondary_rate_limited: 403/429 naming the secondary
                                      limit or with retry-after (``retry_after``, 60 s when
                                      GitHub gives none)
      GitHubNotFound                  not_found: 404, or a NOT_FOUND GraphQL error
      GitHubHttpError                 http_error: any other 4xx (and an unexpected 3xx/304)
      GitHubServerError               server_error: 5xx
      GitHubNetworkError              network_error: no complete answer (refused, timed out,
                                      cut off mid-body)
        GitHubDeadlineExceeded        request_deadline: the whole request outlasted
                                      LI_GITHUB_DEADLINE (a drip-fed body, say)
      GitHubMalformedPayload          malformed_payload: not JSON, or not the shape expected
        GitHubBodyTooLarge            body_too_large: the decoded body passed
                                      LI_GITHUB_MAX_BODY_BYTES (a gzip bomb, say)
        GitHubRedirectRefused         redirect_refused: a redirect leaving the API's origin,
                                      past LI_GITHUB_MAX_REDIRECTS, or turning a write into
                                      a GET

The one table from transport errors and status codes to these classes is in
engine.github.client.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, Protocol

from engine.errors import InvalidInput, LiError

AUTH_ERROR = "auth_error"
RATE_LIMITED = "rate_limited"
SECONDARY_RATE_LIMITED = "secondary_rate_limited"
NOT_FOUND = "not_found"
HTTP_ERROR = "http_error"
SERVER_ERROR = "server_error"
NETWORK_ERROR = "network_error"
MALFORMED_PAYLOAD = "malformed_payload"
# The bounds of one answer (engine.github.bounded, issue 24).
REQUEST_DEADLINE = "request_deadline"
BODY_TOO_LARGE = "body_too_large"
REDIRECT_REFUSED = "redirect_refused"
# A skipped listing item whose author is a deleted ("ghost") account: ``user`` is null.
GHOST_USER = "ghost_user"


# == errors ==============================================================================


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
        return f"{type(self).__name__}({self.message!r}, {self.reason!r}, status={self.status!r})"


# Every kind below, by its reason code (each registers itself as it is declared).
ERROR_CLASSES: dict[str, type[GitHubErrorKind]] = {}


class GitHubErrorKind(GitHubError):
    """Base of the per-kind classes below: a :class:`GitHubError` whose reason is fixed
    by its class (``REASON``), built as ``Kind(message, status=..., ...)``."""

    REASON: ClassVar[str]

    def __init_subclass__(cls, *, reason: str, **kwargs: Any) -> None:
        """A kind names its reason code as it is declared and is then the class
        :data:`ERROR_CLASSES` maps that code to."""
        super().__init_subclass__(**kwargs)
        cls.REASON = reason
        ERROR_CLASSES[reason] = cls

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        reset_at: datetime | None = None,
    ) -> None:
        super().__init__(
            message, self.REASON, status=status, retry_after=retry_after, reset_at=reset_at
        )


class GitHubAuthError(GitHubErrorKind, reason=AUTH_ERROR):
    """401: the token is missing, wrong or revoked."""


class GitHubRateLimited(GitHubErrorKind, reason=RATE_LIMITED):
    """The token's primary rate limit is spent until ``reset_at``."""


class GitHubSecondaryRateLimited(GitHubErrorKind, reason=SECONDARY_RATE_LIMITED):
    """GitHub's secondary (abuse) limit: wait ``retry_after`` seconds."""


class GitHubNotFound(GitHubErrorKind, reason=NOT_FOUND):
    """404, a NOT_FOUND GraphQL error, or an object the answer says does not exist."""


class GitHubHttpError(GitHubErrorKind, reason=HTTP_ERROR):
    """Any other refusal: a 4xx, or an unexpected 3xx/304."""


class GitHubServerError(GitHubErrorKind, reason=SERVER_ERROR):
    """5xx: GitHub failed."""


class GitHubNetworkError(GitHubErrorKind, reason=NETWORK_ERROR):
    """No complete answer: refused, timed out or cut off mid-body."""


class GitHubMalformedPayload(GitHubErrorKind, reason=MALFORMED_PAYLOAD):
    """The answer is not JSON, or not the shape the client reads."""


class GitHubDeadlineExceeded(GitHubNetworkError, reason=REQUEST_DEADLINE):
    """The whole request (connect, reads, decompression, redirects) outlasted its deadline."""


class GitHubBodyTooLarge(GitHubMalformedPayload, reason=BODY_TOO_LARGE):
    """The decoded body grew past the cap: no answer GitHub gives is that large."""


class GitHubRedirectRefused(GitHubMalformedPayload, reason=REDIRECT_REFUSED):
    """A redirect that leaves the API's origin, one too many, or one that would turn a
    write into a GET."""


# == repository names ====================================================================

# GitHub logins: 1-39 letters or digits, single hyphens only between them.
_OWNER = re.compile(r"^(?=.{1,39}$)[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*$")
_REPO_NAME = re.compile(r"^[A-Za-z0-9._-]{1,100}$")


def repo_problem(text: object) -> str | None:
    """Why ``text`` is not an ``OWNER/NAME`` repository, or None when it is one."""
    if not isinstance(text, str):
        return f"repo must be a string like octo/widgets, got {text!r}"
    owner, slash, name = text.partition("/")
    if not slash:
        return f"repo {text!r} must be OWNER/NAME, like octo/widgets"
    if not _OWNER.match(owner):
        return (
            f"repo owner {owner!r} must be 1-39 letters, digits or single inner hyphens "
            "(no leading or trailing hyphen)"
        )
    if not _REPO_NAME.match(name) or name in (".", ".."):
        return f"repo name {name!r} must be 1-100 of letters, digits, '.', '_' or '-'"
    return None


def validate_repo_name(text: str) -> str:
    """``text`` unchanged when it is ``OWNER/NAME``; ``InvalidInput invalid_repo`` otherwise.

    The one repository-name check of both programs: the poll config, the CLI, the client
    and the wrapper's config all call it (or :func:`repo_problem`), so a name one accepts is
    never refused by another, and none can escape a path.
    """
    problem = repo_problem(text)
    if problem is not None:
        raise InvalidInput(problem, "invalid_repo")
    return text


# == results =============================================================================


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
class RestResult:
    """One conditional REST read (``GitHubClient.get_rest``).

    ``unchanged``: the first page answered 304 and ``body`` is the cached body of the last
    200. For a listing (``paginate``) ``body`` is every item of every page read, and
    ``complete`` is False when more pages existed than ``max_pages`` allowed.
    """

    unchanged: bool
    body: Any
    complete: bool
    rate: RateInfo | None


# == ETag cache ==========================================================================


@dataclass(frozen=True)
class CachedResponse:
    """What a 304 stands for: the ETag and body of the last 200."""

    etag: str
    body: Any
    link_next: str | None
    fetched_at: datetime
    status: int = 200


# Takes a cache entry instead of the cache: a caller that stores it once it has acted on
# the listing (engine.poll: in the transaction that settles the pass; issue 19).
EtagSink = Callable[[str, CachedResponse], None]


class GitHubSettings(Protocol):
    """What the client reads of its settings: ``engine.config.Settings`` has these, and
    so may a caller's lighter reader of the same variables, one that keeps
    pydantic-settings off a short-lived process's start (issue 19)."""

    @property
    def github_api_url(self) -> str: ...

    @property
    def github_token(self) -> str | None: ...

    @property
    def github_timeout_seconds(self) -> float: ...

    @property
    def github_requests_per_minute(self) -> int: ...

    @property
    def github_max_body_bytes(self) -> int: ...

    @property
    def github_deadline_seconds(self) -> float: ...

    @property
    def github_max_redirects(self) -> int: ...


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
