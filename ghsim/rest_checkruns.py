"""The Checks API's write routes (issue 30): create and update a check run, as a GitHub
App's installation token does. The rules and their sources are in :mod:`ghsim.checkruns`;
``GET .../commits/{ref}/check-runs`` is in :mod:`ghsim.rest` and shows what these make."""

from __future__ import annotations

from typing import Any

from ghsim import checkruns
from ghsim.apps import App
from ghsim.model import CheckRun, Repo
from ghsim.rest import _pulls_with_head
from ghsim.routing import Ctx, HttpError, _repo, route


def _caller(ctx: Ctx, doc: str) -> App:
    """The App whose installation token made the request; else GitHub's 403."""
    info = ctx.token
    installation = None
    if info is not None and info.installation_id is not None:
        installation = ctx.sim._installations.get(info.installation_id)
    if installation is None:
        raise HttpError(403, checkruns.NOT_AN_APP, doc)
    return installation.app


def _answer(ctx: Ctx, repo: Repo, run: CheckRun) -> dict[str, Any]:
    app = ctx.sim.app(run.app_id) if run.app_id is not None else None
    return ctx.render.check_run(run, _pulls_with_head(ctx, repo, run.head_sha), app)


@route("POST", "/repos/{owner}/{repo}/check-runs")
def create_check_run(ctx: Ctx, owner: str, name: str) -> dict[str, Any]:
    repo = _repo(ctx, owner, name)
    app = _caller(ctx, checkruns.CREATE_DOC)
    body = ctx.json
    if not isinstance(body, dict):
        raise HttpError(400, "Problems parsing JSON", checkruns.CREATE_DOC)
    for key in ("name", "head_sha"):
        if not isinstance(body.get(key), str) or not body[key]:
            raise HttpError(422, f'Invalid request.\n\n"{key}" wasn\'t supplied.',
                            checkruns.CREATE_DOC)  # fmt: skip
    with ctx.sim.lock:
        sha = ctx.sim.git.rev_parse(repo.path, body["head_sha"])
        if sha is None or not sha.startswith(body["head_sha"].lower()):
            raise HttpError(422, f"No commit found for SHA: {body['head_sha']}",
                            checkruns.CREATE_DOC)  # fmt: skip
        try:
            run = checkruns.create(repo, app, next(ctx.sim._ids["check"]), body, sha, ctx.sim.now())
        except checkruns.CheckRunRefused as exc:
            raise HttpError(exc.status, exc.message, checkruns.CREATE_DOC) from None
        ctx.sim._check_runs.append(run)
    ctx.status = 201  # the OpenAPI description's only success status
    return _answer(ctx, repo, run)


@route("PATCH", "/repos/{owner}/{repo}/check-runs/{check_run_id}")
def update_check_run(ctx: Ctx, owner: str, name: str, check_run_id: str) -> dict[str, Any]:
    repo = _repo(ctx, owner, name)
    app = _caller(ctx, checkruns.UPDATE_DOC)
    body = ctx.json
    if not isinstance(body, dict):
        raise HttpError(400, "Problems parsing JSON", checkruns.UPDATE_DOC)
    with ctx.sim.lock:
        found = [r for r in ctx.sim._check_runs if r.repo is repo and str(r.id) == check_run_id]
        if not found:
            raise HttpError(404, "Not Found", checkruns.UPDATE_DOC)
        run = found[0]
        if run.app_id != app.id:
            raise HttpError(403, "This check run does not belong to the authenticated GitHub App.",
                            checkruns.UPDATE_DOC)  # fmt: skip
        try:
            checkruns.apply(run, body, ctx.sim.now(), creating=False)
        except checkruns.CheckRunRefused as exc:
            raise HttpError(exc.status, exc.message, checkruns.UPDATE_DOC) from None
    return _answer(ctx, repo, run)
