"""ghsim's reactions to comments answer by GitHub's documented rules (issue 29): one
reaction per user and content, 201 when made, 200 with the existing one when it is
already there, 422 for an unknown content, 404 for an unknown comment."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from ghsim import GitHubSim

REPO = "octo/widgets"
TOKEN = "ghp_ReactionsCheckToken0123456789abcd"
OTHER = "ghp_ReactionsOtherToken0123456789abc"


@pytest.fixture
def sim() -> Iterator[GitHubSim]:
    with GitHubSim() as made:
        made.add_token(TOKEN, ("kdev-bot", 4242))
        made.add_token(OTHER, ("maint", 501))
        made.create_repo(REPO)
        yield made


def _post(sim: GitHubSim, path: str, content: object, token: str = TOKEN) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"}
    return httpx.post(f"{sim.url}{path}", json={"content": content}, headers=headers)


@pytest.mark.parametrize("kind", ["issue", "review"])
def test_the_same_reaction_twice_is_one_reaction(sim: GitHubSim, kind: str) -> None:
    pr = sim.open_pr(REPO, "f", {"a.txt": "1\n"})
    asked = sim.comment(REPO, pr.number, "@claude review", ("maint", 501), kind=kind)
    where = "issues" if kind == "issue" else "pulls"
    path = f"/repos/{REPO}/{where}/comments/{asked.id}/reactions"
    first = _post(sim, path, "eyes")
    again = _post(sim, path, "eyes")
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["id"] == first.json()["id"]
    assert first.json()["user"]["login"] == "kdev-bot"
    # Another content, or another user, is another reaction.
    assert _post(sim, path, "rocket").status_code == 201
    assert _post(sim, path, "eyes", OTHER).status_code == 201
    contents = [(r.user.login, r.content) for r in sim.reactions(REPO, asked.id)]
    assert contents == [("kdev-bot", "eyes"), ("kdev-bot", "rocket"), ("maint", "eyes")]
    auth = {"Authorization": f"Bearer {TOKEN}"}
    listed = httpx.get(f"{sim.url}{path}?content=eyes", headers=auth).json()
    assert [r["user"]["login"] for r in listed] == ["kdev-bot", "maint"]


def test_what_github_refuses(sim: GitHubSim) -> None:
    pr = sim.open_pr(REPO, "f", {"a.txt": "1\n"})
    asked = sim.comment(REPO, pr.number, "hi", ("maint", 501))
    path = f"/repos/{REPO}/issues/comments/{asked.id}/reactions"
    for bad in ("smile", "EYES", "", None, 1):
        refused = _post(sim, path, bad)
        assert refused.status_code == 422, bad
        assert refused.json()["message"] == "Validation Failed"
    assert _post(sim, f"/repos/{REPO}/issues/comments/999/reactions", "eyes").status_code == 404
    # An issue comment is not a review comment, and the other way round.
    assert (
        _post(sim, f"/repos/{REPO}/pulls/comments/{asked.id}/reactions", "eyes").status_code == 404
    )
    anonymous = httpx.post(f"{sim.url}{path}", json={"content": "eyes"})
    assert anonymous.status_code == 401
    assert sim.reactions(REPO, asked.id) == []
