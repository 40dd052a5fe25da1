"""Review threads of a pull request, and closing feedback out: reply, resolve, hide.

* :func:`list_review_threads` pages ``reviewThreads(first: 100, after:)`` over GraphQL
  until ``hasNextPage`` is false, so a PR with more than 100 threads is read whole.
* :func:`reply` answers an inline comment through the replies endpoint
  (``POST /repos/{o}/{r}/pulls/{n}/comments/{id}/replies``), an issue-level comment with
  a new PR comment that quotes its id; a review summary has no reply on GitHub and is
  refused (``review_summary_no_reply``).
* :func:`resolve` finds the thread whose first comment has the given node id and runs
  ``resolveReviewThread``; :func:`reopen` runs ``unresolveReviewThread`` on it (a
  resolved finding reopened); :func:`hide` runs ``minimizeComment(classifier: OUTDATED)``.

Everything posted goes through the one comment gate, :func:`wrapper.post.post_gated`,
by the PR's :class:`wrapper.post.PostingContext` (prepared with the configured
``mention_handle``, or prose escaped without one; secret canary; the posted id recorded
in the ledger, which is required, so kdev never answers its own comments).
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from dataclasses import dataclass, replace
from typing import Any

from engine.errors import InvalidInput
from engine.github import NOT_FOUND, GitHubClient, GitHubError
from wrapper.config import KdevConfig
from wrapper.errors import ConfigError, KdevError
from wrapper.gh import get_comment
from wrapper.post import PostingContext

log = logging.getLogger("kdev.threads")

THREAD_NOT_FOUND = "thread_not_found"
COMMENT_NOT_FOUND = "comment_not_found"
COMMENT_NOT_ON_PR = "comment_not_on_pr"
REVIEW_SUMMARY_NO_REPLY = "review_summary_no_reply"
REPLY_FAILED = "reply_failed"
INVALID_MENTION_NAME = "invalid_mention_name"
RESOLVE_FAILED = "resolve_failed"
REOPEN_FAILED = "reopen_failed"
HIDE_FAILED = "hide_failed"
NODE_NOT_FOUND = "node_not_found"
GITHUB_READ_FAILED = "github_read_failed"

THREADS_QUERY = """
query($owner: String!, $name: String!, $number: Int!, $first: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: $first, after: $after) {
        totalCount
        pageInfo { hasNextPage endCursor }
        nodes {
          id isResolved isOutdated path line originalLine
          comments(first: 1) { totalCount nodes { id databaseId author { login } } }
        }
      }
    }
  }
}
""".strip()

RESOLVE_MUTATION = """
mutation($threadId: ID!) {
  resolveReviewThread(input: {threadId: $threadId}) { thread { id isResolved } }
}
""".strip()

UNRESOLVE_MUTATION = """
mutation($threadId: ID!) {
  unresolveReviewThread(input: {threadId: $threadId}) { thread { id isResolved } }
}
""".strip()

MINIMIZE_MUTATION = """
mutation($subjectId: ID!, $classifier: ReportedContentClassifiers!) {
  minimizeComment(input: {subjectId: $subjectId, classifier: $classifier}) {
    minimizedComment { isMinimized minimizedReason }
  }
}
""".strip()

MAX_THREAD_PAGES = 50


@dataclass(frozen=True)
class ReviewThread:
    """One review thread: its node id, state, place, and its first comment's ids."""

    id: str
    is_resolved: bool
    path: str | None
    line: int | None
    first_comment_node: str | None
    first_comment_id: int | None
    comment_count: int
    # A push changed its line (GitHub's ``isOutdated``; ``line`` is then None).
    is_outdated: bool = False
    original_line: int | None = None


@dataclass(frozen=True)
class ReplyResult:
    """A posted reply: ``kind`` ``inline`` (threaded) or ``issue`` (a new PR comment)."""

    kind: str
    id: int
    node_id: str
    html_url: str

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "id": self.id, "node_id": self.node_id, "url": self.html_url}


def _github_error(what: str, exc: GitHubError, reason: str) -> KdevError:
    return KdevError(f"{what}: {exc.message} [{exc.reason}]", reason)


