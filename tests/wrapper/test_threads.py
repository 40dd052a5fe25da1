"""reply / resolve / hide and ``kdev comments`` against ghsim over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.config import Settings
from engine.github import GitHubClient, GitHubError, RequestPacer
from ghsim import GitHubSim
from ghsim.model import node_id
from wrapper.authorloop.feedback import collect_feedback
from wrapper.authorloop.threads import (
    COMMENT_NOT_FOUND,
    COMMENT_NOT_ON_PR,
    NODE_NOT_FOUND,
    REVIEW_SUMMARY_NO_REPLY,
    THREAD_NOT_FOUND,
    hide,
    list_review_threads,
    reply,
    resolve,
)
from wrapper.config import KdevConfig
from wrapper.errors import KdevError, LedgerError
from wrapper.ledger.ledger import Ledger
from wrapper.post import PostingContext

REPO = "octo/widgets"
GEMINI = ("gemini-code-assist[bot]", 176961590)


@pytest.fixture
def sim() -> Iterator[GitHubSim]:
    with GitHubSim() as running:
        running.add_token("tok-author", ("author-agent", 501))
        running.create_repo(REPO, files={"app.py": "print('hi')\n"})
        yield running


@pytest.fixture
def client(sim: GitHubSim) -> Iterator[GitHubClient]:
    settings = Settings(github_api_url=sim.url, github_token="tok-author")
    with GitHubClient(settings, pacer=RequestPacer(1_000_000)) as made:
        yield made


CONFIG = KdevConfig(mention_handle="kdev-bot")


def test_reply_to_inline_comment_is_threaded_and_neutralised(
    sim: GitHubSim, client: GitHubClient, tmp_path: Path
) -> None:
    pr = sim.open_pr(REPO, "feature", {"a.py": "x = 1\n"})
    root = sim.comment(REPO, pr.number, "![high] leak", GEMINI, kind="review", path="a.py", line=1)
    ledger = Ledger(tmp_path)
    ctx = PostingContext(client, ledger, CONFIG, {}, REPO, pr.number)
    result = reply(ctx, root.id, "Fixed in abc. cc @kdev-bot")
    assert result.kind == "inline"
    created = sim.get_comment(REPO, result.id)
    assert created.in_reply_to_id == root.id and created.path == "a.py"
    assert created.user.login == "author-agent"
    assert "@&#8203;kdev-bot" in created.body and "@kdev-bot" not in created.body
    assert result.id in ledger.posted_comment_ids(REPO)
    assert sim.requests_to(rf"/pulls/{pr.number}/comments/{root.id}/replies", "POST")


def test_reply_to_issue_comment_quotes_its_id(
    sim: GitHubSim, client: GitHubClient, tmp_path: Path
) -> None:
    pr = sim.open_pr(REPO, "feature", {"a.py": "x = 1\n"})
    asked = sim.comment(REPO, pr.number, "Why not a dict?", "alice")
    ledger = Ledger(tmp_path)
    ctx = PostingContext(client, ledger, CONFIG, {}, REPO, pr.number)
    result = reply(ctx, asked.id, "Order matters here.")
    assert result.id in ledger.posted_comment_ids(REPO)
    created = sim.get_comment(REPO, result.id)
    assert result.kind == "issue" and created.kind == "issue"
    assert f"comment {asked.id}" in created.body and "Order matters here." in created.body


def test_reply_failures(sim: GitHubSim, client: GitHubClient, tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    pr = sim.open_pr(REPO, "feature", {"a.py": "x = 1\n"})
    other = sim.open_pr(REPO, "other", {"b.py": "y = 1\n"})
    summary = sim.review(REPO, pr.number, "CHANGES_REQUESTED", "alice", body="Split it.")
    elsewhere = sim.comment(REPO, other.number, "hi", "alice")
    cases = [
        (summary.id, REVIEW_SUMMARY_NO_REPLY),
        (987654, COMMENT_NOT_FOUND),
        (elsewhere.id, COMMENT_NOT_ON_PR),
    ]
    ctx = PostingContext(client, ledger, CONFIG, {}, REPO, pr.number)
    for target, reason in cases:
        with pytest.raises(KdevError) as caught:
            reply(ctx, target, "ok")
        assert caught.value.reason == reason
    question = sim.comment(REPO, pr.number, "q", "alice")
    with pytest.raises(LedgerError) as leaked:
        reply(
            PostingContext(
                client,
                ledger,
                KdevConfig(mention_handle="kdev-bot", secret_env=["API_KEY"]),
                {"API_KEY": "s3cr3t-value-123456"},
                REPO,
                pr.number,
            ),
            question.id,
            "here: s3cr3t-value-123456",
        )
    assert leaked.value.reason == "secret_in_output"
    assert not sim.requests_to("/comments", "POST")


def test_resolve_finds_a_thread_past_the_first_hundred(
    sim: GitHubSim, client: GitHubClient
) -> None:
    pr = sim.open_pr(REPO, "feature", {"a.py": "x = 1\n"})
    roots = [
        sim.comment(REPO, pr.number, f"nit {i}", "alice", kind="review", path="a.py", line=1)
        for i in range(130)
    ]
    sim.comment(REPO, pr.number, "agreed", "bob", kind="review", in_reply_to=roots[120].id)
    threads = list_review_threads(client, REPO, pr.number)
    assert len(threads) == 130 and threads[120].comment_count == 2
    sim.clear_requests()
    target = node_id("PullRequestReviewComment", roots[120].id)
    thread = resolve(client, REPO, pr.number, target)
    assert thread.is_resolved and thread.first_comment_id == roots[120].id
    assert sim.thread_resolved(REPO, roots[120].id)
    assert not sim.thread_resolved(REPO, roots[119].id)
    assert len(sim.requests_to("/graphql", "POST")) == 3  # two pages, one mutation
    again = resolve(client, REPO, pr.number, target)  # already resolved: no mutation
    assert again.is_resolved and len(sim.requests_to("/graphql", "POST")) == 5
    pages = [r.body["variables"]["after"] for r in sim.requests_to("/graphql", "POST")[:2]]
    assert pages[0] is None and pages[1]


def test_resolve_unknown_node_and_reply_node(sim: GitHubSim, client: GitHubClient) -> None:
    pr = sim.open_pr(REPO, "feature", {"a.py": "x = 1\n"})
    root = sim.comment(REPO, pr.number, "nit", "alice", kind="review")
    answer = sim.comment(REPO, pr.number, "ok", "bob", kind="review", in_reply_to=root.id)
    for node in ("MDEyOk5vdGhpbmc5OQ==", node_id("PullRequestReviewComment", answer.id)):
        with pytest.raises(KdevError) as caught:
            resolve(client, REPO, pr.number, node)
        assert caught.value.reason == THREAD_NOT_FOUND


def test_hide_minimises_as_outdated(sim: GitHubSim, client: GitHubClient) -> None:
    pr = sim.open_pr(REPO, "feature", {"a.py": "x = 1\n"})
    old = sim.comment(REPO, pr.number, "stale bot summary", GEMINI)
    assert hide(client, node_id("IssueComment", old.id)) == "outdated"
    assert sim.minimized(REPO, old.id) == "OUTDATED"
    with pytest.raises(KdevError) as caught:
        hide(client, "MDEyOk5vdGhpbmc5OQ==")
    assert caught.value.reason == NODE_NOT_FOUND


def test_graphql_errors_translate(sim: GitHubSim, client: GitHubClient) -> None:
    with pytest.raises(GitHubError) as caught:
        client.graphql("mutation { minimizeComment(input: {}) { clientMutationId } }")
    assert caught.value.reason == "malformed_payload"


def test_collect_feedback_and_unresolved(sim: GitHubSim, client: GitHubClient) -> None:
    pr = sim.open_pr(REPO, "feature", {"a.py": "x = 1\n"})
    critical = sim.comment(
        REPO, pr.number, "![critical] SQL injection", GEMINI, kind="review", path="a.py", line=1
    )
    nit = sim.comment(REPO, pr.number, "nit: naming", "alice", kind="review", path="a.py", line=1)
    sim.comment(REPO, pr.number, "🚨 **Critical**: the lock is never released", "claude[bot]")
    resolve(client, REPO, pr.number, node_id("PullRequestReviewComment", nit.id))
    report = collect_feedback(client, REPO, pr.number)
    assert report.by_priority == {"P1": 2, "P2": 0, "P3": 1}
    assert report.open_threads == 1
    open_only = collect_feedback(client, REPO, pr.number, unresolved=True)
    assert [i.id for i in open_only.items] == [critical.id]
