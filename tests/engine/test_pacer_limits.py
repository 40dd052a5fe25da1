"""The pacer paces by GitHub's documented limits (issue 19): points a request (a write 5),
the primary budget read from ``x-ratelimit-*``, and at most N requests in flight; an
explicit ``LI_GITHUB_RATE`` still wins. Against ghsim over HTTP, with injected time."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest

from engine.config import Settings
from engine.github import GitHubClient, GitHubError
from engine.github.client import github_client
from engine.github.limits import DEFAULT_POINTS_PER_MINUTE, WRITE_POINTS, points_of
from ghsim import GitHubSim
from tests.engine.test_github_client import REPO, T0, TOKEN, FakeTime


@pytest.fixture
def sim() -> Iterator[GitHubSim]:
    with GitHubSim() as sim:
        sim.set_time(T0)
        sim.add_token(TOKEN, ("li-bot", 4242))
        sim.create_repo(REPO)
        yield sim


def client_on(sim: GitHubSim, time: FakeTime, **kwargs: Any) -> GitHubClient:
    pacer = time.pacer(600, **kwargs)  # 0.1 s a point
    settings = Settings(github_api_url=sim.url, github_token=TOKEN)
    return GitHubClient(settings, pacer=pacer, clock=time.now, transport=kwargs.get("t"))


def test_a_write_costs_five_points_of_spacing(sim: GitHubSim) -> None:
    assert [points_of(m) for m in ("GET", "HEAD", "post", "PATCH", "DELETE")] == [1, 1, 5, 5, 5]
    pr = sim.open_pr(REPO, "feature", {"a.py": "1\n"})
    time = FakeTime()
    with client_on(sim, time) as client:
        client.list_pulls(REPO)
        client.post_rest(f"repos/{REPO}/issues/{pr.number}/comments", {"body": "hello"})
        client.list_pulls(REPO)
        client.list_pulls(REPO)
    # GET, then POST one spacing later, then the GET after it waits five spacings.
    assert time.slept == [pytest.approx(0.1), pytest.approx(0.1 * WRITE_POINTS), pytest.approx(0.1)]


def test_a_low_primary_budget_is_spread_until_its_reset(sim: GitHubSim) -> None:
    time = FakeTime()
    sim.set_rate_limit(TOKEN, limit=5000, remaining=101, reset_at=T0 + timedelta(seconds=600))
    with client_on(sim, time, max_wait=10.0) as client:
        client.list_pulls(REPO)  # a 200: 100 units left, under a tenth of the limit
        client.list_pulls(REPO)
    # 600 s to the reset, 100 units: one request every 6 s, not every 0.1 s.
    assert time.slept == [pytest.approx(6.0)]


def test_a_budget_wait_longer_than_max_wait_fails_fast_as_rate_limited(sim: GitHubSim) -> None:
    time = FakeTime()
    sim.set_rate_limit(TOKEN, limit=5000, remaining=11, reset_at=T0 + timedelta(seconds=600))
    with client_on(sim, time) as client:  # max_wait 5 s
        client.list_pulls(REPO)  # 10 units left for 600 s: one a minute
        asked = len(sim.requests)
        with pytest.raises(GitHubError) as caught:
            client.list_pulls(REPO)
        assert caught.value.reason == "rate_limited" and len(sim.requests) == asked
        assert caught.value.reset_at == T0 + timedelta(seconds=60)
        assert time.slept == []
        time.advance(60)  # its slot has come: the request goes (a free 304)
        assert client.list_pulls(REPO).unchanged and len(sim.requests) == asked + 1


def test_a_healthy_primary_budget_does_not_slow_the_pace(sim: GitHubSim) -> None:
    time = FakeTime()
    sim.set_rate_limit(TOKEN, limit=5000, remaining=600, reset_at=T0 + timedelta(seconds=600))
    with client_on(sim, time) as client:
        client.list_pulls(REPO)
        client.list_pulls(REPO)
    assert time.slept == [pytest.approx(0.1)]


def test_the_last_unit_spent_holds_the_token_until_the_reset_without_asking(
    sim: GitHubSim,
) -> None:
    time = FakeTime()
    reset = T0 + timedelta(minutes=10)
    sim.set_rate_limit(TOKEN, remaining=1, reset_at=reset)
    with client_on(sim, time) as client:
        client.list_pulls(REPO)  # spends the last unit: x-ratelimit-remaining 0
        asked = len(sim.requests)
        with pytest.raises(GitHubError) as caught:
            client.list_pulls(REPO)
        assert caught.value.reason == "rate_limited" and caught.value.reset_at == reset
        assert len(sim.requests) == asked  # never sent into a certain 403
        assert client.pacer.deferred_until == reset


def test_a_secondary_limit_answer_still_holds_the_token_for_retry_after(sim: GitHubSim) -> None:
    time = FakeTime()
    sim.inject_secondary_limit(retry_after=30, status=429)
    with client_on(sim, time) as client:
        with pytest.raises(GitHubError) as caught:
            client.list_pulls(REPO)
        assert caught.value.reason == "secondary_rate_limited"
        assert client.pacer.deferred_until == T0 + timedelta(seconds=30)


class CountingTransport(httpx.BaseTransport):
    """The real network, counting how many requests are in flight at once."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.lock = threading.Lock()
        self.running = 0
        self.peak = 0
        self.total = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        with self.lock:
            self.running += 1
            self.total += 1
            self.peak = max(self.peak, self.running)
        try:
            response = self.inner.handle_request(request)
            response.read()
            return response
        finally:
            with self.lock:
                self.running -= 1

    def close(self) -> None:
        self.inner.close()


def test_no_more_than_max_concurrent_requests_are_in_flight(sim: GitHubSim) -> None:
    sim.inject_fault("GET", r"/pulls$", delay=0.3, times=None)
    transport = CountingTransport()
    time = FakeTime()
    pacer = time.pacer(600_000, max_concurrent=2)
    settings = Settings(github_api_url=sim.url, github_token=TOKEN)
    with GitHubClient(settings, pacer=pacer, transport=transport) as client:
        threads = [
            threading.Thread(target=client.list_pulls, args=(REPO,), kwargs={"conditional": False})
            for _ in range(5)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert transport.peak == 2


def test_the_default_pace_is_derived_and_an_explicit_rate_wins() -> None:
    token = f"ghp_{uuid.uuid4().hex}"
    derived = github_client(Settings(github_token=token))
    assert derived.pacer.rate_per_minute == DEFAULT_POINTS_PER_MINUTE == 810
    other = f"ghp_{uuid.uuid4().hex}"
    explicit = github_client(Settings.from_env({"GITHUB_TOKEN": other, "LI_GITHUB_RATE": "120"}))
    assert explicit.pacer.rate_per_minute == 120
    derived.close()
    explicit.close()
