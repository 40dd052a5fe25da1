"""Issue 29, D99: a summons says it was heard. ``kdev review-pr --comment-id`` of an
allowlisted mention adds one 👀 to that comment and, once the round is posted, one short
reply that links to it; both recorded, so a rerun neither reacts nor replies again."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.config import Settings
from engine.github import GitHubClient
from ghsim.model import Comment
from tests.wrapper.reviewbench import REPO, ROOT, Bench, open_bench
from wrapper.config import KdevConfig
from wrapper.errors import LedgerError
from wrapper.review.review import ReviewContext, ReviewRequest, review_pr
from wrapper.review.summons import reply_marker, summons_path

HANDLE = "kdev"
MAINTAINER = ("maintainer", 7001)
STRANGER = ("stranger", 7002)
BOT = "review-bot"  # the bench token's account
REACTIONS = r"/comments/\d+/reactions$"


@pytest.fixture
def bench(tmp_path: Path) -> Iterator[Bench]:
    with open_bench(tmp_path, {"app.py": "print('hi')\n"}) as made:
        yield made


def config(bench: Bench, *, as_review: bool = True, **overrides: Any) -> KdevConfig:
    data: dict[str, Any] = {"mention_handle": HANDLE, "mention_allowlist": [MAINTAINER[1]]}
    if as_review:
        data["review_post"] = {"enabled": True}
    else:
        data["notify"] = [
            {"type": "file", "path": str(bench.root / "notes.jsonl")},
            {"type": "github-comment"},
        ]
    data.update(overrides)
    return bench.config(**data)


def summon(bench: Bench, pr: int, body: str = f"@{HANDLE} review please", **kw: Any) -> Comment:
    return bench.sim.comment(REPO, pr, body, kw.pop("author", MAINTAINER), **kw)


def run(bench: Bench, pr: int, comment_id: int | None, cfg: KdevConfig) -> Any:
    settings = Settings(github_api_url=bench.sim.url, github_token=bench.token)
    env = {"PATH": os.environ["PATH"], "HOME": str(bench.root), "PYTHONPATH": str(ROOT)}
    with GitHubClient(settings) as client:
        ctx = ReviewContext(config=cfg, ledger=bench.ledger(), github=client, environ=env)
        head = bench.sim.pull(REPO, pr).head_sha
        req = ReviewRequest(
            repo=REPO, pr=pr, head_sha=head, checkout=bench.checkout, comment_id=comment_id
        )
        return review_pr(req, ctx)


def eyes(bench: Bench, comment_id: int) -> list[str]:
    return [r.user.login for r in bench.sim.reactions(REPO, comment_id) if r.content == "eyes"]


def replies(bench: Bench, pr: int, comment_id: int) -> list[Comment]:
    tag = reply_marker(comment_id)
    return [
        c
        for c in bench.sim.comments(REPO, "issue")
        if c.pull_number == pr and c.user.login == BOT and c.body.rstrip().endswith(tag)
    ]


def open_pr(bench: Bench) -> int:
    return bench.sim.open_pr(REPO, "f", {"app.py": "print('hi')\nx = 1  # TODO\n"}).number


def test_a_summons_gets_one_eyes_and_one_reply_that_links_to_the_review(bench: Bench) -> None:
    pr = open_pr(bench)
    asked = summon(bench, pr)
    cfg = config(bench)
    first = run(bench, pr, asked.id, cfg)
    assert first.outcome.value == "reviewed"
    assert eyes(bench, asked.id) == [BOT]
    [review] = bench.sim.reviews(REPO, pr)
    [reply] = replies(bench, pr, asked.id)
    assert f"#pullrequestreview-{review.id}" in reply.body
    assert f"#issuecomment-{asked.id}" in reply.body  # which summons it answers
    assert f"@{HANDLE}" not in reply.body.replace("@\u200b", "")  # through the gate
    assert reply.id in bench.ledger().posted_comment_ids(REPO)
    for _ in range(2):  # reruns: carried forward, nothing sent again
        assert run(bench, pr, asked.id, cfg).outcome.value == "carried_forward"
    assert eyes(bench, asked.id) == [BOT]
    assert len(replies(bench, pr, asked.id)) == 1
    assert len(bench.sim.requests_to(REACTIONS, "POST")) == 1
    assert len(bench.sim.requests_to(r"/issues/\d+/comments$", "POST")) == 1


def test_the_reply_links_to_the_round_comment_without_review_post(bench: Bench) -> None:
    pr = open_pr(bench)
    asked = summon(bench, pr, f"@{HANDLE}: have a look", kind="review", path="app.py", line=2)
    cfg = config(bench, as_review=False)
    run(bench, pr, asked.id, cfg)
    assert eyes(bench, asked.id) == [BOT]  # a review comment's own reactions route
    assert bench.sim.requests_to(rf"/pulls/comments/{asked.id}/reactions$", "POST")
    round_comment = [
        c for c in bench.sim.comments(REPO, "issue") if c.body.startswith("**kdev review**")
    ]
    [posted] = round_comment
    [reply] = replies(bench, pr, asked.id)
    assert f"#issuecomment-{posted.id}" in reply.body


def test_each_summons_of_one_head_is_answered_once(bench: Bench) -> None:
    pr = open_pr(bench)
    cfg = config(bench)
    first, second = summon(bench, pr), summon(bench, pr, f"again @{HANDLE}")
    run(bench, pr, first.id, cfg)
    report = run(bench, pr, second.id, cfg)
    assert report.outcome.value == "carried_forward"
    [review] = bench.sim.reviews(REPO, pr)
    for asked in (first, second):
        assert eyes(bench, asked.id) == [BOT]
        [reply] = replies(bench, pr, asked.id)
        assert f"#pullrequestreview-{review.id}" in reply.body


@pytest.mark.parametrize(
    ("author", "body"),
    [(STRANGER, f"@{HANDLE} review"), (MAINTAINER, "no handle here"), (MAINTAINER, "`@kdev`")],
    ids=["not-allowlisted", "no-mention", "mention-in-code"],
)
def test_what_is_no_allowlisted_summons_gets_neither(
    bench: Bench, author: tuple[str, int], body: str
) -> None:
    pr = open_pr(bench)
    asked = summon(bench, pr, body, author=author)
    assert run(bench, pr, asked.id, config(bench)).outcome.value == "reviewed"
    assert bench.sim.reactions(REPO, asked.id) == []
    assert replies(bench, pr, asked.id) == []
    assert not summons_path(bench.ledger(), REPO, pr, asked.id).exists()


def test_without_a_comment_id_nothing_is_reacted_to(bench: Bench) -> None:
    pr = open_pr(bench)
    asked = summon(bench, pr)
    run(bench, pr, None, config(bench))
    assert not bench.sim.requests_to(REACTIONS)
    assert bench.sim.reactions(REPO, asked.id) == []


def test_a_failed_reaction_does_not_stop_the_review_and_the_rerun_reacts(bench: Bench) -> None:
    pr = open_pr(bench)
    asked = summon(bench, pr)
    cfg = config(bench)
    bench.sim.inject_fault("POST", REACTIONS, status=502)
    assert run(bench, pr, asked.id, cfg).outcome.value == "reviewed"
    assert bench.sim.reactions(REPO, asked.id) == []
    assert len(replies(bench, pr, asked.id)) == 1  # heard, even if the 👀 failed
    run(bench, pr, asked.id, cfg)
    assert eyes(bench, asked.id) == [BOT]
    assert len(replies(bench, pr, asked.id)) == 1


def test_a_failed_reply_stays_owed_and_the_rerun_posts_it_once(bench: Bench) -> None:
    pr = open_pr(bench)
    asked = summon(bench, pr)
    cfg = config(bench)
    bench.sim.inject_fault("POST", r"/issues/\d+/comments$", status=500)
    report = run(bench, pr, asked.id, cfg)
    assert "summons reply not posted" in report.detail
    assert replies(bench, pr, asked.id) == []
    # The POST may have been made (attempted is recorded): the rerun looks first.
    again = run(bench, pr, asked.id, cfg)
    assert "posted" in again.detail
    assert len(replies(bench, pr, asked.id)) == 1
    assert bench.sim.requests_to(r"/issues/\d+/comments$", "GET")


@pytest.mark.parametrize(
    "changes",
    [{"page": None}, {"kind": "commit"}, {"reaction_id": True}, {"reply_attempted": "yes"}, {}],
    ids=["no-page", "bad-kind", "bool-id", "str-flag", "other-comment"],
)
def test_an_unreadable_summons_record_is_a_loud_ledger_error(
    bench: Bench, changes: dict[str, Any]
) -> None:
    pr = open_pr(bench)
    asked = summon(bench, pr)
    path = summons_path(bench.ledger(), REPO, pr, asked.id)
    path.parent.mkdir(parents=True, exist_ok=True)
    good = {"comment_id": asked.id, "kind": "issue", "page": "https://x/1"}
    data = {**good, **changes} if changes else {**good, "comment_id": asked.id + 1}
    path.write_text(json.dumps({k: v for k, v in data.items() if v is not None}))
    with pytest.raises(LedgerError) as caught:
        run(bench, pr, asked.id, config(bench))
    assert caught.value.reason == "summons_record_unreadable"
    assert bench.sim.reactions(REPO, asked.id) == []
