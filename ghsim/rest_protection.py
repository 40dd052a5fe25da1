"""The branch protection routes: classic protection (admin only) and the rules of a branch.

Errors as GitHub answers them: an unprotected branch is 404 ``Branch not protected``, a
branch that does not exist 404 ``Branch not found``; a caller without admin rights gets
404 ``Not Found`` (a user's token) or 403 ``Resource not accessible by integration`` (a
bot's token: a GitHub App or an Actions token without the administration permission).
The rules endpoint needs only read access and answers for any branch name.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from ghsim.protection import PROTECTION_DOCS, ProtectionSim, protection_json
from ghsim.routing import Ctx, HttpError, _paginate, _repo, route

RULES_DOCS = "https://docs.github.com/rest/repos/rules#get-rules-for-a-branch"


def _sim(ctx: Ctx) -> ProtectionSim:
    sim = ctx.sim
    assert isinstance(sim, ProtectionSim)
    return sim


@route("GET", "/repos/{owner}/{repo}/branches/{branch}/protection")
def get_branch_protection(ctx: Ctx, owner: str, name: str, branch: str) -> dict[str, Any]:
    sim = _sim(ctx)
    repo = _repo(ctx, owner, name)
    branch = unquote(branch)
    if not sim.is_admin(ctx.user, repo):
        if ctx.user is not None and ctx.user.type == "Bot":
            raise HttpError(403, "Resource not accessible by integration", PROTECTION_DOCS)
        raise HttpError(404, "Not Found", PROTECTION_DOCS)
    if sim.git.rev_parse(repo.path, f"refs/heads/{branch}") is None:
        raise HttpError(404, "Branch not found", PROTECTION_DOCS)
    found = sim.protection_of(repo, branch)
    if found is None:
        raise HttpError(404, "Branch not protected", PROTECTION_DOCS)
    return protection_json(ctx.base_url, found)


@route("GET", "/repos/{owner}/{repo}/rules/branches/{branch}")
def get_branch_rules(ctx: Ctx, owner: str, name: str, branch: str) -> list[dict[str, Any]]:
    sim = _sim(ctx)
    repo = _repo(ctx, owner, name)
    return _paginate(ctx, sim.rules_for(repo, unquote(branch)))
