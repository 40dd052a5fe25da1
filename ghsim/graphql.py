"""``POST /graphql``: the pull-request fields, review threads and two mutations kdev uses.

There is no GraphQL parser: fields are chosen by keyword (see ``ghsim/README.md``). GitHub
publishes no OpenAPI description for GraphQL, so this is the one route the OpenAPI check
(``tests/e2e/test_ghsim_openapi.py``) leaves out.
"""

from __future__ import annotations

import base64
import re
from typing import Any

from ghsim.model import Comment, Pull, iso, node_id
from ghsim.routing import Ctx, HttpError, _base_sha, route


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
    return _gql_error("INVALID", "ghsim knows (un)resolveReviewThread and minimizeComment only")


def _gql_comment(ctx: Ctx, c: Comment) -> dict[str, Any]:
    return {
        "id": node_id("PullRequestReviewComment", c.id),
        "databaseId": c.id,
        "author": None if c.user_null else {"login": c.user.login},
        "body": c.body,
        "path": c.path,
        "line": c.line,
        "originalLine": c.original_line if c.original_line is not None else c.line,
        "outdated": c.outdated,
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
        "isOutdated": root.outdated,  # a push changed its line (ghsim/outdating.py)
        "path": root.path,
        "line": root.line,
        "originalLine": root.original_line if root.original_line is not None else root.line,
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
    if ctx.token is not None and not ctx.sim.token_reaches(ctx.token, [str(owner), str(name)]):
        repo = None  # an installation token sees only its installation's (ghsim/apps.py)
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
