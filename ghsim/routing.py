"""The route table and what every route handler shares: the request context, errors, paging.

Routes register with :func:`route` under the path template GitHub's OpenAPI description
uses (``/repos/{owner}/{repo}/pulls/{pull_number}``), so the table can be checked against
that description (``ghsim/openapi/``, ``tests/e2e/test_ghsim_openapi.py``). The handlers
live in :mod:`ghsim.rest` and :mod:`ghsim.graphql`; they run under ``GitHubSim.lock``
(taken by :func:`ghsim.server.dispatch`), raise :class:`HttpError` for GitHub's error
answers and set ``ctx.status``/``ctx.headers`` when they need more than a 200.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlencode

from ghsim.model import Comment, Pull, Repo, TokenInfo, User, parse_iso
from ghsim.payloads import DOCS, Renderer, error_body

if TYPE_CHECKING:
    from ghsim.apps import App
    from ghsim.state import SimState as GitHubSim


class HttpError(Exception):
    """GitHub's error answer; ``errors`` (strings or objects) go between ``message`` and
    ``documentation_url``, where GitHub puts them."""

    def __init__(
        self, status: int, message: str, doc: str = DOCS, errors: list[Any] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        body = error_body(message, doc, status)
        if errors is not None:
            body = {"message": message, "errors": errors, **body}
        self.body = body


@dataclass
class Ctx:
    """One request as the route handlers see it."""

    sim: GitHubSim
    method: str
    path: str
    query: dict[str, str]
    query_pairs: list[tuple[str, str]]
    json: Any
    base_url: str
    render: Renderer
    user: User | None
    token: TokenInfo | None = None
    app: App | None = None  # the App whose JWT authenticated the request (ghsim/apps.py)
    status: int = 200
    branch_heads: dict[str, dict[str, str]] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)

    def int_param(self, name: str, default: int, low: int = 1, high: int | None = None) -> int:
        try:
            value = int(self.query.get(name, default))
        except ValueError:
            value = default
        value = max(value, low)
        return min(value, high) if high is not None else value


@dataclass(frozen=True)
class Route:
    """One served operation: ``method`` and the OpenAPI ``template`` it answers."""

    method: str
    template: str
    pattern: re.Pattern[str]
    handler: Callable[..., Any]


ROUTES: list[Route] = []

# What a template parameter matches (default: one path segment) and the handler keyword
# it is passed as (default: its own name).
_PARAM_PATTERN = {
    "pull_number": r"\d+",
    "issue_number": r"\d+",
    "comment_id": r"\d+",
    "review_id": r"\d+",
    "ref": ".+",
    "basehead": ".+",
    "branch": ".+",
}
_PARAM_KEYWORD = {"repo": "name", "pull_number": "number", "issue_number": "number"}


def template_pattern(template: str) -> re.Pattern[str]:
    """The regular expression a request path must match to reach ``template``."""

    def group(match: re.Match[str]) -> str:
        param = match.group(1)
        keyword = _PARAM_KEYWORD.get(param, param)
        return f"(?P<{keyword}>{_PARAM_PATTERN.get(param, '[^/]+')})"

    parts = re.split(r"(\{[a-z_]+\})", template)
    regex = "".join(
        re.sub(r"\{([a-z_]+)\}", group, part) if part.startswith("{") else re.escape(part)
        for part in parts
    )
    return re.compile(f"^{regex}$")


def route(method: str, template: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a handler for ``method`` on the OpenAPI path ``template``."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        ROUTES.append(Route(method, template, template_pattern(template), fn))
        return fn

    return register


def find_route(method: str, path: str) -> tuple[Route, dict[str, str]] | None:
    """The route serving ``method path`` and its path parameters, or None."""
    for candidate in ROUTES:
        match = candidate.pattern.match(path)
        if match is not None and candidate.method == method:
            return candidate, match.groupdict()
    return None


def serve_route(ctx: Ctx) -> Any:
    """Run the route matching ``ctx.method`` and ``ctx.path`` (404 when none does)."""
    found = find_route(ctx.method, ctx.path)
    if found is None:
        raise HttpError(404, "Not Found")
    chosen, params = found
    return chosen.handler(ctx, **params)


# == helpers shared by the handlers ==================================================


def _repo(ctx: Ctx, owner: str, name: str) -> Repo:
    found = ctx.sim.find_repo(unquote(owner), unquote(name))
    if found is None:
        raise HttpError(404, "Not Found", f"{DOCS}/repos/repos#get-a-repository")
    return found


def _pull(ctx: Ctx, repo: Repo, number: str) -> Pull:
    found = ctx.sim._pulls.get(repo.key, {}).get(int(number))
    if found is None:
        raise HttpError(404, "Not Found", f"{DOCS}/pulls/pulls#get-a-pull-request")
    return found


def _paginate(ctx: Ctx, items: list[Any], default_per_page: int = 30) -> list[Any]:
    """The requested page of ``items``; sets the ``link`` header like GitHub."""
    per_page = ctx.int_param("per_page", default_per_page, 1, 100)
    page = ctx.int_param("page", 1)
    last = max(1, math.ceil(len(items) / per_page))
    rels: list[tuple[str, int]] = []
    if page > 1:
        rels.append(("prev", min(page - 1, last)))
    if page < last:
        rels += [("next", page + 1), ("last", last)]
    if page > 1:
        rels.append(("first", 1))
    if rels:

        def page_url(number: int) -> str:
            pairs = [(k, v) for k, v in ctx.query_pairs if k != "page"] + [("page", str(number))]
            return f"{ctx.base_url}{ctx.path}?{urlencode(pairs)}"

        ctx.headers["link"] = ", ".join(f'<{page_url(n)}>; rel="{rel}"' for rel, n in rels)
    start = (page - 1) * per_page
    return items[start : start + per_page]


def _direction(ctx: Ctx, default: str) -> bool:
    """True for descending."""
    direction = ctx.query.get("direction", default)
    if direction not in ("asc", "desc"):
        raise HttpError(422, "Validation Failed")
    return direction == "desc"


def _since(ctx: Ctx) -> datetime | None:
    raw = ctx.query.get("since")
    if not raw:
        return None
    try:
        return parse_iso(raw)
    except ValueError:
        raise HttpError(422, "Validation Failed") from None


def _base_sha(ctx: Ctx, pr: Pull) -> str:
    """The tip of the base branch (read once per repository and request)."""
    heads = ctx.branch_heads.get(pr.repo.key)
    if heads is None:
        heads = ctx.branch_heads[pr.repo.key] = ctx.sim.git.branch_heads(pr.repo.path)
    return heads.get(pr.base_ref) or pr.head_sha


def _pull_json(ctx: Ctx, pr: Pull, full: bool) -> dict[str, Any]:
    sim = ctx.sim
    open_issues = sum(1 for p in sim._pulls[pr.repo.key].values() if p.state == "open")
    forks = len(sim.forks_of(pr.repo))
    facts = sim.pull_facts(pr) if full else None
    base_sha = facts.base_sha if facts else _base_sha(ctx, pr)
    association = sim.association(pr.user, pr.repo)
    return ctx.render.pull(pr, base_sha, association, open_issues, forks, facts)


def _comment_json(ctx: Ctx, c: Comment) -> dict[str, Any]:
    association = ctx.sim.association(c.user, c.repo)
    if c.kind == "issue":
        return ctx.render.issue_comment(c, association)
    return ctx.render.review_comment(c, association)
