"""ghsim as a GitHub App host (issue 30): verified JWTs, installations, installation tokens."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from ghsim import GitHubSim
from ghsim.apps import EXP_PASSED, EXP_TOO_FAR, IAT_INVALID, JWT_UNDECODABLE, SUSPENDED
from tests.appkit import SimApp, app_jwt, install_app, key_pair

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[GitHubSim, SimApp, httpx.Client]]:
    with GitHubSim() as sim, httpx.Client(base_url=sim.url) as client:
        sim.set_time(T0)
        sim.create_repo("octo/widgets")
        sim.create_repo("other/thing")
        yield sim, install_app(sim, tmp_path), client


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def mint(sim: GitHubSim, app: SimApp, client: httpx.Client, **body: object) -> httpx.Response:
    jwt = app_jwt(app.app, app.keys.private, sim.now())
    url = f"/app/installations/{app.installation.id}/access_tokens"
    return client.post(url, headers=bearer(jwt), json=body or None)


def test_a_jwt_gets_the_app_and_an_installation_token_that_acts_as_its_bot(setup) -> None:
    sim, app, client = setup
    jwt = app_jwt(app.app, app.keys.private, sim.now())
    assert client.get("/app", headers=bearer(jwt)).json()["slug"] == "kdev-review"
    listed = client.get("/app/installations", headers=bearer(jwt)).json()
    assert [i["id"] for i in listed] == [app.installation.id]
    found = client.get("/repos/octo/widgets/installation", headers=bearer(jwt))
    assert found.json()["id"] == app.installation.id
    assert client.get("/repos/other/thing/installation", headers=bearer(jwt)).status_code == 404
    answer = mint(sim, app, client)
    assert answer.status_code == 201
    token = answer.json()["token"]
    assert token.startswith("ghs_")
    assert answer.json()["expires_at"] == "2026-03-01T13:00:00Z"  # one hour
    pr = sim.open_pr("octo/widgets", "feature", {"a.txt": "a\n"})
    posted = client.post(
        f"/repos/octo/widgets/issues/{pr.number}/comments",
        headers=bearer(token),
        json={"body": "from the App"},
    )
    assert posted.status_code == 201
    assert posted.json()["user"]["login"] == "kdev-review[bot]"
    assert posted.json()["user"]["type"] == "Bot"


def test_an_installation_token_is_scoped_and_expires(setup) -> None:
    sim, app, client = setup
    token = mint(sim, app, client).json()["token"]
    assert client.get("/repos/octo/widgets/pulls", headers=bearer(token)).status_code == 200
    outside = client.get("/repos/other/thing/pulls", headers=bearer(token))
    assert outside.status_code == 404
    narrowed = mint(sim, app, client, repositories=["widgets"]).json()["token"]
    assert client.get("/repos/octo/widgets/pulls", headers=bearer(narrowed)).status_code == 200
    refused = mint(sim, app, client, repositories=["other/thing"])
    assert refused.status_code == 422
    assert "not accessible to the parent installation" in refused.json()["message"]
    sim.advance(3599)
    assert client.get("/repos/octo/widgets/pulls", headers=bearer(token)).status_code == 200
    sim.advance(1)
    expired = client.get("/repos/octo/widgets/pulls", headers=bearer(token))
    assert (expired.status_code, expired.json()["message"]) == (401, "Bad credentials")


@pytest.mark.parametrize(
    ("iat", "exp", "message"),
    [
        (-60, 540, None),
        (59, 540, None),  # within GitHub's drift allowance
        (120, 540, IAT_INVALID),  # this host's clock is ahead
        (-700, -10, EXP_PASSED),  # behind: the JWT has expired
        (-60, 660, EXP_TOO_FAR),
    ],
)
def test_jwt_times_are_checked_on_the_simulator_clock(setup, iat, exp, message) -> None:
    sim, app, client = setup
    jwt = app_jwt(app.app, app.keys.private, sim.now(), iat=iat, exp=exp)
    answer = client.get("/app", headers=bearer(jwt))
    if message is None:
        assert answer.status_code == 200
    else:
        assert (answer.status_code, answer.json()["message"]) == (401, message)


def test_a_wrong_or_revoked_key_and_a_token_on_a_jwt_route_are_refused(setup) -> None:
    sim, app, client = setup
    wrong = app_jwt(app.app, key_pair(1).private, sim.now())
    answer = client.get("/app", headers=bearer(wrong))
    assert (answer.status_code, answer.json()["message"]) == (401, JWT_UNDECODABLE)
    good = app_jwt(app.app, app.keys.private, sim.now())
    sim.add_app_key(app.app.id, key_pair(1).public)
    assert client.get("/app", headers=bearer(wrong)).status_code == 200  # a second key
    sim.revoke_app_key(app.app.id, app.keys.public)
    assert client.get("/app", headers=bearer(good)).status_code == 401
    token = mint(sim, app, client)
    assert token.status_code == 401  # the old key signs nothing any more
    sim.add_token("ghp_personal", "someone")
    answer = client.get("/app", headers=bearer("ghp_personal"))
    assert (answer.status_code, answer.json()["message"]) == (401, JWT_UNDECODABLE)


def test_a_suspended_installation_mints_nothing_and_its_tokens_stop(setup) -> None:
    sim, app, client = setup
    token = mint(sim, app, client).json()["token"]
    sim.suspend_installation(app.installation.id)
    refused = mint(sim, app, client)
    assert (refused.status_code, refused.json()["message"]) == (403, SUSPENDED)
    assert client.get("/repos/octo/widgets/pulls", headers=bearer(token)).status_code == 401
    sim.unsuspend_installation(app.installation.id)
    assert mint(sim, app, client).status_code == 201
    other = sim.install_app(sim.create_app("other-app", key_pair(1).public).id, "other")
    jwt = app_jwt(app.app, app.keys.private, sim.now())
    url = f"/app/installations/{other.id}/access_tokens"
    assert client.post(url, headers=bearer(jwt)).status_code == 404  # not this App's


def test_every_token_of_an_installation_draws_on_its_one_rate_limit(setup) -> None:
    sim, app, client = setup
    first = mint(sim, app, client).json()["token"]
    for _ in range(3):
        client.get("/repos/octo/widgets/pulls", headers=bearer(first))
    second = mint(sim, app, client).json()["token"]
    answer = client.get("/repos/octo/widgets/pulls", headers=bearer(second))
    assert answer.headers["x-ratelimit-used"] == "4"  # a new token resets nothing
    assert sim.bucket(first).remaining == sim.bucket(second).remaining


def test_graphql_sees_only_the_installations_repositories(setup) -> None:
    sim, app, client = setup
    sim.open_pr("octo/widgets", "feature", {"a.txt": "a\n"})
    sim.open_pr("other/thing", "feature", {"a.txt": "a\n"})
    token = mint(sim, app, client).json()["token"]
    query = "query { repository(owner: $owner, name: $name) { pullRequest(number: 1) { id } } }"

    def ask(owner: str, name: str) -> dict[str, object]:
        body = {"query": query, "variables": {"owner": owner, "name": name, "number": 1}}
        answer: dict[str, object] = client.post("/graphql", headers=bearer(token), json=body).json()
        return answer

    assert "errors" not in ask("octo", "widgets")
    outside = ask("other", "thing")
    assert outside["data"] == {"repository": None}
    assert outside["errors"][0]["type"] == "NOT_FOUND"  # type: ignore[index]
