"""The REST and GraphQL routes: each turns a request context into a JSON-able value.

Routes run under ``GitHubSim.lock`` (taken by :func:`ghsim.server.dispatch`), raise
:class:`HttpError` for GitHub's error answers and set ``ctx.status``/``ctx.headers`` when
they need more than a 200.
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlencode

from ghsim.gitops import MergeConflict
from ghsim.model import Comment, Pull, Repo, TokenInfo, User, iso, node_id, parse_iso
from ghsim.payloads import DOCS, Renderer, error_body

if TYPE_CHECKING:
    from ghsim.sim import GitHubSim


class HttpError(Exception):
    def __init__(self, status: int, message: str, doc: str = DOCS) -> None:
        super().__init__(message)
        self.status = status
        self.body = error_body(message, doc, status)


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


Route = tuple[str, re.Pattern[str], Callable[..., Any]]
ROUTES: list[Route] = []


def route(method: str, pattern: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        ROUTES.append((method, re.compile(f"^{pattern}$"), fn))
        return fn

    return register


REPO = r"/repos/(?P<owner>[^/]+)/(?P<name>[^/]+)"


# == helpers =================================================================================


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


# == pulls ===================================================================================


@route("GET", f"{REPO}/pulls")
def list_pulls(ctx: Ctx, owner: str, name: str) -> list[dict[str, Any]]:
    repo = _repo(ctx, owner, name)
    ctx.sim._notice_pushes(repo)
    state = ctx.query.get("state", "open")
    if state not in ("open", "closed", "all"):
        raise HttpError(422, "Validation Failed")
    sort = ctx.query.get("sort", "created")
    if sort not in ("created", "updated", "popularity", "long-running"):
        raise HttpError(422, "Validation Failed")
    descending = _direction(ctx, "desc" if sort == "created" else "asc")
    pulls = [
        pr
        for pr in ctx.sim._pulls[repo.key].values()
        if (state == "all" or pr.state == state)
        and ("base" not in ctx.query or pr.base_ref == ctx.query["base"])
        and (
            "head" not in ctx.query
            or f"{pr.head_repo.owner.login}:{pr.head_ref}".lower() == ctx.query["head"].lower()
        )
    ]

    def key(pr: Pull) -> tuple[Any, ...]:
        if sort == "updated":
            return (pr.updated_at, pr.number)
        return (pr.created_at, pr.number)

    pulls.sort(key=key, reverse=descending)
    return [_pull_json(ctx, pr, full=False) for pr in _paginate(ctx, pulls)]


@route("GET", rf"{REPO}/pulls/(?P<number>\d+)")
def get_pull(ctx: Ctx, owner: str, name: str, number: str) -> dict[str, Any]:
    repo = _repo(ctx, owner, name)
    pr = _pull(ctx, repo, number)
    ctx.sim._notice_pushes(repo, only=pr)
    return _pull_json(ctx, pr, full=True)


@route("GET", rf"{REPO}/pulls/(?P<number>\d+)/reviews")
def list_reviews(ctx: Ctx, owner: str, name: str, number: str) -> list[dict[str, Any]]:
    repo = _repo(ctx, owner, name)
    pr = _pull(ctx, repo, number)
    reviews = [r for r in ctx.sim._reviews if r.repo is repo and r.pull_number == pr.number]
    return [
        ctx.render.review(r, ctx.sim.association(r.user, repo)) for r in _paginate(ctx, reviews)
    ]


@route("PUT", rf"{REPO}/pulls/(?P<number>\d+)/update-branch")
def update_branch(ctx: Ctx, owner: str, name: str, number: str) -> dict[str, Any]:
    repo = _repo(ctx, owner, name)
    pr = _pull(ctx, repo, number)
    ctx.sim._notice_pushes(repo, only=pr)
    expected = (ctx.json or {}).get("expected_head_sha")
    if expected and expected != pr.head_sha:
        raise HttpError(422, "expected head sha didn’t match current head ref.")
    behind, _ = ctx.sim.git.left_right(repo.path, ctx.sim._base_tip(pr), pr.head_sha)
    if behind == 0:
        raise HttpError(422, "There are no new commits on the base branch.")
    try:
        ctx.sim.merge_base_into_head(repo.full_name, pr.number)
    except MergeConflict:
        raise HttpError(422, "merge conflict between base and head") from None
    ctx.status = 202
    return {
        "message": "Updating pull request branch.",
        "url": f"{ctx.render.repo_html(repo)}/pull/{pr.number}",
    }


# == comments ================================================================================


def _comment_feed(ctx: Ctx, comments: list[Comment]) -> list[dict[str, Any]]:
    since = _since(ctx)
    sort = ctx.query.get("sort", "created")
    if sort not in ("created", "updated"):
        raise HttpError(422, "Validation Failed")
    descending = _direction(ctx, "asc")
    if since is not None:
        comments = [c for c in comments if c.updated_at >= since]
    if sort == "updated":
        comments.sort(key=lambda c: (c.updated_at, c.id), reverse=descending)
    else:
        comments.sort(key=lambda c: (c.created_at, c.id), reverse=descending)
    return [_comment_json(ctx, c) for c in _paginate(ctx, comments)]


@route("GET", f"{REPO}/issues/comments")
def issue_comment_feed(ctx: Ctx, owner: str, name: str) -> list[dict[str, Any]]:
    repo = _repo(ctx, owner, name)
    return _comment_feed(
        ctx, [c for c in ctx.sim._comments if c.repo is repo and c.kind == "issue"]
    )


@route("GET", f"{REPO}/pulls/comments")
def review_comment_feed(ctx: Ctx, owner: str, name: str) -> list[dict[str, Any]]:
    repo = _repo(ctx, owner, name)
    return _comment_feed(
        ctx, [c for c in ctx.sim._comments if c.repo is repo and c.kind == "review"]
    )


@route("GET", rf"{REPO}/issues/(?P<number>\d+)/comments")
def pull_issue_comments(ctx: Ctx, owner: str, name: str, number: str) -> list[dict[str, Any]]:
    repo = _repo(ctx, owner, name)
    pr = _pull(ctx, repo, number)
    return _comment_feed(
        ctx,
        [
            c
            for c in ctx.sim._comments
            if c.repo is repo and c.kind == "issue" and c.pull_number == pr.number
        ],
    )


@route("GET", rf"{REPO}/pulls/(?P<number>\d+)/comments")
def pull_review_comments(ctx: Ctx, owner: str, name: str, number: str) -> list[dict[str, Any]]:
    repo = _repo(ctx, owner, name)
    pr = _pull(ctx, repo, number)
    return _comment_feed(
        ctx,
        [
            c
            for c in ctx.sim._comments
            if c.repo is repo and c.kind == "review" and c.pull_number == pr.number
        ],
    )


def _require_user(ctx: Ctx) -> User:
    if ctx.user is None:
        raise HttpError(401, "Requires authentication")
    return ctx.user


def _body_text(ctx: Ctx) -> str:
    body = (ctx.json or {}).get("body") if isinstance(ctx.json, dict) else None
    if not isinstance(body, str) or not body:
        raise HttpError(422, "Validation Failed")
    return body


@route("POST", rf"{REPO}/issues/(?P<number>\d+)/comments")
def create_issue_comment(ctx: Ctx, owner: str, name: str, number: str) -> dict[str, Any]:
    repo = _repo(ctx, owner, name)
    pr = _pull(ctx, repo, number)
    user = _require_user(ctx)
    created = ctx.sim.comment(repo.full_name, pr.number, _body_text(ctx), author=user)
    ctx.status = 201
    payload = _comment_json(ctx, created)
    ctx.headers["location"] = payload["url"]
    return payload


@route("POST", rf"{REPO}/pulls/(?P<number>\d+)/comments/(?P<comment_id>\d+)/replies")
def reply_to_review_comment(
    ctx: Ctx, owner: str, name: str, number: str, comment_id: str
) -> dict[str, Any]:
    repo = _repo(ctx, owner, name)
    pr = _pull(ctx, repo, number)
    user = _require_user(ctx)
    target = next(
        (
            c
            for c in ctx.sim._comments
            if c.repo is repo and c.kind == "review" and c.id == int(comment_id)
        ),
        None,
    )
    if target is None or target.pull_number != pr.number:
        raise HttpError(
            404, "Not Found", f"{DOCS}/pulls/comments#create-a-reply-for-a-review-comment"
        )
    root = target.in_reply_to_id or target.id  # a reply to a reply joins the thread
    created = ctx.sim.comment(
        repo.full_name,
        pr.number,
        _body_text(ctx),
        author=user,
        kind="review",
        path=target.path,
        line=target.line,
        in_reply_to=root,
    )
    ctx.status = 201
    payload = _comment_json(ctx, created)
    ctx.headers["location"] = payload["url"]
    return payload


def _edit_comment(ctx: Ctx, owner: str, name: str, comment_id: str, kind: str) -> dict[str, Any]:
    repo = _repo(ctx, owner, name)
    _require_user(ctx)
    body = _body_text(ctx)
    found = [c for c in ctx.sim._comments if c.repo is repo and c.id == int(comment_id)]
    if not found or found[0].kind != kind:
        raise HttpError(404, "Not Found")
    return _comment_json(ctx, ctx.sim.edit_comment(repo.full_name, found[0].id, body))


@route("PATCH", rf"{REPO}/issues/comments/(?P<comment_id>\d+)")
def edit_issue_comment(ctx: Ctx, owner: str, name: str, comment_id: str) -> dict[str, Any]:
    return _edit_comment(ctx, owner, name, comment_id, "issue")


@route("PATCH", rf"{REPO}/pulls/comments/(?P<comment_id>\d+)")
def edit_review_comment(ctx: Ctx, owner: str, name: str, comment_id: str) -> dict[str, Any]:
    return _edit_comment(ctx, owner, name, comment_id, "review")


def _one_comment(ctx: Ctx, owner: str, name: str, comment_id: str, kind: str) -> dict[str, Any]:
    repo = _repo(ctx, owner, name)
    found = [c for c in ctx.sim._comments if c.repo is repo and c.id == int(comment_id)]
    if not found or found[0].kind != kind:
        raise HttpError(404, "Not Found")
    return _comment_json(ctx, found[0])


@route("GET", rf"{REPO}/issues/comments/(?P<comment_id>\d+)")
def get_issue_comment(ctx: Ctx, owner: str, name: str, comment_id: str) -> dict[str, Any]:
    return _one_comment(ctx, owner, name, comment_id, "issue")


@route("GET", rf"{REPO}/pulls/comments/(?P<comment_id>\d+)")
def get_review_comment(ctx: Ctx, owner: str, name: str, comment_id: str) -> dict[str, Any]:
    return _one_comment(ctx, owner, name, comment_id, "review")


# == commits, checks, compare ================================================================


def _resolve_ref(ctx: Ctx, repo: Repo, ref: str) -> str:
    sha = ctx.sim.git.rev_parse(repo.path, unquote(ref))
    if sha is None:
        raise HttpError(422, f"No commit found for SHA: {unquote(ref)}")
    return sha


def _pulls_with_head(ctx: Ctx, repo: Repo, sha: str) -> list[tuple[Pull, str]]:
    return [
        (pr, _base_sha(ctx, pr))
        for pr in ctx.sim._pulls[repo.key].values()
        if pr.state == "open" and pr.head_sha == sha and not pr.is_cross_repository
    ]


@route("GET", f"{REPO}/commits/(?P<ref>.+)/check-runs")
def list_check_runs(ctx: Ctx, owner: str, name: str, ref: str) -> dict[str, Any]:
    repo = _repo(ctx, owner, name)
    sha = _resolve_ref(ctx, repo, ref)
    runs = ctx.sim.check_runs_for(repo, sha)
    if ctx.query.get("filter", "latest") == "latest":
        latest: dict[str, Any] = {}
        for run in runs:
            latest[run.name] = run
        runs = list(latest.values())
    if "check_name" in ctx.query:
        runs = [r for r in runs if r.name == ctx.query["check_name"]]
    if "status" in ctx.query:
        runs = [r for r in runs if r.status == ctx.query["status"]]
    runs.sort(key=lambda r: r.id, reverse=True)
    pulls = _pulls_with_head(ctx, repo, sha)
    page = _paginate(ctx, runs)
    return {"total_count": len(runs), "check_runs": [ctx.render.check_run(r, pulls) for r in page]}


@route("GET", f"{REPO}/commits/(?P<ref>.+)/status")
def combined_status(ctx: Ctx, owner: str, name: str, ref: str) -> dict[str, Any]:
    repo = _repo(ctx, owner, name)
    sha = _resolve_ref(ctx, repo, ref)
    statuses = ctx.sim.statuses_for(repo, sha)
    return ctx.render.combined_status(repo, sha, _paginate(ctx, statuses, 100))


def _compare_side(ctx: Ctx, repo: Repo, spec: str) -> str:
    spec = unquote(spec)
    source = repo
    if ":" in spec:
        owner, _, spec = spec.partition(":")
        if owner.lower() != repo.owner.login.lower():
            forks = [f for f in ctx.sim.forks_of(repo) if f.owner.login.lower() == owner.lower()]
            if not forks:
                raise HttpError(404, "Not Found")
            source = forks[0]
    sha = ctx.sim.git.rev_parse(source.path, spec)
    if sha is None:
        raise HttpError(404, "Not Found", f"{DOCS}/commits/commits#compare-two-commits")
    if source is not repo and ctx.sim.git.rev_parse(repo.path, sha) is None:
        ctx.sim.git.fetch_ref(repo.path, source.path, sha, f"refs/ghsim/compare/{sha}")
    return sha


def _commit_json(ctx: Ctx, repo: Repo, entry: dict[str, str]) -> dict[str, Any]:
    api_repo = ctx.render.repo_api(repo)
    sha = entry["sha"]
    return {
        "sha": sha,
        "node_id": node_id("Commit", int(sha[:7], 16)),
        "commit": {
            "author": {"name": entry["an"], "email": entry["ae"], "date": entry["ad"]},
            "committer": {"name": entry["cn"], "email": entry["ce"], "date": entry["cd"]},
            "message": entry["message"].rstrip("\n"),
            "url": f"{api_repo}/git/commits/{sha}",
        },
        "url": f"{api_repo}/commits/{sha}",
        "html_url": f"{ctx.render.repo_html(repo)}/commit/{sha}",
        "parents": [{"sha": p, "url": f"{api_repo}/commits/{p}"} for p in entry["parents"].split()],
    }


@route("GET", f"{REPO}/compare/(?P<basehead>.+)")
def compare(ctx: Ctx, owner: str, name: str, basehead: str) -> dict[str, Any]:
    repo = _repo(ctx, owner, name)
    basehead = unquote(basehead)
    if "..." in basehead:
        base_spec, _, head_spec = basehead.partition("...")
    elif ".." in basehead:
        base_spec, _, head_spec = basehead.partition("..")
    else:
        raise HttpError(404, "Not Found")
    base_sha = _compare_side(ctx, repo, base_spec)
    head_sha = _compare_side(ctx, repo, head_spec)
    git = ctx.sim.git
    behind, ahead = git.left_right(repo.path, base_sha, head_sha)
    merge_base = git.merge_base(repo.path, base_sha, head_sha)
    if ahead == 0 and behind == 0:
        status = "identical"
    elif behind == 0:
        status = "ahead"
    elif ahead == 0:
        status = "behind"
    else:
        status = "diverged"
    api_repo, html_repo = ctx.render.repo_api(repo), ctx.render.repo_html(repo)
    commits = [_commit_json(ctx, repo, e) for e in git.log(repo.path, f"{base_sha}..{head_sha}")]
    merge_base_json = (
        _commit_json(ctx, repo, git.log(repo.path, merge_base, limit=1)[0])
        if merge_base
        else {"sha": None}
    )
    files = git.diff_files(repo.path, merge_base or base_sha, head_sha)
    return {
        "url": f"{api_repo}/compare/{basehead}",
        "html_url": f"{html_repo}/compare/{basehead}",
        "permalink_url": f"{html_repo}/compare/{base_sha}...{head_sha}",
        "diff_url": f"{html_repo}/compare/{basehead}.diff",
        "patch_url": f"{html_repo}/compare/{basehead}.patch",
        "base_commit": _commit_json(ctx, repo, git.log(repo.path, base_sha, limit=1)[0]),
        "merge_base_commit": merge_base_json,
        "status": status,
        "ahead_by": ahead,
        "behind_by": behind,
        "total_commits": ahead,
        "commits": commits,
        "files": [
            {
                "filename": f.filename,
                "status": f.status,
                "additions": f.additions,
                "deletions": f.deletions,
                "changes": f.changes,
            }
            for f in files
        ],
    }


# == rate limit and graphql ==================================================================


@route("GET", "/rate_limit")
def rate_limit(ctx: Ctx) -> dict[str, Any]:
    sim = ctx.sim
    buckets = {name: sim._bucket(ctx.token, name) for name in ("core", "graphql")}
    return ctx.render.rate_limit(buckets, int(sim.now().timestamp()))


def graphql_pull(ctx: Ctx, pr: Pull) -> dict[str, Any]:
    sim = ctx.sim
    status, mergeable, _ = sim.merge_state_status(pr)
    head = None if pr.head_repo_null else pr.head_repo
    state = "MERGED" if pr.merged else pr.state.upper()
    auto = pr.auto_merge
    return {
        "id": node_id("PullRequest", pr.id),
        "databaseId": pr.id,
        "number": pr.number,
        "title": pr.title,
        "url": f"{ctx.render.repo_html(pr.repo)}/pull/{pr.number}",
        "state": state,
        "isDraft": pr.draft,
        "closed": pr.state == "closed",
        "merged": pr.merged,
        "mergedAt": iso(pr.merged_at),
        "createdAt": iso(pr.created_at),
        "updatedAt": iso(pr.updated_at),
        "author": None
        if pr.user_null
        else {"login": pr.user.login, "__typename": "Bot" if pr.user.type == "Bot" else "User"},
        "isCrossRepository": pr.is_cross_repository,
        "headRefName": pr.head_ref,
        "headRefOid": pr.head_sha,
        "baseRefName": pr.base_ref,
        "baseRefOid": _base_sha(ctx, pr),
        "headRepository": None
        if head is None
        else {
            "id": node_id("Repository", head.id),
            "databaseId": head.id,
            "name": head.name,
            "nameWithOwner": head.full_name,
            "isFork": head.fork,
            "url": ctx.render.repo_html(head),
            "owner": {"login": head.owner.login},
        },
        "headRepositoryOwner": None if head is None else {"login": head.owner.login},
        "reviewDecision": sim.review_decision(pr),
        "autoMergeRequest": None
        if auto is None
        else {
            "enabledAt": iso(auto["enabled_at"]),
            "mergeMethod": str(auto["method"]).upper(),
            "enabledBy": {"login": auto["enabled_by"].login},
        },
        "mergeStateStatus": status,
        "mergeable": {True: "MERGEABLE", False: "CONFLICTING", None: "UNKNOWN"}[mergeable],
    }


_GQL_ARG = {
    "owner": re.compile(r'owner\s*:\s*"([^"]+)"'),
    "name": re.compile(r'name\s*:\s*"([^"]+)"'),
    "number": re.compile(r"pullRequest\s*\(\s*number\s*:\s*(\d+)"),
}


def _gql_error(kind: str, message: str) -> dict[str, Any]:
    return {
        "data": None,
        "errors": [{"type": kind, "locations": [{"line": 1, "column": 1}], "message": message}],
    }


def _review_comment_by_node(ctx: Ctx, node: str, kinds: tuple[str, ...]) -> Comment | None:
    for c in ctx.sim._comments:
        label = "IssueComment" if c.kind == "issue" else "PullRequestReviewComment"
        if label in kinds and node_id(label, c.id) == node:
            return c
    return None


def _gql_var(query: str, variables: dict[str, Any], name: str) -> Any:
    if name in variables:
        return variables[name]
    match = re.search(rf'\b{name}\s*:\s*(?:"([^"]*)"|(\w+))', query)
    if match is None:
        return None
    return match.group(1) if match.group(1) is not None else match.group(2)


def _graphql_mutation(ctx: Ctx, query: str, variables: dict[str, Any]) -> dict[str, Any]:
    sim = ctx.sim
    if "resolveReviewThread" in query or "unresolveReviewThread" in query:
        thread = str(_gql_var(query, variables, "threadId") or "")
        root = next(
            (
                c
                for c in sim._comments
                if c.kind == "review"
                and c.in_reply_to_id is None
                and node_id("PullRequestReviewThread", c.id) == thread
            ),
            None,
        )
        if root is None:
            return _gql_error(
                "NOT_FOUND", f"Could not resolve to a node with the global id of '{thread}'."
            )
        field = (
            "unresolveReviewThread" if "unresolveReviewThread" in query else "resolveReviewThread"
        )
        if field == "resolveReviewThread":
            sim._resolved_threads.add(root.id)
        else:
            sim._resolved_threads.discard(root.id)
        return {"data": {field: {"thread": _gql_thread(ctx, root, 1)}}}
    if "minimizeComment" in query:
        subject = str(_gql_var(query, variables, "subjectId") or "")
        classifier = str(_gql_var(query, variables, "classifier") or "")
        if classifier not in {"SPAM", "ABUSE", "OFF_TOPIC", "OUTDATED", "DUPLICATE", "RESOLVED"}:
            return _gql_error(
                "INVALID", f"Argument 'classifier' has an invalid value ({classifier})."
            )
        target = _review_comment_by_node(ctx, subject, ("IssueComment", "PullRequestReviewComment"))
        if target is None:
            return _gql_error(
                "NOT_FOUND", f"Could not resolve to a node with the global id of '{subject}'."
            )
        sim._minimized[target.id] = classifier
        return {
            "data": {
                "minimizeComment": {
                    "minimizedComment": {
                        "isMinimized": True,
                        "minimizedReason": classifier.lower(),
                    }
                }
            }
        }
    return _gql_error("INVALID", "ghsim knows resolveReviewThread and minimizeComment only")


def _gql_comment(ctx: Ctx, c: Comment) -> dict[str, Any]:
    return {
        "id": node_id("PullRequestReviewComment", c.id),
        "databaseId": c.id,
        "author": None if c.user_null else {"login": c.user.login},
        "body": c.body,
        "path": c.path,
        "line": c.line,
        "createdAt": iso(c.created_at),
        "isMinimized": c.id in ctx.sim._minimized,
    }


def _gql_thread(ctx: Ctx, root: Comment, comments_first: int) -> dict[str, Any]:
    members = [root] + [
        c for c in ctx.sim._comments if c.kind == "review" and c.in_reply_to_id == root.id
    ]
    return {
        "id": node_id("PullRequestReviewThread", root.id),
        "isResolved": root.id in ctx.sim._resolved_threads,
        "isOutdated": False,
        "path": root.path,
        "line": root.line,
        "comments": {
            "totalCount": len(members),
            "nodes": [_gql_comment(ctx, c) for c in members[:comments_first]],
        },
    }


def _gql_review_threads(
    ctx: Ctx, pr: Pull, query: str, variables: dict[str, Any]
) -> dict[str, Any] | str:
    """``reviewThreads(first:, after:)``: thread roots in creation order, cursors opaque."""
    first = _gql_var(query, variables, "first")
    after = _gql_var(query, variables, "after")
    try:
        count = int(first) if first is not None else 0
    except ValueError:
        count = 0
    if not 1 <= count <= 100:
        return (
            f"Requesting {first} records on the `reviewThreads` connection exceeds the "
            "`first` limit of 100 records."
            if count > 100
            else "You must provide a `first` or `last` value to properly paginate the "
            "`reviewThreads` connection."
        )
    roots = [
        c
        for c in ctx.sim._comments
        if c.repo is pr.repo
        and c.kind == "review"
        and c.pull_number == pr.number
        and c.in_reply_to_id is None
    ]
    start = 0
    if after not in (None, "null"):
        try:
            start = int(base64.b64decode(str(after)).decode().removeprefix("cursor:"))
        except (ValueError, UnicodeDecodeError):
            return f"`{after}` does not appear to be a valid cursor."
    page = roots[start : start + count]
    end = start + len(page)
    match = re.search(r"comments\s*\(\s*first\s*:\s*(\d+)", query)
    comments_first = int(match.group(1)) if match else 100

    def cursor(n: int) -> str:
        return base64.b64encode(f"cursor:{n}".encode()).decode()

    return {
        "totalCount": len(roots),
        "pageInfo": {
            "hasNextPage": end < len(roots),
            "endCursor": cursor(end) if page else None,
        },
        "nodes": [_gql_thread(ctx, c, comments_first) for c in page],
    }


@route("POST", "/graphql")
def graphql(ctx: Ctx) -> dict[str, Any]:
    payload = ctx.json
    if not isinstance(payload, dict) or not isinstance(payload.get("query"), str):
        raise HttpError(400, "Problems parsing JSON")
    query = payload["query"]
    variables = dict(payload.get("variables") or {})
    if query.lstrip().startswith("mutation"):
        return _graphql_mutation(ctx, query, variables)
    for key, pattern in _GQL_ARG.items():
        if key not in variables and (match := pattern.search(query)):
            variables[key] = match.group(1)
    owner, name, number = variables.get("owner"), variables.get("name"), variables.get("number")
    if owner is None or name is None or number is None:
        return {"errors": [{"message": "ghsim answers pullRequest(owner, name, number) only"}]}
    repo = ctx.sim.find_repo(str(owner), str(name))
    if repo is None:
        return {
            "data": {"repository": None},
            "errors": [
                {
                    "type": "NOT_FOUND",
                    "path": ["repository"],
                    "locations": [{"line": 1, "column": 1}],
                    "message": f"Could not resolve to a Repository with the name '{owner}/{name}'.",
                }
            ],
        }
    pr = ctx.sim._pulls[repo.key].get(int(number))
    if pr is None:
        return {
            "data": {"repository": {"pullRequest": None}},
            "errors": [
                {
                    "type": "NOT_FOUND",
                    "path": ["repository", "pullRequest"],
                    "locations": [{"line": 1, "column": 1}],
                    "message": f"Could not resolve to a PullRequest with the number of {number}.",
                }
            ],
        }
    ctx.sim._notice_pushes(repo, only=pr)
    pull = graphql_pull(ctx, pr)
    if "reviewThreads" in query:
        threads = _gql_review_threads(ctx, pr, query, variables)
        if isinstance(threads, str):
            return {"data": None, "errors": [{"type": "INVALID", "message": threads}]}
        pull["reviewThreads"] = threads
    return {"data": {"repository": {"pullRequest": pull}}}


def serve_route(ctx: Ctx) -> Any:
    """Run the route matching ``ctx.method`` and ``ctx.path`` (404 when none does)."""
    for method, pattern, handler in ROUTES:
        match = pattern.match(ctx.path)
        if match is not None and method == ctx.method:
            return handler(ctx, **match.groupdict())
    raise HttpError(404, "Not Found")
