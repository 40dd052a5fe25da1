"""The simulated GitHub behaves like the real API: shapes, ETags, limits, faults, git."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from ghsim import GhsimError, GitHubSim, MergeConflict
from ghsim.payload_templates import TEMPLATE_DIR

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "github"
REPO = "octo/widgets"
TOKEN = "ghp_SimulatedSecretToken0123456789"
T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)

# Fields the schema marks nullable: ghsim may serve null where the fixture shows a value.
NULLABLE = frozenset(
    """user repo milestone assignee active_lock_reason closed_at merged_at merge_commit_sha
    auto_merge merged_by mergeable rebaseable body language mirror_url homepage license
    description template_repository pull_request_review_id start_line original_start_line
    start_side position original_position line original_line conclusion completed_at
    details_url title summary text minimized target_url""".split()
)
# Keys GitHub omits when they do not apply (a review comment that is not a reply).
OPTIONAL = frozenset({"in_reply_to_id"})


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def shape_differences(actual: Any, expected: Any, path: str = "$") -> list[str]:
    """Where ``actual`` differs from ``expected`` in keys or JSON types (lists: 1st item)."""
    key = path.rsplit(".", 1)[-1]
    if expected is None:
        return []  # the fixture shows null: any type is plausible
    if actual is None:
        return [] if key in NULLABLE else [f"{path}: null, fixture has {json_type(expected)}"]
    if json_type(actual) != json_type(expected):
        return [f"{path}: {json_type(actual)}, fixture has {json_type(expected)}"]
    problems: list[str] = []
    if isinstance(expected, dict):
        missing = set(expected) - set(actual) - OPTIONAL
        extra = set(actual) - set(expected)
        problems += [f"{path}.{k}: missing" for k in sorted(missing)]
        problems += [f"{path}.{k}: not in the fixture" for k in sorted(extra)]
        for k in expected:
            if k in actual:
                problems += shape_differences(actual[k], expected[k], f"{path}.{k}")
    elif isinstance(expected, list) and expected and actual:
        problems += shape_differences(actual[0], expected[0], f"{path}[0]")
    return problems


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def git(*args: str, cwd: Path | None = None, home: Path) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({"HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0"})
    argv = ["git", "-c", "user.name=Tester", "-c", "user.email=tester@example.invalid", *args]
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=True)
    return proc.stdout.strip()


@pytest.fixture
def sim() -> Iterator[GitHubSim]:
    with GitHubSim() as server:
        server.set_time(T0)
        server.add_token(TOKEN, ("reviewer-bot", 4242))
        server.create_repo(REPO)
        yield server


@pytest.fixture
def client(sim: GitHubSim) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=sim.url, headers={"Authorization": f"Bearer {TOKEN}"}) as c:
        yield c


# == shapes =================================================================================


@pytest.fixture(scope="module")
def busy_sim() -> Iterator[GitHubSim]:
    """One of everything, for the shape checks."""
    with GitHubSim() as server:
        server.add_token(TOKEN)
        server.create_repo(REPO)
        pr = server.open_pr(REPO, "feature", {"a.txt": "one\n"}, body="Please pull")
        server.open_pr(REPO, "fork-work", {"b.txt": "two\n"}, from_fork="forker/widgets")
        server.label(REPO, pr.number, "bug")
        server.comment(REPO, pr.number, "Me too")
        root = server.comment(REPO, pr.number, "Nit", kind="review", path="a.txt", line=1)
        server.comment(REPO, pr.number, "Fixed", kind="review", in_reply_to=root.id)
        server.review(REPO, pr.number, "APPROVED", author=("approver", 77), body="LGTM")
        server.set_check_run(REPO, pr.head_sha, "tests", "completed", "success")
        server.set_status(REPO, pr.head_sha, "ci/jenkins", "success", "ok", "https://ci/1")
        yield server


SHAPES = {
    "/repos/octo/widgets/pulls?state=all": "pulls-list.json",
    "/repos/octo/widgets/pulls/1": "pull.json",
    "/repos/octo/widgets/pulls/2": "pull.json",  # a fork PR
    "/repos/octo/widgets/issues/comments": "issue-comments-list.json",
    "/repos/octo/widgets/pulls/comments?direction=desc": "review-comments-list.json",
    "/repos/octo/widgets/pulls/1/reviews?per_page=1&page=2": "pull-reviews-list.json",
    "/repos/octo/widgets/commits/feature/check-runs": "check-runs-list.json",
    "/repos/octo/widgets/commits/feature/status": "combined-status.json",
    "/rate_limit": "rate-limit.json",
}


@pytest.mark.parametrize(("path", "fixture_name"), SHAPES.items(), ids=list(SHAPES))
def test_responses_have_the_keys_and_json_types_of_the_github_fixtures(
    busy_sim: GitHubSim, path: str, fixture_name: str
) -> None:
    with httpx.Client(base_url=busy_sim.url, headers={"Authorization": f"token {TOKEN}"}) as c:
        response = c.get(path)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body, "an empty answer would make the shape check vacuous"
    assert shape_differences(body, fixture(fixture_name)) == []


def test_a_reply_review_comment_carries_in_reply_to_id_and_a_thread_root_omits_it(
    busy_sim: GitHubSim,
) -> None:
    with httpx.Client(base_url=busy_sim.url, headers={"Authorization": f"token {TOKEN}"}) as c:
        root, reply = c.get("/repos/octo/widgets/pulls/comments").json()
    assert "in_reply_to_id" not in root
    assert reply["in_reply_to_id"] == root["id"]
    assert shape_differences(reply, fixture("review-comments-list.json")[0]) == []


def test_the_shape_check_itself_catches_missing_keys_and_wrong_types() -> None:
    expected = {"a": 1, "b": {"c": "x"}, "user": {"login": "x"}, "d": [{"e": True}]}
    assert shape_differences({"a": 1, "b": {"c": "y"}, "user": None, "d": []}, expected) == []
    problems = shape_differences(
        {"a": "1", "b": {}, "user": {"login": "x"}, "d": [{"e": 1}]}, expected
    )
    assert sorted(problems) == [
        "$.a: string, fixture has integer",
        "$.b.c: missing",
        "$.d[0].e: integer, fixture has boolean",
    ]


def test_the_simulator_templates_are_byte_identical_to_the_test_fixtures() -> None:
    templates = sorted(path.name for path in TEMPLATE_DIR.glob("*.json"))
    assert templates == sorted(path.name for path in FIXTURES.glob("*.json"))
    for name in templates:
        assert (TEMPLATE_DIR / name).read_bytes() == (FIXTURES / name).read_bytes()


def test_an_armed_auto_merge_has_the_schema_keys(sim: GitHubSim, client: httpx.Client) -> None:
    pr = sim.open_pr(REPO, "feature")
    sim.set_auto_merge(REPO, pr.number, "rebase", by=("merger", 9))
    auto = client.get(f"/repos/{REPO}/pulls/{pr.number}").json()["auto_merge"]
    assert set(auto) == {"enabled_by", "merge_method", "commit_title", "commit_message"}
    assert auto["merge_method"] == "rebase"
    assert auto["enabled_by"]["login"] == "merger"


# == conditional requests and rate limits ====================================================


def test_a_matching_if_none_match_gets_an_empty_304_that_costs_nothing(
    sim: GitHubSim, client: httpx.Client
) -> None:
    sim.open_pr(REPO, "feature")
    first = client.get(f"/repos/{REPO}/pulls")
    etag = first.headers["etag"]
    assert etag.startswith('"') and etag.endswith('"') and len(etag) == 66
    remaining = int(first.headers["x-ratelimit-remaining"])

    again = client.get(f"/repos/{REPO}/pulls", headers={"If-None-Match": etag})
    assert again.status_code == 304
    assert again.content == b""
    assert again.headers["etag"] == etag
    assert int(again.headers["x-ratelimit-remaining"]) == remaining
    assert sim.bucket(TOKEN).remaining == remaining

    sim.advance(5)
    sim.push(REPO, 1, {"more.txt": "x\n"})
    changed = client.get(f"/repos/{REPO}/pulls", headers={"If-None-Match": etag})
    assert changed.status_code == 200
    assert changed.headers["etag"] != etag
    assert int(changed.headers["x-ratelimit-remaining"]) == remaining - 1


def test_each_counted_request_decrements_remaining_until_403_and_reset_refills(
    sim: GitHubSim, client: httpx.Client
) -> None:
    reset_at = T0 + timedelta(minutes=10)
    sim.set_rate_limit(TOKEN, limit=3, remaining=2, reset_at=reset_at)
    seen = [client.get(f"/repos/{REPO}/pulls") for _ in range(3)]
    assert [r.status_code for r in seen] == [200, 200, 403]
    assert [r.headers["x-ratelimit-remaining"] for r in seen] == ["1", "0", "0"]
    assert [r.headers["x-ratelimit-used"] for r in seen] == ["2", "3", "3"]
    assert {r.headers["x-ratelimit-limit"] for r in seen} == {"3"}
    assert {r.headers["x-ratelimit-reset"] for r in seen} == {str(int(reset_at.timestamp()))}
    assert {r.headers["x-ratelimit-resource"] for r in seen} == {"core"}
    assert "API rate limit exceeded" in seen[2].json()["message"]

    sim.set_time(reset_at)
    refilled = client.get(f"/repos/{REPO}/pulls")
    assert refilled.status_code == 200
    assert refilled.headers["x-ratelimit-remaining"] == "2"
    assert int(refilled.headers["x-ratelimit-reset"]) == int(reset_at.timestamp()) + 3600


def test_graphql_counts_against_its_own_resource_and_rate_limit_counts_nothing(
    sim: GitHubSim, client: httpx.Client
) -> None:
    sim.open_pr(REPO, "feature")
    query = {"query": "query{}", "variables": {"owner": "octo", "name": "widgets", "number": 1}}
    response = client.post("/graphql", json=query)
    assert response.headers["x-ratelimit-resource"] == "graphql"
    assert response.headers["x-ratelimit-used"] == "1"
    assert sim.bucket(TOKEN, "graphql").used == 1
    assert sim.bucket(TOKEN, "core").used == 0

    limits = client.get("/rate_limit")
    assert limits.status_code == 200
    assert limits.json()["resources"]["graphql"]["used"] == 1
    assert limits.json()["rate"]["used"] == 0
    client.get("/rate_limit")
    assert sim.bucket(TOKEN, "core").used == 0


def test_an_injected_secondary_limit_answers_403_with_retry_after_then_recovers(
    sim: GitHubSim, client: httpx.Client
) -> None:
    sim.inject_secondary_limit(retry_after=42, path_regex=r"/pulls$")
    blocked = client.get(f"/repos/{REPO}/pulls")
    assert blocked.status_code == 403
    assert blocked.headers["retry-after"] == "42"
    assert "secondary rate limit" in blocked.json()["message"]
    assert blocked.headers["x-ratelimit-remaining"] != "0"
    assert client.get(f"/repos/{REPO}/pulls").status_code == 200

    sim.inject_secondary_limit(retry_after=None, status=429)
    no_header = client.get("/rate_limit")
    assert no_header.status_code == 429
    assert "retry-after" not in no_header.headers


def test_a_bad_token_gets_401_and_the_token_is_never_recorded_or_stored(
    sim: GitHubSim, client: httpx.Client, capsys: pytest.CaptureFixture[str]
) -> None:
    wrong = httpx.get(f"{sim.url}/repos/{REPO}/pulls", headers={"Authorization": "token nope"})
    assert wrong.status_code == 401
    assert wrong.json()["message"] == "Bad credentials"
    assert "documentation_url" in wrong.json()
    sim.open_pr(REPO, "feature")
    assert client.get(f"/repos/{REPO}/pulls/1").status_code == 200
    assert client.post(f"/repos/{REPO}/issues/1/comments", json={"body": "hi"}).status_code == 201

    records = sim.requests
    assert [r.status for r in records] == [401, 200, 201]
    assert records[1].user == "reviewer-bot" and records[0].user is None
    assert all("authorization" not in r.headers for r in records)
    assert TOKEN not in repr(records) + repr(sim)
    for path in sim.state_dir.rglob("*"):
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes(), path
    captured = capsys.readouterr()
    assert TOKEN not in captured.out + captured.err
    assert [r.path for r in sim.requests_to(r"/comments$", method="POST")] == [
        f"/repos/{REPO}/issues/1/comments"
    ]


def test_requests_without_a_token_are_refused_unless_anonymous_access_is_on(
    sim: GitHubSim,
) -> None:
    refused = httpx.get(f"{sim.url}/rate_limit")
    assert refused.status_code == 401
    sim.anonymous = True
    allowed = httpx.get(f"{sim.url}/repos/{REPO}/pulls")
    assert allowed.status_code == 200
    assert allowed.headers["x-ratelimit-limit"] == "60"
    assert allowed.headers["x-ratelimit-remaining"] == "59"
    still_bad = httpx.get(f"{sim.url}/rate_limit", headers={"Authorization": "Bearer nope"})
    assert still_bad.status_code == 401


# == pagination and filters =================================================================


def test_pulls_paginate_with_link_headers_built_from_the_request_url(
    sim: GitHubSim, client: httpx.Client
) -> None:
    for i in range(5):
        sim.open_pr(REPO, f"topic-{i}")
        sim.advance(1)
    first = client.get(f"/repos/{REPO}/pulls", params={"state": "open", "per_page": 2})
    links = first.links
    assert set(links) == {"next", "last"}
    assert links["next"]["url"].startswith(f"{sim.url}/repos/{REPO}/pulls?")
    assert "state=open" in links["next"]["url"] and "per_page=2" in links["next"]["url"]
    assert links["last"]["url"].endswith("page=3")

    middle = client.get(links["next"]["url"])
    assert set(middle.links) == {"prev", "next", "last", "first"}
    assert middle.links["prev"]["url"].endswith("page=1")
    last = client.get(middle.links["next"]["url"])
    assert set(last.links) == {"prev", "first"}

    numbers = [pr["number"] for page in (first, middle, last) for pr in page.json()]
    assert numbers == [5, 4, 3, 2, 1]  # sort=created, direction=desc by default
    single = client.get(f"/repos/{REPO}/pulls", params={"per_page": 100})
    assert "link" not in single.headers
    assert len(single.json()) == 5


def test_pulls_sort_by_updated_and_filter_by_state_and_base(
    sim: GitHubSim, client: httpx.Client
) -> None:
    for name in ("a", "b", "c"):
        sim.open_pr(REPO, name)
        sim.advance(10)
    sim.comment(REPO, 1, "bump")
    sim.advance(10)
    sim.close(REPO, 2)
    sim.commit_to_base(REPO, {"x": "1"}, branch="release")  # creates the branch
    sim.open_pr(REPO, "d", base="release")

    def numbers(**params: Any) -> list[int]:
        return [pr["number"] for pr in client.get(f"/repos/{REPO}/pulls", params=params).json()]

    assert numbers(sort="updated", direction="desc") == [4, 1, 3]
    assert numbers(sort="updated") == [3, 1, 4]  # direction defaults to asc for updated
    assert numbers(state="closed") == [2]
    assert numbers(state="all", direction="asc") == [1, 2, 3, 4]
    assert numbers(base="release") == [4]


def test_the_since_filter_is_inclusive_on_updated_at_in_both_comment_feeds(
    sim: GitHubSim, client: httpx.Client
) -> None:
    sim.open_pr(REPO, "feature")
    early = sim.comment(REPO, 1, "early")
    sim.comment(REPO, 1, "early review", kind="review")
    sim.advance(30)
    late = sim.comment(REPO, 1, "late")
    sim.comment(REPO, 1, "late review", kind="review")
    stamp = (T0 + timedelta(seconds=30)).strftime("%Y-%m-%dT%H:%M:%SZ")

    for feed, expected in (("issues/comments", ["late"]), ("pulls/comments", ["late review"])):
        bodies = [c["body"] for c in client.get(f"/repos/{REPO}/{feed}?since={stamp}").json()]
        assert bodies == expected
    everything = client.get(f"/repos/{REPO}/issues/comments", params={"since": T0.isoformat()})
    assert [c["body"] for c in everything.json()] == ["early", "late"]

    sim.advance(30)
    sim.edit_comment(REPO, early.id, "early, edited")
    updated = client.get(
        f"/repos/{REPO}/issues/comments",
        params={"since": stamp, "sort": "updated", "direction": "desc"},
    )
    assert [c["id"] for c in updated.json()] == [early.id, late.id]
    assert updated.json()[0]["created_at"] == "2024-05-01T12:00:00Z"
    assert updated.json()[0]["updated_at"] == "2024-05-01T12:01:00Z"
    paged = client.get(f"/repos/{REPO}/issues/comments", params={"per_page": 1})
    assert paged.links["next"]["url"].endswith("page=2")


# == faults ==================================================================================


def test_a_status_fault_answers_the_next_matching_request_only(
    sim: GitHubSim, client: httpx.Client
) -> None:
    fault = sim.inject_fault("GET", r"/pulls$", status=502)
    assert client.get("/rate_limit").status_code == 200  # another route is untouched
    broken = client.get(f"/repos/{REPO}/pulls")
    assert broken.status_code == 502
    assert broken.json()["message"] == "Bad Gateway"
    assert "x-ratelimit-remaining" in broken.headers
    assert client.get(f"/repos/{REPO}/pulls").status_code == 200
    assert fault.hits == 1
    assert [r.status for r in sim.requests_to(r"/pulls$")] == [502, 200]


def test_a_fault_without_a_count_lasts_until_cleared_and_matches_its_method(
    sim: GitHubSim, client: httpx.Client
) -> None:
    sim.open_pr(REPO, "feature")
    sim.inject_fault("POST", r"/issues/\d+/comments$", status=500, times=None)
    assert client.get(f"/repos/{REPO}/issues/1/comments").status_code == 200
    for _ in range(3):
        assert (
            client.post(f"/repos/{REPO}/issues/1/comments", json={"body": "x"}).status_code == 500
        )
    sim.clear_faults()
    assert client.post(f"/repos/{REPO}/issues/1/comments", json={"body": "x"}).status_code == 201


def test_a_delay_fault_holds_the_response_past_a_short_client_timeout(
    sim: GitHubSim, client: httpx.Client
) -> None:
    sim.inject_fault("GET", r"/pulls$", delay=0.6)
    with pytest.raises(httpx.ReadTimeout):
        client.get(f"/repos/{REPO}/pulls", timeout=0.1)
    assert client.get(f"/repos/{REPO}/pulls").status_code == 200


def test_a_truncated_response_breaks_off_mid_body(sim: GitHubSim, client: httpx.Client) -> None:
    sim.open_pr(REPO, "feature")
    sim.inject_fault("GET", r"/pulls/1$", truncate=True)
    with pytest.raises(httpx.RemoteProtocolError):
        client.get(f"/repos/{REPO}/pulls/1")
    assert client.get(f"/repos/{REPO}/pulls/1").status_code == 200


def test_a_malformed_response_is_a_complete_body_that_is_not_json(
    sim: GitHubSim, client: httpx.Client
) -> None:
    sim.open_pr(REPO, "feature")
    sim.inject_fault("*", r"/pulls/1$", malformed=True)
    response = client.get(f"/repos/{REPO}/pulls/1")
    assert response.status_code == 200
    with pytest.raises(json.JSONDecodeError):
        response.json()


def test_payload_faults_serve_a_ghost_author_and_a_deleted_fork(
    sim: GitHubSim, client: httpx.Client
) -> None:
    sim.open_pr(REPO, "fork-work", from_fork="forker/widgets")
    sim.set_pr_user_null(REPO, 1)
    sim.set_head_repo_null(REPO, 1)
    pr = client.get(f"/repos/{REPO}/pulls/1").json()
    listed = client.get(f"/repos/{REPO}/pulls").json()[0]
    assert pr["user"] is None and listed["user"] is None
    assert pr["head"]["repo"] is None and listed["head"]["repo"] is None
    assert pr["base"]["repo"]["full_name"] == REPO
    query = {"query": "q", "variables": {"owner": "octo", "name": "widgets", "number": 1}}
    graph = client.post("/graphql", json=query).json()["data"]["repository"]["pullRequest"]
    assert graph["headRepository"] is None
    assert graph["isCrossRepository"] is True
    assert graph["author"] is None
    sim.clear_faults()
    assert client.get(f"/repos/{REPO}/pulls/1").json()["user"]["login"] == "forker"


def test_an_unknown_pull_is_a_github_404(client: httpx.Client) -> None:
    response = client.get(f"/repos/{REPO}/pulls/99")
    assert response.status_code == 404
    assert response.json()["message"] == "Not Found"
    assert response.json()["documentation_url"].startswith("https://docs.github.com/")
    assert client.get("/repos/nobody/nothing/pulls").status_code == 404


# == git-backed behaviour ====================================================================


def test_a_push_moves_refs_pull_head_and_updated_at_but_not_created_at(
    sim: GitHubSim, client: httpx.Client, tmp_path: Path
) -> None:
    pr = sim.open_pr(REPO, "feature", {"a.txt": "1\n"})
    bare = sim.repo_path(REPO)
    before = client.get(f"/repos/{REPO}/pulls/1").json()
    assert git("rev-parse", "refs/pull/1/head", cwd=bare, home=tmp_path) == pr.head_sha

    sim.advance(90)
    new_sha = sim.push(REPO, 1, {"a.txt": "2\n"})
    after = client.get(f"/repos/{REPO}/pulls/1").json()
    assert git("rev-parse", "refs/pull/1/head", cwd=bare, home=tmp_path) == new_sha
    assert git("rev-parse", f"{new_sha}^", cwd=bare, home=tmp_path) == before["head"]["sha"]
    assert after["head"]["sha"] == new_sha
    assert after["created_at"] == before["created_at"] == "2024-05-01T12:00:00Z"
    assert after["updated_at"] == "2024-05-01T12:01:30Z"
    assert after["commits"] == 2


def test_a_force_push_rewrites_the_head_as_one_commit_on_the_base(
    sim: GitHubSim, client: httpx.Client, tmp_path: Path
) -> None:
    sim.open_pr(REPO, "feature", {"a.txt": "1\n"})
    sim.push(REPO, 1, {"b.txt": "2\n"})
    base_tip = sim.branch_sha(REPO, "main")
    rewritten = sim.force_push(REPO, 1, {"c.txt": "3\n"})
    bare = sim.repo_path(REPO)
    assert git("rev-parse", f"{rewritten}^", cwd=bare, home=tmp_path) == base_tip
    assert git("rev-parse", "refs/pull/1/head", cwd=bare, home=tmp_path) == rewritten
    pr = client.get(f"/repos/{REPO}/pulls/1").json()
    assert (pr["commits"], pr["changed_files"], pr["additions"]) == (1, 1, 1)


def test_two_pulls_can_be_updated_in_the_same_second(sim: GitHubSim, client: httpx.Client) -> None:
    sim.open_pr(REPO, "a")
    sim.open_pr(REPO, "b")
    sim.advance(7)
    sim.comment(REPO, 1, "x")
    sim.label(REPO, 2, "ready")
    stamps = {pr["updated_at"] for pr in client.get(f"/repos/{REPO}/pulls").json()}
    assert stamps == {"2024-05-01T12:00:07Z"}


def test_updated_at_moves_on_comment_label_review_and_title_edit_but_created_at_never(
    sim: GitHubSim,
) -> None:
    pr = sim.open_pr(REPO, "feature")
    moments = []
    for step in (
        lambda: sim.comment(REPO, 1, "hello"),
        lambda: sim.label(REPO, 1, "bug"),
        lambda: sim.review(REPO, 1, "approved", author="someone"),
        lambda: sim.edit_pr(REPO, 1, title="Better title"),
        lambda: sim.set_draft(REPO, 1, True),
    ):
        sim.advance(60)
        step()
        moments.append(pr.updated_at)
    assert moments == [T0 + timedelta(minutes=m) for m in range(1, 6)]
    sim.advance(60)
    sim.set_check_run(REPO, pr.head_sha, "ci")
    assert pr.updated_at == T0 + timedelta(minutes=5)  # check runs do not touch the PR
    assert pr.created_at == T0


def test_a_fork_pr_head_lives_in_the_fork_and_is_fetchable_from_the_base_as_refs_pull(
    sim: GitHubSim, client: httpx.Client, tmp_path: Path
) -> None:
    pr = sim.open_pr(REPO, "fork-work", {"evil.sh": "echo hi\n"}, from_fork="forker/widgets")
    base_bare, fork_bare = sim.repo_path(REPO), sim.repo_path("forker/widgets")
    assert fork_bare != base_bare
    assert git("rev-parse", "refs/heads/fork-work", cwd=fork_bare, home=tmp_path) == pr.head_sha
    assert git("branch", "--list", "fork-work", cwd=base_bare, home=tmp_path) == ""

    payload = client.get(f"/repos/{REPO}/pulls/1").json()
    assert payload["head"]["repo"]["full_name"] == "forker/widgets"
    assert payload["head"]["repo"]["fork"] is True
    assert payload["head"]["repo"]["id"] != payload["base"]["repo"]["id"]
    assert payload["head"]["label"] == "forker:fork-work"
    assert payload["user"]["login"] == "forker"

    clone = tmp_path / "clone"
    git("clone", "--quiet", str(base_bare), str(clone), home=tmp_path)
    git("fetch", "--quiet", "origin", "refs/pull/1/head:pr-1", cwd=clone, home=tmp_path)
    assert git("rev-parse", "pr-1", cwd=clone, home=tmp_path) == pr.head_sha
    assert git("show", "pr-1:evil.sh", cwd=clone, home=tmp_path) == "echo hi"

    pushed = sim.push(REPO, 1, {"evil.sh": "echo bye\n"})
    assert git("rev-parse", "refs/pull/1/head", cwd=base_bare, home=tmp_path) == pushed


def test_compare_reports_behind_by_after_a_commit_to_the_base(
    sim: GitHubSim, client: httpx.Client
) -> None:
    sim.open_pr(REPO, "feature", {"a.txt": "1\n"})
    fresh = client.get(f"/repos/{REPO}/compare/main...feature").json()
    assert (fresh["status"], fresh["ahead_by"], fresh["behind_by"]) == ("ahead", 1, 0)
    assert fresh["total_commits"] == 1 and len(fresh["commits"]) == 1
    assert fresh["files"][0]["filename"] == "a.txt"

    base_sha = sim.commit_to_base(REPO, {"base.txt": "b\n"})
    sim.commit_to_base(REPO, {"base.txt": "c\n"})
    later = client.get(f"/repos/{REPO}/compare/main...feature").json()
    assert (later["status"], later["ahead_by"], later["behind_by"]) == ("diverged", 1, 2)
    assert later["merge_base_commit"]["sha"] == git(
        "rev-parse", f"{base_sha}^", cwd=sim.repo_path(REPO), home=sim.state_dir
    )
    pr = client.get(f"/repos/{REPO}/pulls/1").json()
    assert pr["mergeable_state"] == "behind"
    identical = client.get(f"/repos/{REPO}/compare/feature...refs/pull/1/head").json()
    assert identical["status"] == "identical"
    assert client.get(f"/repos/{REPO}/compare/main...nope").status_code == 404


def test_merging_the_base_into_the_head_makes_a_real_two_parent_merge(
    sim: GitHubSim, client: httpx.Client, tmp_path: Path
) -> None:
    pr = sim.open_pr(REPO, "feature", {"a.txt": "1\n"})
    old_head = pr.head_sha
    base_tip = sim.commit_to_base(REPO, {"b.txt": "2\n"})
    merge = sim.merge_base_into_head(REPO, 1)
    bare = sim.repo_path(REPO)
    parents = git("rev-list", "--parents", "-n", "1", merge, cwd=bare, home=tmp_path).split()
    assert parents == [merge, old_head, base_tip]
    assert git("rev-parse", "refs/pull/1/head", cwd=bare, home=tmp_path) == merge
    compare = client.get(f"/repos/{REPO}/compare/main...feature").json()
    assert compare["behind_by"] == 0

    sim.commit_to_base(REPO, {"a.txt": "base version\n"})
    sim.push(REPO, 1, {"a.txt": "head version\n"})
    with pytest.raises(MergeConflict):
        sim.merge_base_into_head(REPO, 1)
    assert client.get(f"/repos/{REPO}/pulls/1").json()["mergeable"] is False


def test_update_branch_merges_the_base_into_the_head_over_http(
    sim: GitHubSim, client: httpx.Client
) -> None:
    pr = sim.open_pr(REPO, "feature", {"a.txt": "1\n"})
    up_to_date = client.put(f"/repos/{REPO}/pulls/1/update-branch")
    assert up_to_date.status_code == 422
    sim.commit_to_base(REPO, {"b.txt": "2\n"})
    accepted = client.put(
        f"/repos/{REPO}/pulls/1/update-branch", json={"expected_head_sha": pr.head_sha}
    )
    assert accepted.status_code == 202
    assert client.get(f"/repos/{REPO}/compare/main...feature").json()["behind_by"] == 0


def test_a_direct_push_to_the_bare_repo_is_noticed_like_a_synchronize(
    sim: GitHubSim, client: httpx.Client, tmp_path: Path
) -> None:
    sim.open_pr(REPO, "feature", {"a.txt": "1\n"})
    clone = tmp_path / "work"
    git(
        "clone",
        "--quiet",
        "--branch",
        "feature",
        str(sim.repo_path(REPO)),
        str(clone),
        home=tmp_path,
    )
    (clone / "a.txt").write_text("fixed\n")
    git("commit", "--quiet", "-am", "Fix", cwd=clone, home=tmp_path)
    git("push", "--quiet", "origin", "HEAD:feature", cwd=clone, home=tmp_path)
    pushed = git("rev-parse", "HEAD", cwd=clone, home=tmp_path)

    sim.advance(120)
    pr = client.get(f"/repos/{REPO}/pulls/1").json()
    assert pr["head"]["sha"] == pushed
    assert pr["updated_at"] == "2024-05-01T12:02:00Z"
    bare = sim.repo_path(REPO)
    assert git("rev-parse", "refs/pull/1/head", cwd=bare, home=tmp_path) == pushed
    sim.advance(60)
    listed = client.get(f"/repos/{REPO}/pulls").json()[0]
    assert listed["updated_at"] == "2024-05-01T12:02:00Z"  # noticed once, not again


def test_merge_closes_the_pull_and_moves_the_base_branch(
    sim: GitHubSim, client: httpx.Client, tmp_path: Path
) -> None:
    pr = sim.open_pr(REPO, "feature", {"a.txt": "1\n"})
    sim.set_auto_merge(REPO, 1, "squash")
    sim.advance(60)
    merge_sha = sim.merge(REPO, 1)
    assert sim.branch_sha(REPO, "main") == merge_sha
    bare = sim.repo_path(REPO)
    assert git("merge-base", "--is-ancestor", pr.head_sha, "main", cwd=bare, home=tmp_path) == ""
    payload = client.get(f"/repos/{REPO}/pulls/1").json()
    assert payload["state"] == "closed" and payload["merged"] is True
    assert payload["merged_at"] == payload["closed_at"] == "2024-05-01T12:01:00Z"
    assert payload["merge_commit_sha"] == merge_sha
    assert payload["auto_merge"] is None
    assert client.get(f"/repos/{REPO}/pulls").json() == []
    with pytest.raises(GhsimError):
        sim.merge(REPO, 1)


def test_posting_a_comment_returns_201_as_the_token_user_and_moves_updated_at(
    sim: GitHubSim, client: httpx.Client
) -> None:
    sim.open_pr(REPO, "feature")
    sim.advance(10)
    created = client.post(f"/repos/{REPO}/issues/1/comments", json={"body": "verdict: ok"})
    assert created.status_code == 201
    comment = created.json()
    assert comment["user"]["login"] == "reviewer-bot" and comment["user"]["id"] == 4242
    assert created.headers["location"] == comment["url"]
    assert sim.pull(REPO, 1).updated_at == T0 + timedelta(seconds=10)
    assert sim.requests_to("/comments$")[0].body == {"body": "verdict: ok"}
    assert client.post(f"/repos/{REPO}/issues/1/comments", json={}).status_code == 422
    assert client.post(f"/repos/{REPO}/issues/9/comments", json={"body": "x"}).status_code == 404


def test_check_runs_and_combined_status_follow_the_latest_results(
    sim: GitHubSim, client: httpx.Client
) -> None:
    pr = sim.open_pr(REPO, "feature")
    sim.set_check_run(REPO, pr.head_sha, "lint", "in_progress")
    sim.set_check_run(REPO, "feature", "lint", "completed", "failure")
    sim.set_status(REPO, pr.head_sha, "ci", "pending")
    sim.set_status(REPO, pr.head_sha, "ci", "success")
    runs = client.get(f"/repos/{REPO}/commits/{pr.head_sha}/check-runs").json()
    assert runs["total_count"] == 1
    assert (runs["check_runs"][0]["status"], runs["check_runs"][0]["conclusion"]) == (
        "completed",
        "failure",
    )
    assert runs["check_runs"][0]["pull_requests"][0]["number"] == 1
    status = client.get(f"/repos/{REPO}/commits/feature/status").json()
    assert (status["state"], status["total_count"], status["sha"]) == ("success", 1, pr.head_sha)
    assert client.get(f"/repos/{REPO}/commits/nope/status").status_code == 422
    query = {"query": "q", "variables": {"owner": "octo", "name": "widgets", "number": 1}}
    graph = client.post("/graphql", json=query).json()["data"]["repository"]["pullRequest"]
    assert graph["mergeStateStatus"] == "UNSTABLE"


# == graphql =================================================================================


def test_graphql_answers_the_pull_request_fields_the_pipeline_reads(
    sim: GitHubSim, client: httpx.Client
) -> None:
    pr = sim.open_pr(REPO, "feature", {"a.txt": "1\n"})

    def ask(number: int = 1, owner: str = "octo") -> dict[str, Any]:
        variables = {"owner": owner, "name": "widgets", "number": number}
        response = client.post(
            "/graphql", json={"query": "query($owner...)", "variables": variables}
        )
        assert response.status_code == 200
        return dict(response.json())

    node = ask()["data"]["repository"]["pullRequest"]
    assert {
        "isCrossRepository": False,
        "headRepository": node["headRepository"],
        "reviewDecision": None,
        "autoMergeRequest": None,
        "mergeStateStatus": "CLEAN",
        "headRefOid": pr.head_sha,
        "baseRefName": "main",
        "isDraft": False,
        "state": "OPEN",
    }.items() <= node.items()
    assert node["headRepository"]["nameWithOwner"] == REPO

    sim.review(REPO, 1, "APPROVED", author=("ann", 1))
    sim.review(REPO, 1, "CHANGES_REQUESTED", author=("bob", 2))
    assert ask()["data"]["repository"]["pullRequest"]["reviewDecision"] == "CHANGES_REQUESTED"
    assert ask()["data"]["repository"]["pullRequest"]["mergeStateStatus"] == "BLOCKED"
    sim.review(REPO, 1, "APPROVED", author=("bob", 2))
    assert ask()["data"]["repository"]["pullRequest"]["reviewDecision"] == "APPROVED"
    sim.set_review_decision(REPO, 1, "REVIEW_REQUIRED")
    assert ask()["data"]["repository"]["pullRequest"]["reviewDecision"] == "REVIEW_REQUIRED"

    sim.set_auto_merge(REPO, 1, "squash")
    node = ask()["data"]["repository"]["pullRequest"]
    assert node["autoMergeRequest"]["mergeMethod"] == "SQUASH"
    assert node["autoMergeRequest"]["enabledAt"] == "2024-05-01T12:00:00Z"
    sim.set_draft(REPO, 1)  # as on GitHub, converting to draft disarms auto-merge
    node = ask()["data"]["repository"]["pullRequest"]
    assert node["autoMergeRequest"] is None
    assert (node["isDraft"], node["mergeStateStatus"]) == (True, "DRAFT")
    sim.set_draft(REPO, 1, False)
    sim.commit_to_base(REPO, {"a.txt": "conflict\n"})
    assert ask()["data"]["repository"]["pullRequest"]["mergeStateStatus"] == "DIRTY"

    missing = ask(number=99)
    assert missing["data"] == {"repository": {"pullRequest": None}}
    assert missing["errors"][0]["type"] == "NOT_FOUND"
    assert ask(owner="nobody")["data"] == {"repository": None}
    inline = client.post(
        "/graphql",
        json={
            "query": 'repository(owner: "octo", name: "widgets") { pullRequest(number: 1) { id } }'
        },
    )
    assert inline.json()["data"]["repository"]["pullRequest"]["number"] == 1


# == command line ============================================================================


def test_the_module_starts_a_server_that_answers_rate_limit_and_rpc(tmp_path: Path) -> None:
    env = {**os.environ, "GHSIM_TOKENS": TOKEN}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ghsim",
            "--port",
            "0",
            "--state-dir",
            str(tmp_path),
            "--repo",
            REPO,
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    stdout = proc.stdout
    assert stdout is not None
    threading.Thread(target=lambda: lines.put(stdout.readline()), daemon=True).start()
    try:
        url = lines.get(timeout=20).strip()
        assert url.startswith("http://127.0.0.1:")
        headers = {"Authorization": f"token {TOKEN}"}
        limits = httpx.get(f"{url}/rate_limit", headers=headers)
        assert limits.status_code == 200
        assert limits.json()["rate"]["limit"] == 5000
        opened = httpx.post(
            f"{url}/_ghsim/rpc", json={"method": "open_pr", "args": [REPO, "feature"]}
        )
        assert opened.json()["result"]["number"] == 1
        pulls = httpx.get(f"{url}/repos/{REPO}/pulls", headers=headers).json()
        assert [p["head"]["ref"] for p in pulls] == ["feature"]
        assert (tmp_path / "repos" / "octo" / "widgets.git").is_dir()
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=15)
    assert proc.returncode == 0, err
    assert TOKEN not in err
