"""Reading a PR's metadata for ``review-pr`` / ``describe-pr``: a GitHub failure is never
mistaken for a fork (issue 10 item 4).

Metadata that cannot be read fails the run (:class:`~wrapper.errors.GitHubFailed`, exit
10) with one of three reasons, derived from the engine client's reason codes:

- ``github_auth``: 401, 403 that is not a rate limit, 404 (GitHub answers 404 to a token
  that cannot see a private repository): the token is wrong, revoked or lacks access;
- ``github_unavailable``: 5xx, a timeout or another network failure, a rate limit, or
  any other unexpected status;
- a GitHub App's own reason (``app_key_rejected``, ``app_clock_skew``,
  ``app_installation_suspended``, ``app_not_installed``, ``app_key_unreadable``);
- ``github_malformed``: an answer kdev cannot parse, or one past the client's bounds
  (``body_too_large``, ``redirect_refused``; a ``request_deadline`` is unavailable).

``skipped_fork`` is left to metadata that was read and positively names another head
repository, or a null head repository (a deleted fork).
"""

from __future__ import annotations

from engine.github import GitHubClient, GitHubError, GitHubMalformedPayload, PullRequest
from engine.github.appconfig import APP_AUTH_REASONS
from wrapper.errors import GitHubFailed
from wrapper.gh import get_pull

GITHUB_AUTH = "github_auth"
GITHUB_UNAVAILABLE = "github_unavailable"
GITHUB_MALFORMED = "github_malformed"


def github_failure_reason(exc: GitHubError) -> str:
    """The wrapper reason code for a failed metadata read; a GitHub App's refusal keeps
    its own (``app_key_rejected``, ``app_clock_skew``, ... engine.github.appauth)."""
    if exc.reason in APP_AUTH_REASONS:
        return exc.reason
    if isinstance(exc, GitHubMalformedPayload):  # body_too_large, redirect_refused too
        return GITHUB_MALFORMED
    if exc.reason in ("auth_error", "not_found") or exc.status in (401, 403, 404):
        if exc.reason not in ("rate_limited", "secondary_rate_limited"):
            return GITHUB_AUTH
    return GITHUB_UNAVAILABLE


def read_pull(github: GitHubClient, repo: str, number: int) -> PullRequest:
    """The PR's metadata (never its diff); :class:`GitHubFailed` when it cannot be read."""
    try:
        return get_pull(github, repo, number)
    except GitHubError as exc:
        raise metadata_failure(repo, number, exc) from None


def metadata_failure(repo: str, number: int, exc: GitHubError) -> GitHubFailed:
    """The one-line error of a failed metadata read. The engine's reason is in the text
    only where the wrapper's differs: an App's refusal keeps its own reason, which the
    line already ends with, so it is said once."""
    reason = github_failure_reason(exc)
    said = "" if exc.reason == reason else f" [{exc.reason}]"
    return GitHubFailed(
        f"cannot read the metadata of {repo} #{number}: {exc.message}{said}", reason
    )