def list_review_threads(github: GitHubClient, repo: str, pr: int) -> list[ReviewThread]:
    """Every review thread of ``repo`` #``pr``, in GitHub's order, across all pages."""
    owner, name = repo.split("/", 1)
    threads: list[ReviewThread] = []
    after: str | None = None
    for _ in range(MAX_THREAD_PAGES):
        try:
            data = github.graphql(
                THREADS_QUERY,
                {"owner": owner, "name": name, "number": pr, "first": 100, "after": after},
            )
        except GitHubError as exc:
            raise _github_error(
                f"cannot read the review threads of {repo} #{pr}", exc, GITHUB_READ_FAILED
            ) from None
        try:
            connection = data["repository"]["pullRequest"]["reviewThreads"]
            for node in connection["nodes"]:
                first = (node.get("comments") or {}).get("nodes") or [{}]
                threads.append(
                    ReviewThread(
                        id=str(node["id"]),
                        is_resolved=bool(node["isResolved"]),
                        path=node.get("path"),
                        line=node.get("line"),
                        first_comment_node=first[0].get("id"),
                        first_comment_id=first[0].get("databaseId"),
                        comment_count=int((node.get("comments") or {}).get("totalCount") or 0),
                        is_outdated=bool(node.get("isOutdated")),
                        original_line=node.get("originalLine"),
                    )
                )
            info = connection["pageInfo"]
        except (KeyError, TypeError, ValueError) as exc:
            raise KdevError(
                f"unreadable review threads of {repo} #{pr}: {type(exc).__name__}: {exc}",
                GITHUB_READ_FAILED,
            ) from None
        if not info.get("hasNextPage"):
            return threads
        after = info.get("endCursor")
    log.warning("%s #%s: more than %d pages of review threads", repo, pr, MAX_THREAD_PAGES)
    return threads


def _belongs_to(comment: dict[str, Any], pr: int, key: str) -> bool:
    url = comment.get(key)
    return isinstance(url, str) and url.rstrip("/").endswith(f"/{pr}")


def reply(
    ctx: PostingContext, comment_id: int, text: str, mention: Collection[str] = ()
) -> ReplyResult:
    """Reply to comment ``comment_id`` of ``ctx.repo`` #``ctx.pr`` with ``text``.

    Like every posted body, ``text`` pings nobody but the names of ``mention_allow`` and
    of ``mention`` (the operator's ``kdev reply --mention``; a bad name or kdev's own
    handle is ``invalid_mention_name``).

    An inline (review) comment gets a threaded reply; an issue-level comment a new PR
    comment quoting the id; a review summary is refused (``review_summary_no_reply``).
    Unknown ids are ``comment_not_found``; a comment of another PR ``comment_not_on_pr``.
    """
    if not text.strip():
        raise ConfigError("the reply text is empty", "invalid_reply")
    _check_mentions(ctx.config, mention)
    github, repo, pr = ctx.github, ctx.repo, ctx.pr
    inline = _find(github, repo, comment_id, "diff")
    if inline is not None:
        if not _belongs_to(inline, pr, "pull_request_url"):
            raise KdevError(f"comment {comment_id} is not on {repo} #{pr}", COMMENT_NOT_ON_PR)
        path = f"repos/{repo}/pulls/{pr}/comments/{comment_id}/replies"
        what = f"cannot reply to comment {comment_id}"
        return _gated(ctx, text, "inline", path, what, mention)
    issue = _find(github, repo, comment_id, "issue")
    if issue is not None:
        if not _belongs_to(issue, pr, "issue_url"):
            raise KdevError(f"comment {comment_id} is not on {repo} #{pr}", COMMENT_NOT_ON_PR)
        user = (issue.get("user") or {}).get("login") or "ghost"
        quoted = f"> Re: comment {comment_id} by {user}\n\n{text}"
        path = f"repos/{repo}/issues/{pr}/comments"
        what = "cannot post reply"
        return _gated(ctx, quoted, "issue", path, what, mention)
    if _is_review(github, repo, pr, comment_id):
        raise KdevError(
            f"{comment_id} is a review summary of {repo} #{pr}; GitHub has no reply to a "
            "review summary (reply on the PR instead)",
            REVIEW_SUMMARY_NO_REPLY,
        )
    raise KdevError(f"no comment {comment_id} on {repo} #{pr}", COMMENT_NOT_FOUND)


def _check_mentions(config: KdevConfig, mention: Collection[str]) -> None:
    from engine.triggers import validate_mention_name

    own = (config.mention_handle or "").lower()
    for name in mention:
        try:
            validate_mention_name(name)
        except InvalidInput as exc:
            raise ConfigError(exc.message, INVALID_MENTION_NAME) from None
        if name.lower() == own:
            raise ConfigError(
                f"--mention {name}: kdev never mentions itself (mention_handle)",
                INVALID_MENTION_NAME,
            )


