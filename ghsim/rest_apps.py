"""The REST routes of a GitHub App (issue 30): the App itself, its installations, the
installation tokens, and which installation covers a repository.

Each needs the App's JWT (``Authorization: Bearer <JWT>``, verified by
:meth:`ghsim.apps.AppSim.verify_jwt` in the server before the route runs); any other
credential is GitHub's 401 "A JSON web token could not be decoded". The rules and their
sources are in :mod:`ghsim.apps`.
"""

from __future__ import annotations

from typing import Any

from ghsim.apps import JWT_UNDECODABLE, App, AppAuthFailed, app_json, installation_json
from ghsim.model import iso
from ghsim.payloads import DOCS
from ghsim.routing import Ctx, HttpError, _paginate, _repo, route

TOKEN_DOC = f"{DOCS}/apps/apps#create-an-installation-access-token-for-an-app"
INSTALLATION_DOC = f"{DOCS}/apps/apps#get-an-installation-for-the-authenticated-app"
REPO_INSTALLATION_DOC = f"{DOCS}/apps/apps#get-a-repository-installation-for-the-authenticated-app"


def _app(ctx: Ctx) -> App:
    if ctx.app is None:
        raise HttpError(401, JWT_UNDECODABLE)
    return ctx.app


@route("GET", "/app")
def get_app(ctx: Ctx) -> dict[str, Any]:
    return app_json(ctx.render, _app(ctx))


@route("GET", "/app/installations")
def list_installations(ctx: Ctx) -> list[dict[str, Any]]:
    found = ctx.sim.installations_of(_app(ctx))
    return [installation_json(ctx.render, i) for i in _paginate(ctx, found)]


@route("POST", "/app/installations/{installation_id}/access_tokens")
def create_access_token(ctx: Ctx, installation_id: str) -> dict[str, Any]:
    app = _app(ctx)
    inst = ctx.sim._installations.get(int(installation_id)) if installation_id.isdigit() else None
    if inst is None or inst.app is not app:
        raise HttpError(404, "Not Found", TOKEN_DOC)
    body = ctx.json if isinstance(ctx.json, dict) else {}
    names = body.get("repositories")
    if names is not None and not (
        isinstance(names, list) and all(isinstance(n, str) for n in names) and len(names) <= 500
    ):
        raise HttpError(422, "Invalid request.", TOKEN_DOC)
    try:
        token, info = ctx.sim.issue_installation_token(inst, names)
    except AppAuthFailed as exc:
        raise HttpError(exc.status, exc.message, TOKEN_DOC) from None
    ctx.status = 201  # the OpenAPI description's only success status
    return {
        "token": token,
        "expires_at": iso(info.expires_at),
        "permissions": dict(inst.permissions),
        "repository_selection": "all" if info.repo_keys is None else "selected",
    }


@route("GET", "/repos/{owner}/{repo}/installation")
def get_repo_installation(ctx: Ctx, owner: str, name: str) -> dict[str, Any]:
    app = _app(ctx)
    repo = _repo(ctx, owner, name)
    for inst in ctx.sim.installations_of(app):
        if ctx.sim.reaches(inst, repo.full_name):
            return installation_json(ctx.render, inst)
    raise HttpError(404, "Not Found", REPO_INSTALLATION_DOC)
