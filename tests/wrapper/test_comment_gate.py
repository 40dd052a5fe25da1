"""Issue 10 item 6: one gate for every comment kdev posts; the self-loop is decided by
the posted-id set alone, never by the account."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.config import Settings
from engine.github import GitHubClient
from engine.triggers import find_mention
from tests.wrapper.test_mention_wrapper import BOT_ID, HANDLE, bench, mention_config, run  # noqa: F401
from tests.wrapper.test_review import REPO, Bench
from wrapper.authorloop.threads import reply
from wrapper.comments import post_gated
from wrapper.config import KdevConfig
from wrapper.errors import KdevError, Outcome
from wrapper.ledger.ledger import Ledger

_ = bench  # the shared fixture


@pytest.fixture
def client(bench: Bench) -> Iterator[GitHubClient]:  # noqa: F811
    with GitHubClient(Settings(github_api_url=bench.sim.url, github_token=bench.token)) as made:
        yield made


@pytest.mark.parametrize("kind", ["issue", "review"])
def test_every_reply_is_gated_and_its_id_recorded(
    bench: Bench,  # noqa: F811
    client: GitHubClient,
    kind: str,
) -> None:
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    extra: dict[str, Any] = {"path": "a.py", "line": 1} if kind == "review" else {}
    asked = bench.sim.comment(REPO, pr.number, "why?", ("alice", 9), kind=kind, **extra)
    config = mention_config(bench)
    result = reply(
        client, config, {}, REPO, pr.number, asked.id, f"@{HANDLE} review", bench.ledger()
    )
    posted = bench.sim.get_comment(REPO, result.id)
    assert find_mention(posted.body, HANDLE) is None  # neutralised
    assert result.id in bench.ledger().posted_comment_ids(REPO)
    # kdev's own reply, fired back at it, never summons it.
    again = run(bench, pr.number, comment_id=result.id, config=config)
    assert again.outcome is Outcome.SKIPPED_SELF_COMMENT


def test_a_reply_cannot_be_posted_without_a_ledger(
    bench: Bench,  # noqa: F811
    client: GitHubClient,
) -> None:
    assert inspect.signature(reply).parameters["ledger"].default is inspect.Parameter.empty
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    asked = bench.sim.comment(REPO, pr.number, "why?", ("alice", 9))
    with pytest.raises(TypeError):
        reply(client, mention_config(bench), {}, REPO, pr.number, asked.id, "ok")  # type: ignore[call-arg]
    assert not bench.sim.requests_to("/comments", "POST")


def test_the_gate_records_only_an_answer_with_an_id(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    config = KdevConfig(mention_handle=HANDLE)
    sent: list[str] = []

    def send(body: str) -> dict[str, Any]:
        sent.append(body)
        return {"id": 41, "html_url": "u"}

    post_gated(ledger, config, {}, REPO, 3, f"cc @{HANDLE}", "review", send)
    assert ledger.posted_comment_ids(REPO) == frozenset({41})
    assert sent and find_mention(sent[0], HANDLE) is None
    with pytest.raises(KdevError) as caught:
        post_gated(ledger, config, {}, REPO, 3, "x", "review", lambda body: {"id": None})
    assert caught.value.reason == "comment_post_failed"
    assert ledger.posted_comment_ids(REPO) == frozenset({41})


def test_the_agents_own_account_can_still_summon_a_review(
    bench: Bench,  # noqa: F811
) -> None:
    """On a single-maintainer repository kdev posts from the maintainer's account: a
    comment by that account that kdev did not post is a real request."""
    config = mention_config(bench, mention_allowlist=[BOT_ID])
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    asked = bench.sim.comment(REPO, pr.number, f"@{HANDLE} review", ("review-bot", BOT_ID))
    report = run(bench, pr.number, comment_id=asked.id, config=config)
    assert report.outcome is Outcome.REVIEWED
