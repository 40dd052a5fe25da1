"""wrapper.gh.pull_graph (POST /graphql) and wrapper.gh.compare against ghsim."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.config import Settings
from engine.errors import InvalidInput, LiError
from engine.github import (
    GitHubClient,
    GitHubError,
    GitHubMalformedPayload,
    GitHubNotFound,
    RequestPacer,
    repo_problem,
    validate_repo_name,
)
from engine.poll.config import parse_repo
from ghsim import GitHubSim
from wrapper.config import check_repo
from wrapper.gh import compare, get_comment, get_pull, post_issue_comment, pull_graph

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
    graph = pull_graph(client, REPO, pr.number)
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
    graph = pull_graph(client, REPO, pr.number)
    assert not graph.auto_merge_armed and graph.is_draft


def test_pull_graph_of_a_fork_pr_is_cross_repository(sim: GitHubSim, client: GitHubClient) -> None:
    pr = sim.open_pr(REPO, "evil", {"a.py": "1\n"}, from_fork="mallory/widgets")
    graph = pull_graph(client, REPO, pr.number)
    assert graph.is_cross_repository and graph.head_repository == "mallory/widgets"


def test_an_unknown_pull_is_not_found(client: GitHubClient) -> None:
    with pytest.raises(GitHubError) as caught:
        pull_graph(client, REPO, 999)
    assert caught.value.reason == "not_found"


def test_a_graphql_error_without_data_is_malformed() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"errors": [{"message": "Something went wrong"}]})

    settings = Settings(github_api_url="https://api.example", github_token="t")
    with GitHubClient(
        settings, transport=httpx.MockTransport(answer), pacer=RequestPacer(100_000)
    ) as client:
        with pytest.raises(GitHubError) as caught:
            pull_graph(client, REPO, 1)
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
            pull_graph(client, REPO, 1)
    assert caught.value.reason == "malformed_payload"


def test_pull_graph_translates_http_errors_like_rest(sim: GitHubSim, client: GitHubClient) -> None:
    pr = sim.open_pr(REPO, "feature", {"a.py": "x = 1\n"})
    sim.inject_fault("POST", r"^/graphql$", status=502)
    with pytest.raises(GitHubError) as caught:
        pull_graph(client, REPO, pr.number)
    assert caught.value.reason == "server_error"
    assert "for POST " in caught.value.message  # the method actually sent
    sim.inject_fault("POST", r"^/graphql$", truncate=True)
    with pytest.raises(GitHubError) as caught:
        pull_graph(client, REPO, pr.number)
    assert caught.value.reason == "network_error"


def test_a_bad_token_on_graphql_is_an_auth_error(sim: GitHubSim) -> None:
    token = f"bad-{uuid.uuid4().hex}"
    settings = Settings(github_api_url=sim.url, github_token=token)
    with GitHubClient(settings, pacer=RequestPacer(100_000)) as client:
        with pytest.raises(GitHubError) as caught:
            pull_graph(client, REPO, 1)
    assert caught.value.reason == "auth_error" and token not in caught.value.message


def test_compare_counts_commits_behind_and_ahead(sim: GitHubSim, client: GitHubClient) -> None:
    pr = sim.open_pr(REPO, "feature", {"a.py": "x = 1\n"})
    assert compare(client, REPO, "main", pr.head_sha).behind_by == 0
    sim.commit_to_base(REPO, {"b.py": "1\n"})
    sim.commit_to_base(REPO, {"c.py": "1\n"})
    comparison = compare(client, REPO, "main", pr.head_sha)
    assert (comparison.ahead_by, comparison.behind_by, comparison.status) == (1, 2, "diverged")


def test_compare_of_an_unknown_ref_is_not_found(client: GitHubClient) -> None:
    with pytest.raises(GitHubError) as caught:
        compare(client, REPO, "main", "no-such-branch")
    assert caught.value.reason == "not_found"


def test_compare_refuses_a_side_containing_dots(client: GitHubClient) -> None:
    with pytest.raises(Exception) as caught:
        compare(client, REPO, "main..x", "feature")
    assert getattr(caught.value, "reason", "") == "invalid_ref"


def test_a_graphql_error_names_the_pull_it_was_about() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"errors": [{"type": "FORBIDDEN", "message": "denied"}]})

    settings = Settings(github_api_url="https://api.example", github_token="tok-graph-mock")
    with GitHubClient(
        settings, transport=httpx.MockTransport(answer), pacer=RequestPacer(100_000)
    ) as client:
        with pytest.raises(GitHubMalformedPayload) as caught:
            pull_graph(client, REPO, 7)
    assert caught.value.message == "GitHub refused pull #7 of octo/widgets (GraphQL): denied"


def test_a_null_pull_request_without_errors_is_not_found() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"data": {"repository": {"pullRequest": None}}})

    settings = Settings(github_api_url="https://api.example", github_token="tok-graph-mock")
    with GitHubClient(
        settings, transport=httpx.MockTransport(answer), pacer=RequestPacer(100_000)
    ) as client:
        with pytest.raises(GitHubNotFound) as caught:
            pull_graph(client, REPO, 7)
    assert caught.value.message == "pull #7 of octo/widgets (GraphQL): no such pull request"


def test_get_pull_parses_strictly_and_names_the_pull(sim: GitHubSim, client: GitHubClient) -> None:
    pr = sim.open_pr(REPO, "feature", {"a.py": "x = 1\n"})
    assert get_pull(client, REPO, pr.number).head_sha == pr.head_sha
    sim.set_pr_user_null(REPO, pr.number)
    with pytest.raises(GitHubMalformedPayload) as caught:
        get_pull(client, REPO, pr.number)
    assert caught.value.message.startswith(f"cannot read pull #{pr.number} of {REPO}: ")
    with pytest.raises(InvalidInput) as refused:
        get_pull(client, REPO, 0)
    assert refused.value.reason == "invalid_number"


def test_get_comment_reads_issue_and_review_comments(sim: GitHubSim, client: GitHubClient) -> None:
    pr = sim.open_pr(REPO, "feature", {"a.py": "x = 1\n"})
    said = sim.comment(REPO, pr.number, "on the conversation")
    noted = sim.comment(REPO, pr.number, "on a line", kind="review", path="a.py", line=1)
    assert get_comment(client, REPO, said.id)["body"] == "on the conversation"
    assert get_comment(client, REPO, noted.id, "diff")["body"] == "on a line"
    with pytest.raises(GitHubNotFound):
        get_comment(client, REPO, noted.id)  # a review comment is not an issue comment
    with pytest.raises(InvalidInput) as refused:
        get_comment(client, REPO, said.id, "commit")
    assert refused.value.reason == "invalid_kind"


def test_post_issue_comment_creates_one_comment(sim: GitHubSim, client: GitHubClient) -> None:
    pr = sim.open_pr(REPO, "feature", {"a.py": "x = 1\n"})
    created = post_issue_comment(client, REPO, pr.number, "looks fine")
    assert sim.get_comment(REPO, created["id"]).body == "looks fine"
    assert len(sim.requests_to(r"/comments$", "POST")) == 1
    with pytest.raises(InvalidInput) as refused:
        post_issue_comment(client, REPO, pr.number, "")
    assert refused.value.reason == "invalid_body"
    with pytest.raises(GitHubNotFound):
        post_issue_comment(client, REPO, 999, "to nowhere")


REPO_TEXT = st.text(alphabet="ab9-._/ _Z", max_size=14) | st.sampled_from(
    [
        "octo/widgets",
        "-octo/w",
        "octo-/w",
        "oc--to/w",
        "octo/..",
        "octo/.",
        "a" * 39 + "/w",
        "a" * 40 + "/w",
        "octo/" + "n" * 100,
        "octo/" + "n" * 101,
        "octo/a/b",
        "octo_x/w",
    ]
)


@settings(max_examples=300, deadline=None)
@given(REPO_TEXT)
def test_the_three_repository_checks_agree(text: str) -> None:
    """kdev's config, li's poll config and the client accept exactly the same names."""
    problem = repo_problem(text)
    outcomes = []
    for check in (check_repo, parse_repo, validate_repo_name):
        try:
            check(text)
            outcomes.append(True)
        except LiError as exc:  # kdev's ConfigError, li's InvalidInput
            assert exc.reason == "invalid_repo"
            outcomes.append(False)
    assert outcomes == [problem is None] * 3, (text, outcomes)
