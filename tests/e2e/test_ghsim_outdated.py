"""Issue 28: a push outdates the line comments whose lines it changes and moves those whose
lines it shifts, over HTTP, as GitHub does (REST ``line``/``position`` gone and
``original_line`` kept; GraphQL ``isOutdated``, ``line``, ``originalLine``; threads
resolved by the mutation read back as ``isResolved``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from engine.config import Settings
from engine.github import GitHubClient
from ghsim import GitHubSim
from wrapper.authorloop.threads import list_review_threads, resolve

REPO = "octo/widgets"
TOKEN = "ghs_outdatedtoken0000000000000000000000"
FILE = "a\nb\nc\nd\n"


@pytest.fixture
def sim() -> Iterator[GitHubSim]:
    with GitHubSim() as made:
        made.add_token(TOKEN, ("author", 7))
        made.create_repo(REPO)
        made.commit_to_base(REPO, {"o.txt": FILE})
        yield made


def open_with_comments(sim: GitHubSim, *lines: int) -> int:
    pr = sim.open_pr(REPO, "work", {"o.txt": FILE.replace("a\n", "a1\n"), "p.txt": "x\n"})
    comments = [{"path": "o.txt", "line": n, "body": f"on {n}"} for n in lines]
    sim.create_review(REPO, pr.number, ("rev", 8), event="COMMENT", body="x", comments=comments)
    return pr.number


def rest_comments(sim: GitHubSim, pr: int) -> dict[str, dict[str, Any]]:
    with httpx.Client(base_url=sim.url, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        answer = http.get(f"/repos/{REPO}/pulls/{pr}/comments")
    answer.raise_for_status()
    return {c["body"]: c for c in answer.json()}


def client(sim: GitHubSim) -> GitHubClient:
    return GitHubClient(Settings(github_api_url=sim.url, github_token=TOKEN))


def test_a_push_that_changes_a_line_outdates_its_comment(sim: GitHubSim) -> None:
    pr = open_with_comments(sim, 1, 3)
    sim.push(REPO, pr, {"o.txt": "top\nA1\nb\nc\nd\n"})  # line 1 changed, c moves to 4
    rest = rest_comments(sim, pr)
    assert "line" not in rest["on 1"] and "position" not in rest["on 1"]
    assert rest["on 1"]["original_line"] == 1
    assert rest["on 3"]["line"] == 4 and rest["on 3"]["original_line"] == 3
    with client(sim) as gh:
        threads = {t.original_line: t for t in list_review_threads(gh, REPO, pr)}
    assert threads[1].is_outdated and threads[1].line is None
    assert not threads[3].is_outdated and threads[3].line == 4


def test_a_push_elsewhere_keeps_the_comment_current(sim: GitHubSim) -> None:
    pr = open_with_comments(sim, 2)
    sim.push(REPO, pr, {"p.txt": "y\n"})
    assert rest_comments(sim, pr)["on 2"]["line"] == 2
    with client(sim) as gh:
        [thread] = list_review_threads(gh, REPO, pr)
    assert not thread.is_outdated and thread.line == 2 and thread.original_line == 2


def test_outdated_is_for_good_and_replies_follow_their_thread(sim: GitHubSim) -> None:
    pr = open_with_comments(sim, 2)
    sim.push(REPO, pr, {"o.txt": "a1\nB\nc\nd\n"})
    sim.push(REPO, pr, {"o.txt": "a1\nb\nc\nd\n"})  # the old text back: still outdated
    root = rest_comments(sim, pr)["on 2"]
    with httpx.Client(base_url=sim.url, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        made = http.post(
            f"/repos/{REPO}/pulls/{pr}/comments/{root['id']}/replies", json={"body": "ok"}
        )
    assert made.status_code == 201
    assert "line" not in made.json() and made.json()["original_line"] == 2
    with client(sim) as gh:
        [thread] = list_review_threads(gh, REPO, pr)
        assert thread.is_outdated and thread.comment_count == 2
        assert thread.first_comment_node is not None
        done = resolve(gh, REPO, pr, thread.first_comment_node)
        assert done.is_resolved and done.is_outdated
        [again] = list_review_threads(gh, REPO, pr)
    assert again.is_resolved


def test_a_range_that_shifts_moves_whole(sim: GitHubSim) -> None:
    pr = sim.open_pr(REPO, "work", {"o.txt": "a\nb2\nc2\nd\n"}).number
    spot = {"path": "o.txt", "start_line": 2, "line": 3, "body": "range"}
    sim.create_review(REPO, pr, ("rev", 8), event="COMMENT", body="x", comments=[spot])
    sim.push(REPO, pr, {"o.txt": "new\na\nb2\nc2\nd\n"})
    moved = rest_comments(sim, pr)["range"]
    assert (moved["start_line"], moved["line"]) == (3, 4)
    assert (moved["original_start_line"], moved["original_line"]) == (2, 3)
