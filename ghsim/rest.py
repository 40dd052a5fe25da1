"""The REST routes: pulls, comments, check runs, statuses, compare and the rate limit."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, unquote

from ghsim.gitops import FileChange, MergeConflict
from ghsim.model import Comment, Pull, Repo, User, node_id
from ghsim.payloads import DOCS
from ghsim.routing import (
    Ctx,
    HttpError,
    _base_sha,
    _comment_json,
    _direction,
    _paginate,
    _pull,
    _pull_json,
    _repo,
    _since,
    route,
)

# == pulls ===================================================================================


@route("GET", "/repos/{owner}/{repo}/pulls")
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


@route("GET", "/repos/{owner}/{repo}/pulls/{pull_number}")
def get_pull(ctx: Ctx, owner: str, name: str, number: str) -> dict[str, Any]:
    repo = _repo(ctx, owner, name)
    pr = _pull(ctx, repo, number)
    ctx.sim._notice_pushes(repo, only=pr)
    return _pull_json(ctx, pr, full=True)


@route("GET", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews")
def list_reviews(ctx: Ctx, owner: str, name: str, number: str) -> list[dict[str, Any]]:
    repo = _repo(ctx, owner, name)
    pr = _pull(ctx, repo, number)
    reviews = [
        r
        for r in ctx.sim._reviews
        if r.repo is repo
        and r.pull_number == pr.number
        and (r.state != "PENDING" or (ctx.user is not None and ctx.user.id == r.user.id))
    ]
    return [
        ctx.render.review(r, ctx.sim.association(r.user, repo)) for r in _paginate(ctx, reviews)
    ]


@route("PUT", "/repos/{owner}/{repo}/pulls/{pull_number}/update-branch")
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


@route("GET", "/repos/{owner}/{repo}/issues/comments")
def issue_comment_feed(ctx: Ctx, owner: str, name: str) -> list[dict[str, Any]]:
    repo = _repo(ctx, owner, name)
    return _comment_feed(
        ctx, [c for c in ctx.sim._comments if c.repo is repo and c.kind == "issue"]
    )


@route("GET", "/repos/{owner}/{repo}/pulls/comments")
def review_comment_feed(ctx: Ctx, owner: str, name: str) -> list[dict[str, Any]]:
    repo = _repo(ctx, owner, name)
    return _comment_feed(
        ctx, [c for c in ctx.sim._comments if c.repo is repo and c.kind == "review"]
    )


@route("GET", "/repos/{owner}/{repo}/issues/{issue_number}/comments")
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


@route("GET", "/repos/{owner}/{repo}/pulls/{pull_number}/comments")
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


@route("POST", "/repos/{owner}/{repo}/issues/{issue_number}/comments")
def create_issue_comment(ctx: Ctx, owner: str, name: str, number: str) -> dict[str, Any]:
    repo = _repo(ctx, owner, name)
    pr = _pull(ctx, repo, number)
    user = _require_user(ctx)
    created = ctx.sim.comment(repo.full_name, pr.number, _body_text(ctx), author=user)
    ctx.status = 201
    payload = _comment_json(ctx, created)
    ctx.headers["location"] = payload["url"]
    return payload


def _diff_lines(ctx: Ctx, pr: Pull, path: str, side: str) -> set[int]:
    """The lines of ``path`` the pull's diff shows on ``side`` (empty: not changed)."""
    git, base = ctx.sim.git, _base_sha(ctx, pr)
    merge_base = git.merge_base(pr.repo.path, base, pr.head_sha) or base
    return git.hunk_lines(pr.repo.path, merge_base, pr.head_sha, path, side)


@route("POST", "/repos/{owner}/{repo}/pulls/{pull_number}/comments")
def create_review_comment(ctx: Ctx, owner: str, name: str, number: str) -> dict[str, Any]:
    """A new review thread on ``path``/``line`` of the PR's head (``side`` RIGHT or LEFT).

    As on GitHub: ``commit_id``, ``path`` and ``line`` are required; a ``commit_id``
    other than the head, or a line the pull's diff does not show on that side, is 422."""
    repo = _repo(ctx, owner, name)
    pr = _pull(ctx, repo, number)
    user = _require_user(ctx)
    body = _body_text(ctx)
    data = ctx.json if isinstance(ctx.json, dict) else {}
    path, line, side = data.get("path"), data.get("line"), data.get("side", "RIGHT")
    valid = (
        data.get("commit_id") == pr.head_sha
        and isinstance(path, str)
        and isinstance(line, int)
        and not isinstance(line, bool)
        and side in ("RIGHT", "LEFT")
        and line in _diff_lines(ctx, pr, path, side)
    )
    if not valid:
        raise HttpError(422, "Validation Failed")
    created = ctx.sim.comment(
        repo.full_name, pr.number, body, author=user, kind="review", path=path, line=line
    )
    ctx.status = 201
    payload = _comment_json(ctx, created)
    ctx.headers["location"] = payload["url"]
    return payload


