"""Steps 0 and 1 of ``kdev review-pr`` (shared with ``describe-pr``): argument checks,
the self-loop closure and the fork backstop (metadata only; a cross-repository PR passes
only on an allowlisted maintainer's comment, re-read here)."""

from __future__ import annotations

import logging
import re
from typing import Any

from engine.github import GitHubError, PullRequest, is_same_repo
from wrapper.config import check_repo
from wrapper.errors import ConfigError, GitHubFailed, Outcome
from wrapper.gh import get_comment
from wrapper.notify import failure_notification
from wrapper.review.context import ReviewContext, ReviewReport, ReviewRequest, notify
from wrapper.review.github_gate import read_pull

log = logging.getLogger("kdev.review")


def read_metadata(ctx: ReviewContext, req: ReviewRequest) -> PullRequest:
    """Step 1: the PR's metadata (never its diff). A failed read is a wrapper failure
    (``GitHubFailed``: github_auth / github_unavailable / github_malformed), with the
    FAILURE notice sent; it is never read as a fork."""
    try:
        return read_pull(ctx.github, req.repo, req.pr)
    except GitHubFailed as exc:
        pr_url = req.pr_url or f"https://github.com/{req.repo}/pull/{req.pr}"
        notify(
            ctx,
            req,
            failure_notification(req.repo, req.pr, exc.reason, exc.message, pr_url, req.head_sha),
        )
        exc.notified = True
        raise


def check_comment_id(comment_id: int | None) -> None:
    """``--comment-id`` is absent or a positive integer; else ``invalid_comment_id``."""
    if comment_id is not None and (
        isinstance(comment_id, bool) or not isinstance(comment_id, int) or comment_id < 1
    ):
        raise ConfigError(
            f"--comment-id must be a positive integer, got {comment_id!r}", "invalid_comment_id"
        )


def is_self_comment(ctx: ReviewContext, repo: str, comment_id: int | None) -> bool:
    """Step 0: True when ``comment_id`` is a comment kdev itself posted on ``repo``."""
    return comment_id is not None and comment_id in ctx.ledger.posted_comment_ids(repo)


_COMMENT_TARGET = re.compile(r"/repos/([^/]+/[^/]+)/(issues|pulls)/([1-9][0-9]*)$")


def read_summons(
    ctx: ReviewContext, repo: str, pr: int, comment_id: int
) -> tuple[str, dict[str, Any]] | str:
    """Comment ``comment_id`` re-read from the API (an issue comment, else a review
    comment) with its kind (``issue`` or ``diff``), when it is on ``repo`` #``pr`` and
    its author's numeric id is in the wrapper's own ``mention_allowlist``; otherwise
    why not (one line)."""
    comment: dict[str, Any] | None = None
    kind = "issue"
    for kind in ("issue", "diff"):
        try:
            comment = get_comment(ctx.github, repo, comment_id, kind)
            break
        except GitHubError as exc:
            if exc.reason == "not_found":
                continue
            return f"comment {comment_id} unreadable [{exc.reason}]"
    if comment is None:
        return f"comment {comment_id} not found"
    url = comment.get("issue_url" if kind == "issue" else "pull_request_url")
    match = _COMMENT_TARGET.search(url) if isinstance(url, str) else None
    if (
        match is None
        or match.group(1).lower() != repo.lower()
        or match.group(2) != ("issues" if kind == "issue" else "pulls")
        or int(match.group(3)) != pr
    ):
        return f"comment {comment_id} is not on {repo} #{pr}"
    user = comment.get("user")
    author_id = user.get("id") if isinstance(user, dict) else None
    if isinstance(author_id, bool) or not isinstance(author_id, int):
        return f"comment {comment_id} has no author id"
    if author_id not in ctx.config.mention_allowlist:
        return f"comment {comment_id}: author id {author_id} is not in mention_allowlist"
    return kind, comment


def mention_denial(ctx: ReviewContext, repo: str, pr: int, comment_id: int) -> str | None:
    """None when comment ``comment_id`` passes :func:`read_summons`; otherwise why not."""
    found = read_summons(ctx, repo, pr, comment_id)
    return found if isinstance(found, str) else None


def fork_gate(
    ctx: ReviewContext, repo: str, number: int, pr: PullRequest, comment_id: int | None
) -> str | None:
    """Step 1: None when the PR may be reviewed; else the ``skipped_fork`` detail.

    A same-repo PR passes. A cross-repository PR (or a deleted fork) passes only on a
    mention: ``comment_id`` given, ``fork_review_on_mention`` on, and
    :func:`mention_denial` finds nothing wrong.
    """
    if is_same_repo(pr):
        return None
    why = (
        "head repository deleted"
        if pr.head_repo_full_name is None
        else f"head is {pr.head_repo_full_name}"
    )
    if comment_id is None:
        return why
    if not ctx.config.fork_review_on_mention:
        return f"{why}; fork_review_on_mention is off"
    denial = mention_denial(ctx, repo, number, comment_id)
    if denial is not None:
        return f"{why}; {denial}"
    log.info(
        "%s #%s: cross-repository, reviewed on allowlisted comment %s", repo, number, comment_id
    )
    return None


def admit(req: ReviewRequest, ctx: ReviewContext) -> PullRequest | ReviewReport:
    """Steps 0 and 1, shared with ``describe-pr``: argument checks, the self-loop closure
    (a comment kdev posted never summons it) and the fork backstop (metadata only; anything
    but a provable same-repo PR is skipped unless an allowlisted maintainer's comment,
    re-read here, asked for it). Returns the PR's metadata, or the skip decision."""
    check_repo(req.repo)
    if req.pr < 1:
        raise ConfigError(f"--pr must be a positive integer, got {req.pr}", "invalid_pr")
    check_comment_id(req.comment_id)
    if req.notify_to is not None:
        ctx.config.recipient(req.notify_to)  # unknown_recipient before any work
    if is_self_comment(ctx, req.repo, req.comment_id):
        return req.report(
            Outcome.SKIPPED_SELF_COMMENT,
            detail=f"comment {req.comment_id} was posted by kdev",
        )
    pr = read_metadata(ctx, req)
    skip = fork_gate(ctx, req.repo, req.pr, pr, req.comment_id)
    if skip is not None:
        return ReviewReport(Outcome.SKIPPED_FORK, req.repo, req.pr, req.head_sha, detail=skip)
    return pr
