"""kdev's calls for reviews with line comments and for commit statuses (issue 27).

    create_review         POST /repos/{repo}/pulls/{n}/reviews: one review and all its
                          line comments, or nothing (GitHub answers 200, not 201)
    list_review_comments  GET /repos/{repo}/pulls/{n}/reviews/{id}/comments, every page
    list_reviews          GET /repos/{repo}/pulls/{n}/reviews, every page
    list_issue_comments   GET /repos/{repo}/issues/{n}/comments, every page
    create_status         POST /repos/{repo}/statuses/{sha} (201)
    combined_status       GET /repos/{repo}/commits/{ref}/status (CombinedStatus)

Like :mod:`wrapper.gh`: bad arguments raise ``InvalidInput`` before any request is sent,
with GitHub's own limits checked here where they are known (a ``body`` for
REQUEST_CHANGES and COMMENT, ``start_line`` strictly before ``line`` on one side, a status
``description`` of at most 140 characters); GitHub's refusals (a 422 for a comment
outside the diff rejects the whole review) are the engine client's ``GitHubError``s, and
an answer of the wrong shape is ``GitHubMalformedPayload`` raised through
``client.error``. Writes are never retried.

Like ``wrapper/gh.py`` this module defines GitHub writes and posts text as given: a
caller sends every body (the review's, each comment's, a status description) through
the one gate of ``wrapper/post.py`` first (tests/wrapper/test_comment_gate.py holds
every other module to that).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from engine.errors import InvalidInput
from engine.github import (
    MALFORMED_PAYLOAD,
    GitHubClient,
    GitHubMalformedPayload,
    Malformed,
    get_field,
    validate_repo_name,
)
from wrapper.gh import check_sha

EVENTS = ("APPROVE", "REQUEST_CHANGES", "COMMENT")
SIDES = ("RIGHT", "LEFT")
STATUS_STATES = ("error", "failure", "pending", "success")
MAX_STATUS_DESCRIPTION = 140  # "description is too long (maximum is 140 characters)"


@dataclass(frozen=True)
class LineComment:
    """One comment of a review: ``line`` (the last line of a range) on ``side`` of
    ``path``; ``start_line``/``start_side`` open a multi-line range."""

    path: str
    body: str
    line: int
    side: str = "RIGHT"
    start_line: int | None = None
    start_side: str | None = None

    def payload(self) -> dict[str, Any]:
        sent: dict[str, Any] = {
            "path": self.path,
            "body": self.body,
            "line": self.line,
            "side": self.side,
        }
        if self.start_line is not None:
            sent["start_line"] = self.start_line
            sent["start_side"] = self.start_side or self.side
        return sent


@dataclass(frozen=True)
class CombinedStatus:
    """``GET .../commits/{ref}/status``: the combined state and each context's latest."""

    state: str  # failure | pending | success
    sha: str
    total_count: int
    contexts: tuple[tuple[str, str], ...]  # (context, state), newest first
    descriptions: tuple[str | None, ...] = ()  # of each of ``contexts``, in its order

    def latest(self, context: str) -> tuple[str, str | None] | None:
        """``(state, description)`` of ``context``'s newest status (GitHub matches a
        context without regard to case), or None when the view has none."""
        for index, (name, state) in enumerate(self.contexts):
            if name.lower() == context.lower():
                described = self.descriptions[index] if index < len(self.descriptions) else None
                return state, described
        return None


def _bad(message: str) -> InvalidInput:
    return InvalidInput(message, "invalid_body")