@route("POST", "/repos/{owner}/{repo}/pulls/{pull_number}/comments/{comment_id}/replies")
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
    if target.outdated:  # a reply joins its thread where it is: outdated
        created.outdated, created.original_line = True, target.original_line
        created.line = created.position = None
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


@route("PATCH", "/repos/{owner}/{repo}/issues/comments/{comment_id}")
def edit_issue_comment(ctx: Ctx, owner: str, name: str, comment_id: str) -> dict[str, Any]:
    return _edit_comment(ctx, owner, name, comment_id, "issue")


@route("PATCH", "/repos/{owner}/{repo}/pulls/comments/{comment_id}")
def edit_review_comment(ctx: Ctx, owner: str, name: str, comment_id: str) -> dict[str, Any]:
    return _edit_comment(ctx, owner, name, comment_id, "review")


def _one_comment(ctx: Ctx, owner: str, name: str, comment_id: str, kind: str) -> dict[str, Any]:
    repo = _repo(ctx, owner, name)
    found = [c for c in ctx.sim._comments if c.repo is repo and c.id == int(comment_id)]
    if not found or found[0].kind != kind:
        raise HttpError(404, "Not Found")
    return _comment_json(ctx, found[0])


@route("GET", "/repos/{owner}/{repo}/issues/comments/{comment_id}")
def get_issue_comment(ctx: Ctx, owner: str, name: str, comment_id: str) -> dict[str, Any]:
    return _one_comment(ctx, owner, name, comment_id, "issue")


@route("GET", "/repos/{owner}/{repo}/pulls/comments/{comment_id}")
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


@route("GET", "/repos/{owner}/{repo}/commits/{ref}/check-runs")
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
    if "app_id" in ctx.query:
        runs = [r for r in runs if str(r.app_id) == ctx.query["app_id"]]
    runs.sort(key=lambda r: r.id, reverse=True)
    pulls = _pulls_with_head(ctx, repo, sha)
    page = _paginate(ctx, runs)
    apps = {r.app_id: ctx.sim.app(r.app_id) for r in page if r.app_id is not None}
    shown = [ctx.render.check_run(r, pulls, apps.get(r.app_id)) for r in page]
    return {"total_count": len(runs), "check_runs": shown}


@route("GET", "/repos/{owner}/{repo}/commits/{ref}/status")
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
    html_repo = ctx.render.repo_html(repo)
    # author/committer are the GitHub accounts of the commit's emails: ghsim's commit
    # identities belong to no account, and GitHub answers null for those.
    return {
        "sha": sha,
        "node_id": node_id("Commit", int(sha[:7], 16)),
        "commit": {
            "author": {"name": entry["an"], "email": entry["ae"], "date": entry["ad"]},
            "committer": {"name": entry["cn"], "email": entry["ce"], "date": entry["cd"]},
            "message": entry["message"].rstrip("\n"),
            "tree": {"sha": entry["tree"], "url": f"{api_repo}/git/trees/{entry['tree']}"},
            "url": f"{api_repo}/git/commits/{sha}",
            "comment_count": 0,
        },
        "url": f"{api_repo}/commits/{sha}",
        "html_url": f"{html_repo}/commit/{sha}",
        "comments_url": f"{api_repo}/commits/{sha}/comments",
        "author": None,
        "committer": None,
        "parents": [
            {"sha": p, "url": f"{api_repo}/commits/{p}", "html_url": f"{html_repo}/commit/{p}"}
            for p in entry["parents"].split()
        ],
    }


def _file_json(ctx: Ctx, repo: Repo, f: FileChange, base_sha: str, head_sha: str) -> dict[str, Any]:
    """One ``files`` entry of a comparison (a removed file is shown at the base)."""
    at = base_sha if f.status == "removed" else head_sha
    path = quote(f.filename)
    html_repo = ctx.render.repo_html(repo)
    return {
        "sha": f.sha,
        "filename": f.filename,
        "status": f.status,
        "additions": f.additions,
        "deletions": f.deletions,
        "changes": f.changes,
        "blob_url": f"{html_repo}/blob/{at}/{path}",
        "raw_url": f"{html_repo}/raw/{at}/{path}",
        "contents_url": f"{ctx.render.repo_api(repo)}/contents/{path}?ref={at}",
    }


@route("GET", "/repos/{owner}/{repo}/compare/{basehead}")
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
    if merge_base is None:
        raise HttpError(404, f"No common ancestor between {base_spec} and {head_spec}.")
    merge_base_json = _commit_json(ctx, repo, git.log(repo.path, merge_base, limit=1)[0])
    files = git.diff_files(repo.path, merge_base, head_sha)
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
        "files": [_file_json(ctx, repo, f, base_sha, head_sha) for f in files],
    }


# == rate limit and graphql ==================================================================


@route("GET", "/rate_limit")
def rate_limit(ctx: Ctx) -> dict[str, Any]:
    sim = ctx.sim
    buckets = {name: sim._bucket(ctx.token, name) for name in ("core", "graphql")}
    return ctx.render.rate_limit(buckets, int(sim.now().timestamp()))
