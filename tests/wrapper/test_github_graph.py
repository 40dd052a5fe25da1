"""GitHubClient.pull_graph (POST /graphql) and GitHubClient.compare against ghsim."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest

from engine.config import Settings
from engine.github.client import GitHubClient, GitHubError, RequestPacer
from ghsim import GitHubSim

REPO = "octo/widgets"


@pytest.fixture
def sim() -> Iterator[GitHubSim]:
    with GitHubSim() as running:
        running.add_token("tok-graph", ("graph-bot", 77))
        running.create_repo(REPO, files={"app.py": "print('hi')\n"})
        yield running


@pytest.fixture
def client(sim: GitHubSim) -> Iterator[GitHubClient]:
    settings = Settings(github_api_url=sim.url, github_token="tok-graph")
    with GitHubClient(settings, pacer=RequestPacer(100_000)) as made:
        yield made


def test_pull_graph_reads_review_decision_auto_merge_and_head(
    sim: GitHubSim, client: GitHubClient
) -> None:
    pr = sim.open_pr(REPO, "feature", {"a.py": "x = 1\n"})
    sim.set_auto_merge(REPO, pr.number, "squash")
    sim.set_review_decision(REPO, pr.number, "REVIEW_REQUIRED")
    graph = client.pull_graph(REPO, pr.number)
    assert graph.number == pr.number and graph.state == "OPEN" and not graph.is_draft
    assert graph.review_decision == "REVIEW_REQUIRED"
    assert graph.auto_merge_armed and graph.auto_merge_method == "SQUASH"
    assert graph.auto_merge_enabled_at is not None
    assert (graph.head_ref_oid, graph.head_ref_name, graph.base_ref_name) == (
        pr.head_sha,
        "feature",
        "main",
    )
    assert not graph.is_cross_repository and graph.head_repository == REPO
    assert graph.url.endswith(f"/pull/{pr.number}")
    [request] = sim.requests_to("/graphql", "POST")
    assert request.resource == "graphql"


def test_pull_graph_without_auto_merge_is_not_armed(sim: GitHubSim, client: GitHubClient) -> None:
    pr = sim.open_pr(REPO, "feature", {"a.py": "x = 1\n"}, draft=True)
    graph = client.pull_graph(REPO, pr.number)
    assert not graph.auto_merge_armed and graph.is_draft


def test_pull_graph_of_a_fork_pr_is_cross_repository(sim: GitHubSim, client: GitHubClient) -> None:
    pr = sim.open_pr(REPO, "evil", {"a.py": "1\n"}, from_fork="mallory/widgets")
    graph = client.pull_graph(REPO, pr.number)
    assert graph.is_cross_repository and graph.head_repository == "mallory/widgets"


def test_an_unknown_pull_is_not_found(client: GitHubClient) -> None:
    with pytest.raises(GitHubError) as caught:
        client.pull_graph(REPO, 999)
    assert caught.value.reason == "not_found"


def test_a_graphql_error_without_data_is_malformed() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"errors": [{"message": "Something went wrong"}]})

    settings = Settings(github_api_url="https://api.example", github_token="t")
    with GitHubClient(
        settings, transport=httpx.MockTransport(answer), pacer=RequestPacer(100_000)
    ) as client:
        with pytest.raises(GitHubError) as caught:
            client.pull_graph(REPO, 1)
    assert caught.value.reason == "malformed_payload"


def test_a_pull_request_missing_fields_is_malformed() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        data = {"repository": {"pullRequest": {"number": 1}}}
        return httpx.Response(200, json={"data": data})

    settings = Settings(github_api_url="https://api.example", github_token="t")
    with GitHubClient(
        settings, transport=httpx.MockTransport(answer), pacer=RequestPacer(100_000)
    ) as client:
        with pytest.raises(GitHubError) as caught:
            client.pull_graph(REPO, 1)
    assert caught.value.reason == "malformed_payload"


def test_pull_graph_translates_http_errors_like_rest(sim: GitHubSim, client: GitHubClient) -> None:
    pr = sim.open_pr(REPO, "feature", {"a.py": "x = 1\n"})
    sim.inject_fault("POST", r"^/graphql$", status=502)
    with pytest.raises(GitHubError) as caught:
        client.pull_graph(REPO, pr.number)
    assert caught.value.reason == "server_error"
    assert "for POST " in caught.value.message  # the method actually sent
    sim.inject_fault("POST", r"^/graphql$", truncate=True)
    with pytest.raises(GitHubError) as caught:
        client.pull_graph(REPO, pr.number)
    assert caught.value.reason == "network_error"


def test_a_bad_token_on_graphql_is_an_auth_error(sim: GitHubSim) -> None:
    token = f"bad-{uuid.uuid4().hex}"
    settings = Settings(github_api_url=sim.url, github_token=token)
    with GitHubClient(settings, pacer=RequestPacer(100_000)) as client:
        with pytest.raises(GitHubError) as caught:
            client.pull_graph(REPO, 1)
    assert caught.value.reason == "auth_error" and token not in caught.value.message


def test_compare_counts_commits_behind_and_ahead(sim: GitHubSim, client: GitHubClient) -> None:
    pr = sim.open_pr(REPO, "feature", {"a.py": "x = 1\n"})
    assert client.compare(REPO, "main", pr.head_sha).behind_by == 0
    sim.commit_to_base(REPO, {"b.py": "1\n"})
    sim.commit_to_base(REPO, {"c.py": "1\n"})
    comparison = client.compare(REPO, "main", pr.head_sha)
    assert (comparison.ahead_by, comparison.behind_by, comparison.status) == (1, 2, "diverged")


def test_compare_of_an_unknown_ref_is_not_found(client: GitHubClient) -> None:
    with pytest.raises(GitHubError) as caught:
        client.compare(REPO, "main", "no-such-branch")
    assert caught.value.reason == "not_found"


def test_compare_refuses_a_side_containing_dots(client: GitHubClient) -> None:
    with pytest.raises(Exception) as caught:
        client.compare(REPO, "main..x", "feature")
    assert getattr(caught.value, "reason", "") == "invalid_ref"
