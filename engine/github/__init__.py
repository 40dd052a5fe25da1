"""GitHub as both programs see it: one client, typed results, one error tree.

The public surface (import these from ``engine.github``; the submodules are the
implementation)::

    types    pure data: PullRequest, PullListing, CommentListing, RestResult, RateInfo,
             SkippedItem, CachedResponse, EtagCache, MemoryEtagCache, is_same_repo,
             validate_repo_name / repo_problem (the one OWNER/NAME check), the reason
             codes and the error classes (GitHubError and one subclass per kind)
    parse    pure JSON -> types: parse_pull_item, parse_pull_page, parse_rate and the
             field readers get_field / optional_field / parse_time (raising Malformed)
    pacing   RequestPacer, pacer_for, token_identity: spacing and rate-limit deferral
    bounded  the bounds of one answer on the one send path: the decoded body capped as it
             is inflated, one deadline per request, redirects only within the API's origin
    session  GitHubSession, redact, status_error_class: the HTTP core of one token -
             paced requests, the one pagination loop, the one translation table from
             transport errors, statuses and GraphQL errors to the error classes, and the
             generic calls request() and graphql()
    client   GitHubClient (a GitHubSession with an ETag cache), github_client: the
             engine's typed conditional reads (list_pulls, list_comment_feed, get_rest)
    etag     SqlEtagCache: the ETag cache in the ``http_cache`` table

``session``/``client`` (httpx, pydantic settings) and ``etag`` (SQLAlchemy) load on first
use of one of their names, so ``import engine.github`` - and the pure planning code,
the wrapper's fast paths (docs/decisions.md D35) - pay only for the pure modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.github.pacing import RequestPacer, pacer_for, token_identity
from engine.github.parse import (
    COMMENT_SHAPE_ID,
    PULL_SHAPE_ID,
    Malformed,
    get_field,
    optional_field,
    parse_pull_item,
    parse_pull_page,
    parse_rate,
    parse_time,
)
from engine.github.types import (
    AUTH_ERROR,
    BODY_TOO_LARGE,
    GHOST_USER,
    HTTP_ERROR,
    MALFORMED_PAYLOAD,
    NETWORK_ERROR,
    NOT_FOUND,
    RATE_LIMITED,
    REDIRECT_REFUSED,
    REQUEST_DEADLINE,
    SECONDARY_RATE_LIMITED,
    SERVER_ERROR,
    CachedResponse,
    CommentListing,
    EtagCache,
    EtagSink,
    GitHubAuthError,
    GitHubBodyTooLarge,
    GitHubDeadlineExceeded,
    GitHubError,
    GitHubErrorKind,
    GitHubHttpError,
    GitHubMalformedPayload,
    GitHubNetworkError,
    GitHubNotFound,
    GitHubRateLimited,
    GitHubRedirectRefused,
    GitHubSecondaryRateLimited,
    GitHubServerError,
    GitHubSettings,
    MemoryEtagCache,
    PullListing,
    PullRequest,
    RateInfo,
    RestResult,
    SkippedItem,
    is_same_repo,
    repo_problem,
    validate_repo_name,
)

if TYPE_CHECKING:
    from engine.github.client import GitHubClient, github_client
    from engine.github.etag import SqlEtagCache
    from engine.github.session import GitHubSession, redact, status_error_class

# name -> the submodule that defines it, imported on first use.
_LAZY = {
    "GitHubClient": "client",
    "github_client": "client",
    "GitHubSession": "session",
    "redact": "session",
    "status_error_class": "session",
    "SqlEtagCache": "etag",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "AUTH_ERROR",
    "BODY_TOO_LARGE",
    "COMMENT_SHAPE_ID",
    "GHOST_USER",
    "HTTP_ERROR",
    "MALFORMED_PAYLOAD",
    "NETWORK_ERROR",
    "NOT_FOUND",
    "PULL_SHAPE_ID",
    "RATE_LIMITED",
    "REDIRECT_REFUSED",
    "REQUEST_DEADLINE",
    "SECONDARY_RATE_LIMITED",
    "SERVER_ERROR",
    "CachedResponse",
    "CommentListing",
    "EtagCache",
    "EtagSink",
    "GitHubAuthError",
    "GitHubBodyTooLarge",
    "GitHubClient",
    "GitHubDeadlineExceeded",
    "GitHubError",
    "GitHubErrorKind",
    "GitHubHttpError",
    "GitHubMalformedPayload",
    "GitHubNetworkError",
    "GitHubNotFound",
    "GitHubRateLimited",
    "GitHubRedirectRefused",
    "GitHubSecondaryRateLimited",
    "GitHubServerError",
    "GitHubSession",
    "GitHubSettings",
    "Malformed",
    "MemoryEtagCache",
    "PullListing",
    "PullRequest",
    "RateInfo",
    "RequestPacer",
    "RestResult",
    "SkippedItem",
    "SqlEtagCache",
    "get_field",
    "github_client",
    "is_same_repo",
    "optional_field",
    "pacer_for",
    "parse_pull_item",
    "parse_pull_page",
    "parse_rate",
    "parse_time",
    "redact",
    "repo_problem",
    "status_error_class",
    "token_identity",
    "validate_repo_name",
]