def _find(github: GitHubClient, repo: str, comment_id: int, kind: str) -> dict[str, Any] | None:
    try:
        return get_comment(github, repo, comment_id, kind)
    except GitHubError as exc:
        if exc.reason == NOT_FOUND:
            return None
        raise _github_error(f"cannot read comment {comment_id}", exc, GITHUB_READ_FAILED) from None


def _is_review(github: GitHubClient, repo: str, pr: int, review_id: int) -> bool:
    try:
        reviews = github.get_rest(
            f"repos/{repo}/pulls/{pr}/reviews", {"per_page": 100}, paginate=True
        ).body
    except GitHubError as exc:
        raise _github_error(f"cannot list the reviews of #{pr}", exc, GITHUB_READ_FAILED) from None
    return any(isinstance(r, dict) and r.get("id") == review_id for r in reviews)


def _gated(
    ctx: PostingContext, raw: str, kind: str, path: str, what: str, mention: Collection[str] = ()
) -> ReplyResult:
    """Posts ``raw`` to ``path`` through the one comment gate (prepared, secret canary,
    id recorded in the ledger)."""

    def send(body: str) -> dict[str, Any]:
        try:
            return ctx.github.post_rest(path, {"body": body})
        except GitHubError as exc:
            raise _github_error(what, exc, REPLY_FAILED) from None

    created = ctx.gated(raw, f"reply-{kind}", send, failure_reason=REPLY_FAILED, mention=mention)
    return ReplyResult(
        kind, created["id"], str(created.get("node_id") or ""), str(created.get("html_url") or "")
    )


def resolve(github: GitHubClient, repo: str, pr: int, node: str) -> ReviewThread:
    """Resolve the thread of ``repo`` #``pr`` whose first comment has node id ``node``.

    Returns the thread (``is_resolved`` True). An already resolved thread is returned
    unchanged; no such thread is ``thread_not_found``.
    """
    return _set_resolved(github, repo, pr, node, True)


def reopen(github: GitHubClient, repo: str, pr: int, node: str) -> ReviewThread:
    """Reopen (``unresolveReviewThread``) the thread of ``repo`` #``pr`` whose first
    comment has node id ``node``. Returns the thread (``is_resolved`` False). An open
    thread is returned unchanged; no such thread is ``thread_not_found``; a failure is
    ``reopen_failed``.
    """
    return _set_resolved(github, repo, pr, node, False)


def _set_resolved(
    github: GitHubClient, repo: str, pr: int, node: str, resolved: bool
) -> ReviewThread:
    mutation, field = (
        (RESOLVE_MUTATION, "resolveReviewThread")
        if resolved
        else (UNRESOLVE_MUTATION, "unresolveReviewThread")
    )
    verb, failed = ("resolve", RESOLVE_FAILED) if resolved else ("reopen", REOPEN_FAILED)
    for thread in list_review_threads(github, repo, pr):
        if thread.first_comment_node != node:
            continue
        if thread.is_resolved == resolved:
            return thread
        try:
            data = github.graphql(mutation, {"threadId": thread.id})
            done = bool(data[field]["thread"]["isResolved"])
        except GitHubError as exc:
            raise _github_error(f"cannot {verb} thread {thread.id}", exc, failed) from None
        except (KeyError, TypeError) as exc:
            raise KdevError(f"unreadable {verb} answer: {exc}", failed) from None
        if done != resolved:
            raise KdevError(f"GitHub did not {verb} thread {thread.id}", failed)
        return replace(thread, is_resolved=done)
    raise KdevError(
        f"no review thread of {repo} #{pr} starts with comment {node}", THREAD_NOT_FOUND
    )


def hide(github: GitHubClient, node: str) -> str:
    """Minimize the comment ``node`` as OUTDATED; returns GitHub's minimized reason.
    An unknown node is ``node_not_found``."""
    try:
        data = github.graphql(MINIMIZE_MUTATION, {"subjectId": node, "classifier": "OUTDATED"})
    except GitHubError as exc:
        reason = NODE_NOT_FOUND if exc.reason == NOT_FOUND else HIDE_FAILED
        raise _github_error(f"cannot hide {node}", exc, reason) from None
    try:
        minimized = data["minimizeComment"]["minimizedComment"]
        return str(minimized.get("minimizedReason") or "outdated")
    except (KeyError, TypeError) as exc:
        raise KdevError(f"unreadable hide answer: {exc}", HIDE_FAILED) from None