def _check_number(value: int, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInput(f"{what} is a positive integer, got {value!r}", "invalid_number")


def _check_comment(c: LineComment) -> None:
    if not c.path or not c.body:
        raise _bad("a review comment needs a path and a body")
    _check_number(c.line, "a comment line")
    if c.side not in SIDES or (c.start_side is not None and c.start_side not in SIDES):
        raise _bad(f"a comment side is RIGHT or LEFT, got {c.side!r}/{c.start_side!r}")
    if c.start_line is not None:
        _check_number(c.start_line, "a comment start_line")
        same_side = (c.start_side or c.side) == c.side
        if same_side and c.start_line >= c.line:
            # GitHub: "start line must precede the end line" (send it only when smaller)
            raise _bad(f"start_line {c.start_line} must be before line {c.line}")


def create_review(
    client: GitHubClient,
    repo: str,
    number: int,
    *,
    event: str | None,
    body: str = "",
    commit_id: str | None = None,
    comments: tuple[LineComment, ...] | list[LineComment] = (),
) -> dict[str, Any]:
    """One review of pull ``number`` with ``comments``; returns the review GitHub made.

    ``event`` None leaves the review PENDING (not submitted); REQUEST_CHANGES and COMMENT
    need a ``body``. ``commit_id`` defaults, at GitHub, to the pull's head."""
    validate_repo_name(repo)
    _check_number(number, "a pull number")
    if event is not None and event not in EVENTS:
        raise _bad(f"a review event is one of {', '.join(EVENTS)} or None, got {event!r}")
    if event in ("REQUEST_CHANGES", "COMMENT") and not body:
        raise _bad(f"a {event} review needs a body")
    if commit_id is not None:
        check_sha(commit_id, "a commit_id is")
    for comment in comments:
        _check_comment(comment)
    sent: dict[str, Any] = {"body": body, "comments": [c.payload() for c in comments]}
    if event is not None:
        sent["event"] = event
    if commit_id is not None:
        sent["commit_id"] = commit_id
    review = client.request("POST", f"repos/{repo}/pulls/{number}/reviews", body=sent, expect=dict)
    if not isinstance(review.get("id"), int) or not isinstance(review.get("state"), str):
        said = f"the review made on pull #{number} of {repo} has no id or state"
        raise client.error(GitHubMalformedPayload, said, 200)
    return review


def list_review_comments(
    client: GitHubClient, repo: str, number: int, review_id: int
) -> list[dict[str, Any]]:
    """Every comment of review ``review_id`` (all pages, or an error)."""
    validate_repo_name(repo)
    _check_number(number, "a pull number")
    _check_number(review_id, "a review id")
    path = f"repos/{repo}/pulls/{number}/reviews/{review_id}/comments"
    what = f"the comments of review {review_id} on pull #{number} of {repo}"
    return _all_objects(client, path, what)


def _all_objects(client: GitHubClient, path: str, what: str) -> list[dict[str, Any]]:
    """Every item of the listing at ``path``, all pages, each an object; else the
    malformed-payload error naming ``what`` (an unread page is never a shorter list)."""
    read = client.get_rest(path, {"per_page": 100}, paginate=True)
    if not read.complete:
        raise client.error(GitHubMalformedPayload, f"{what}: more pages than read", 200)
    if not all(isinstance(item, dict) for item in read.body):
        raise client.error(GitHubMalformedPayload, f"{what}: an item is not an object", 200)
    return list(read.body)


def list_reviews(client: GitHubClient, repo: str, number: int) -> list[dict[str, Any]]:
    """Every review of pull ``number`` (all pages, oldest first, or an error)."""
    validate_repo_name(repo)
    _check_number(number, "a pull number")
    what = f"the reviews of pull #{number} of {repo}"
    return _all_objects(client, f"repos/{repo}/pulls/{number}/reviews", what)


def list_issue_comments(client: GitHubClient, repo: str, number: int) -> list[dict[str, Any]]:
    """Every conversation comment of pull (or issue) ``number`` (all pages, oldest first,
    or an error)."""
    validate_repo_name(repo)
    _check_number(number, "an issue number")
    what = f"the comments of #{number} of {repo}"
    return _all_objects(client, f"repos/{repo}/issues/{number}/comments", what)


def create_status(
    client: GitHubClient,
    repo: str,
    sha: str,
    state: str,
    *,
    context: str = "default",
    description: str | None = None,
    target_url: str | None = None,
) -> dict[str, Any]:
    """A commit status on ``sha``; returns the status GitHub made (201)."""
    validate_repo_name(repo)
    check_sha(sha, "a status goes on")
    if state not in STATUS_STATES:
        raise _bad(f"a status state is one of {', '.join(STATUS_STATES)}, got {state!r}")
    if not context:
        raise _bad("a status context is a non-empty string")
    if description is not None and len(description) > MAX_STATUS_DESCRIPTION:
        raise _bad(f"a status description has at most {MAX_STATUS_DESCRIPTION} characters")
    sent: dict[str, Any] = {"state": state, "context": context}
    if description is not None:
        sent["description"] = description
    if target_url is not None:
        sent["target_url"] = target_url
    return client.request("POST", f"repos/{repo}/statuses/{sha}", body=sent, expect=dict)


def combined_status(client: GitHubClient, repo: str, ref: str) -> CombinedStatus:
    """The combined status of ``ref`` (a sha or branch): failure if any context reports
    error or failure, pending if none reports or any is pending, else success."""
    validate_repo_name(repo)
    if not ref or ".." in ref or any(c.isspace() for c in ref):
        raise InvalidInput(f"a ref or sha, got {ref!r}", "invalid_ref")
    path = f"repos/{repo}/commits/{quote(ref, safe='/')}/status"
    body = client.request("GET", path, params={"per_page": 100}, expect=dict)
    try:
        statuses = get_field(body, "statuses", list, "")
        contexts, descriptions = [], []
        for index, item in enumerate(statuses):
            if not isinstance(item, dict):
                raise Malformed(MALFORMED_PAYLOAD, f"statuses[{index}] is not an object")
            where = f"statuses[{index}]."
            contexts.append(
                (get_field(item, "context", str, where), get_field(item, "state", str, where))
            )
            described = item.get("description")
            if described is not None and not isinstance(described, str):
                raise Malformed(MALFORMED_PAYLOAD, f"{where}description is not a string")
            descriptions.append(described)
        return CombinedStatus(
            state=get_field(body, "state", str, ""),
            sha=get_field(body, "sha", str, ""),
            total_count=get_field(body, "total_count", int, ""),
            contexts=tuple(contexts),
            descriptions=tuple(descriptions),
        )
    except Malformed as exc:
        said = f"cannot read the combined status of {ref} in {repo}: {exc.detail}"
        raise client.error(GitHubMalformedPayload, said, 200) from None
