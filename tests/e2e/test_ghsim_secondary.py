"""ghsim's secondary limits per installation (issue 30, D110): points a minute and
requests in flight counted per installation, refused with GitHub's 403 when enforced."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ghsim import GitHubSim
from tests.appkit import app_jwt, key_pair


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[GitHubSim, httpx.Client, dict[str, str]]]:
    with GitHubSim() as sim, httpx.Client(base_url=sim.url) as client:
        sim.create_repo("alpha/one")
        sim.create_repo("beta/one")
        keys = key_pair()
        app = sim.create_app("kdev-review", keys.public)
        tokens = {}
        for account in ("alpha", "beta"):
            installation = sim.install_app(app.id, account)
            jwt = app_jwt(app, keys.private, sim.now())
            url = f"/app/installations/{installation.id}/access_tokens"
            answer = client.post(url, headers=bearer(jwt))
            assert answer.status_code == 201
            tokens[f"installation:{installation.id}"] = answer.json()["token"]
        sim.reset_secondary_usage()
        yield sim, client, tokens


def test_points_are_counted_per_installation_a_write_costing_five(world) -> None:
    sim, client, tokens = world
    alpha, beta = tokens
    number = sim.open_pr("beta/one", "feature", title="t").number
    sim.reset_secondary_usage()
    for _ in range(3):
        assert (
            client.get("/repos/alpha/one/pulls", headers=bearer(tokens[alpha])).status_code == 200
        )
    url = f"/repos/beta/one/issues/{number}/comments"
    answer = client.post(url, headers=bearer(tokens[beta]), json={"body": "hello"})
    assert answer.status_code == 201
    usage = sim.secondary_usage()
    assert usage[alpha]["points_last_minute"] == 3 and usage[alpha]["requests"] == 3
    assert usage[beta]["points_last_minute"] == 5 and usage[beta]["requests"] == 1


def test_an_enforced_limit_refuses_one_installation_and_not_the_other(world) -> None:
    sim, client, tokens = world
    alpha, beta = tokens
    sim.enforce_secondary_limits(points_per_minute=2)
    codes = [client.get("/repos/alpha/one/pulls", headers=bearer(tokens[alpha])) for _ in range(3)]
    assert [c.status_code for c in codes] == [200, 200, 403]
    assert codes[2].headers["retry-after"] == "60"
    assert "secondary rate limit" in codes[2].json()["message"]
    assert client.get("/repos/beta/one/pulls", headers=bearer(tokens[beta])).status_code == 200
    assert sim.secondary_usage()[alpha]["refused"] == 1


def test_requests_in_flight_are_held_through_an_injected_delay(world) -> None:
    sim, client, tokens = world
    alpha = next(iter(tokens))
    sim.inject_fault("GET", r"^/repos/alpha/", delay=0.5, times=None)
    codes: list[int] = []

    def one() -> None:
        with httpx.Client(base_url=sim.url) as own:
            codes.append(
                own.get("/repos/alpha/one/pulls", headers=bearer(tokens[alpha])).status_code
            )

    def burst() -> None:
        threads = [threading.Thread(target=one) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    burst()
    assert codes == [200, 200, 200] and sim.secondary_usage()[alpha]["peak_in_flight"] == 3
    assert sim.secondary_usage()[alpha]["refused"] == 0
    codes.clear()
    sim.enforce_secondary_limits(concurrent=2)
    burst()
    assert sorted(codes) == [200, 200, 403]
    assert sim.secondary_usage()[alpha]["refused"] == 1
