"""The REST routes of reactions to comments (issue 29): create and list, for an issue
comment (``/issues/comments/{id}/reactions``, conversation comments on pull requests
included) and a review comment (``/pulls/comments/{id}/reactions``).

GitHub's rules (reactions/create-for-issue-comment, create-for-pull-request-review-comment,
list-for-issue-comment, list-for-pull-request-review-comment in GitHub's REST
description): ``content`` is one of ``+1 -1 laugh confused heart hooray rocket eyes``,
anything else a ``422`` "Validation Failed"; a new reaction is ``201`` "Reaction created";
the same user's same content again is ``200`` "Reaction exists" with the existing one
(never a second); an unknown comment is ``404`` (the create operations list no 404, the
list operations do). The listing takes ``content`` as a filter and pages like every
listing.

Not settled by a source (UNCONFIRMED): the ``errors`` entry of the 422 (the description
gives only the ``validation-error`` schema; this one, ``resource: Reaction``,
``field: content``, ``code: invalid``, is GitHub's usual form for a value outside a list).
"""

from __future__ import annotations

from typing import Any

from ghsim.conversation import REACTION_CONTENTS
from ghsim.model import Comment
from ghsim.payloads import DOCS
from ghsim.rest import _require_user
from ghsim.routing import Ctx, HttpError, _paginate, _repo, route

_DOCS = f"{DOCS}/reactions/reactions"
_KINDS = {"issue": "issue-comment", "review": "pull-request-review-comment"}


def _comment(ctx: Ctx, owner: str, name: str, comment_id: str, kind: str) -> Comment:
    repo = _repo(ctx, owner, name)
    for c in ctx.sim._comments:
        if c.repo is repo and c.id == int(comment_id) and c.kind == kind:
            return c
    raise HttpError(404, "Not Found", f"{_DOCS}#list-reactions-for-an-{_KINDS[kind]}")


def _create(ctx: Ctx, owner: str, name: str, comment_id: str, kind: str) -> dict[str, Any]:
    target = _comment(ctx, owner, name, comment_id, kind)
    user = _require_user(ctx)
    content = ctx.json.get("content") if isinstance(ctx.json, dict) else None
    if not isinstance(content, str) or content not in REACTION_CONTENTS:
        raise HttpError(
            422,
            "Validation Failed",
            f"{_DOCS}#create-reaction-for-an-{_KINDS[kind]}",
            [{"resource": "Reaction", "code": "invalid", "field": "content"}],
        )
    reaction, created = ctx.sim.react(target.repo.full_name, target.id, content, author=user)
    ctx.status = 201 if created else 200
    return ctx.render.reaction(reaction)


def _list(ctx: Ctx, owner: str, name: str, comment_id: str, kind: str) -> list[dict[str, Any]]:
    target = _comment(ctx, owner, name, comment_id, kind)
    wanted = ctx.query.get("content")
    found = [
        r
        for r in ctx.sim.reactions(target.repo.full_name, target.id)
        if wanted is None or r.content == wanted
    ]
    return [ctx.render.reaction(r) for r in _paginate(ctx, found)]


@route("POST", "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions")
def create_issue_comment_reaction(
    ctx: Ctx, owner: str, name: str, comment_id: str
) -> dict[str, Any]:
    return _create(ctx, owner, name, comment_id, "issue")


@route("POST", "/repos/{owner}/{repo}/pulls/comments/{comment_id}/reactions")
def create_review_comment_reaction(
    ctx: Ctx, owner: str, name: str, comment_id: str
) -> dict[str, Any]:
    return _create(ctx, owner, name, comment_id, "review")


@route("GET", "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions")
def list_issue_comment_reactions(
    ctx: Ctx, owner: str, name: str, comment_id: str
) -> list[dict[str, Any]]:
    return _list(ctx, owner, name, comment_id, "issue")


@route("GET", "/repos/{owner}/{repo}/pulls/comments/{comment_id}/reactions")
def list_review_comment_reactions(
    ctx: Ctx, owner: str, name: str, comment_id: str
) -> list[dict[str, Any]]:
    return _list(ctx, owner, name, comment_id, "review")
