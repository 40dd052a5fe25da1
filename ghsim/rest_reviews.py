"""The REST routes of issue 27: creating and reading reviews, creating and listing statuses.

The rules are the helpers' (:mod:`ghsim.reviews`, :mod:`ghsim.checks`, with their
sources); a helper's :class:`~ghsim.core.Unprocessable` becomes GitHub's 422 answer here.
A PENDING review is seen only by its author (GitHub shows nobody else a review that was
not submitted); its comments are drafts, in no feed.
"""

from __future__ import annotations

from typing import Any

from ghsim.core import Unprocessable
from ghsim.model import Pull, Repo, Review, User
from ghsim.payloads import DOCS
from ghsim.rest import _require_user, _resolve_ref
from ghsim.routing import Ctx, HttpError, _comment_json, _paginate, _pull, _repo, route

REVIEW_NOT_FOUND = f"{DOCS}/pulls/reviews#get-a-review-for-a-pull-request"


def _unprocessable(exc: Unprocessable) -> HttpError:
    return HttpError(422, exc.message, exc.doc or DOCS, exc.errors)


def visible(review: Review, user: User | None) -> bool:
    """Whether ``user`` may see ``review`` (a PENDING one: only its author)."""
    return review.state != "PENDING" or (user is not None and user.id == review.user.id)


def _review(ctx: Ctx, repo: Repo, pr: Pull, review_id: str) -> Review:
    for review in ctx.sim._reviews:
        if review.repo is repo and review.pull_number == pr.number and review.id == int(review_id):
            if visible(review, ctx.user):
                return review
    raise HttpError(404, "Not Found", REVIEW_NOT_FOUND)


@route("POST", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews")
def create_review(ctx: Ctx, owner: str, name: str, number: str) -> dict[str, Any]:
    """200 with the review (GitHub answers 200 here, not 201), or 422 with nothing made."""
    repo = _repo(ctx, owner, name)
    pr = _pull(ctx, repo, number)
    user = _require_user(ctx)
    data = ctx.json if isinstance(ctx.json, dict) else {}
    try:
        review = ctx.sim.create_review(
            repo.full_name,
            pr.number,
            user,
            event=data.get("event"),
            body=data.get("body"),
            commit_id=data.get("commit_id"),
            comments=data.get("comments") or [],
        )
    except Unprocessable as exc:
        raise _unprocessable(exc) from None
    return ctx.render.review(review, ctx.sim.association(review.user, repo))


@route("GET", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}")
def get_review(ctx: Ctx, owner: str, name: str, number: str, review_id: str) -> dict[str, Any]:
    repo = _repo(ctx, owner, name)
    review = _review(ctx, repo, _pull(ctx, repo, number), review_id)
    return ctx.render.review(review, ctx.sim.association(review.user, repo))


@route("GET", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}/comments")
def list_review_comments(
    ctx: Ctx, owner: str, name: str, number: str, review_id: str
) -> list[dict[str, Any]]:
    """The comments of one review, oldest first (a PENDING review's drafts, to its author)."""
    repo = _repo(ctx, owner, name)
    pr = _pull(ctx, repo, number)
    review = _review(ctx, repo, pr, review_id)
    comments = ctx.sim.review_comments(repo.full_name, pr.number, review.id)
    return [_comment_json(ctx, c) for c in _paginate(ctx, comments)]


@route("POST", "/repos/{owner}/{repo}/statuses/{sha}")
def create_status(ctx: Ctx, owner: str, name: str, sha: str) -> dict[str, Any]:
    """201 with the status and its ``Location``, or 422 (unknown sha, bad state, a
    description over 140 characters, the 1000th status of a sha and context)."""
    repo = _repo(ctx, owner, name)
    user = _require_user(ctx)
    commit = _resolve_ref(ctx, repo, sha)
    data = ctx.json if isinstance(ctx.json, dict) else {}
    try:
        made = ctx.sim.create_status(
            repo.full_name,
            commit,
            data.get("state"),
            context=data.get("context"),
            description=data.get("description"),
            target_url=data.get("target_url"),
            creator=user,
        )
    except Unprocessable as exc:
        raise _unprocessable(exc) from None
    ctx.status = 201
    payload = ctx.render.status(made)
    ctx.headers["location"] = payload["url"]
    return payload


@route("GET", "/repos/{owner}/{repo}/commits/{ref}/statuses")
def list_statuses(ctx: Ctx, owner: str, name: str, ref: str) -> list[dict[str, Any]]:
    """Every status of the commit, newest first ("the first status in the list will be the
    latest one", GitHub's description of ``repos/list-commit-statuses-for-ref``)."""
    repo = _repo(ctx, owner, name)
    sha = _resolve_ref(ctx, repo, ref)
    statuses = [s for s in ctx.sim._statuses if s.repo is repo and s.sha == sha]
    statuses.sort(key=lambda s: s.id, reverse=True)
    return [ctx.render.status(s) for s in _paginate(ctx, statuses)]
