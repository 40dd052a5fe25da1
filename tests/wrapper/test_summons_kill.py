"""Issue 29, D99: a real ``kdev review-pr --comment-id`` killed with SIGKILL at each step
of answering its summons, then rerun: one 👀 on the summoning comment and one reply on
the PR (0 duplicates, 0 lost), the round posted once, nothing left owed.

The steps (ghsim applies a POST, then sleeps the injected delay before answering, so
the kill lands after GitHub acted and before kdev recorded it): the reaction made but
not answered; the reviewer running (a restart mid-round: the rerun reviews again and
reacts no more); the round's review made, its comments not yet read back; the reply made
but not answered; and a rerun killed while it lists the PR's comments to adopt the
reply the first run made."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.wrapper.reviewbench import BIN, REPO, Bench
from tests.wrapper.test_round_post_kill import DELAY, _kill_when
from tests.wrapper.test_summons import BOT, HANDLE, MAINTAINER, config, eyes, replies

REACTIONS = r"/issues/comments/\d+/reactions$"
REPLIES = r"/issues/\d+/comments$"
STEPS = (
    "reaction-unanswered", "mid-leg", "round-unrecorded", "reply-unanswered", "rerun-listing",
)  # fmt: skip


def _argv(pr: int, head: str, checkout: Path, comment_id: int) -> list[str]:
    return [
        str(BIN / "kdev"), "review-pr", "--repo", REPO, "--pr", str(pr), "--head-sha", head,
        "--checkout", str(checkout), f"--comment-id={comment_id}", "--json",
    ]  # fmt: skip


def _start(argv: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )


@pytest.mark.parametrize("step", STEPS)
def test_kill_9_at_each_step_answers_the_summons_once(bench: Bench, step: str) -> None:
    env = bench.kdev_env(config(bench))
    sim = bench.sim
    pr = sim.open_pr(REPO, "f", {"app.py": "print('hi')\nx = 1  # TODO\n"})
    asked = sim.comment(REPO, pr.number, f"@{HANDLE} review", MAINTAINER)
    argv = _argv(pr.number, pr.head_sha, bench.checkout, asked.id)
    ready: Callable[[], bool]
    first_env = env
    if step == "mid-leg":
        first_env = {**env, "KDEV_STUB_SLEEP": "30"}
        ready = lambda: bench.legs() == 1  # noqa: E731  (reacted before the leg began)
    elif step == "reaction-unanswered":
        sim.inject_fault("POST", REACTIONS, delay=DELAY)
        ready = lambda: bool(sim.reactions(REPO, asked.id))  # noqa: E731
    elif step == "round-unrecorded":
        sim.inject_fault("GET", r"/reviews/\d+/comments$", delay=DELAY)
        ready = lambda: bool(sim.requests_to(r"/reviews/\d+/comments$", "GET"))  # noqa: E731
    else:
        sim.inject_fault("POST", REPLIES, delay=DELAY)
        ready = lambda: bool(replies(bench, pr.number, asked.id))  # noqa: E731
    _kill_when(_start(argv, first_env), ready)
    if step == "mid-leg":
        assert eyes(bench, asked.id) == [BOT] and sim.reviews(REPO, pr.number) == []
    if step == "rerun-listing":  # the rerun, killed while it looks for the reply
        sim.inject_fault("GET", REPLIES, delay=DELAY)
        _kill_when(_start(argv, env), lambda: bool(sim.requests_to(REPLIES, "GET")))

    for _ in range(2):  # the rerun answers what is owed; the next one finds nothing owed
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    assert eyes(bench, asked.id) == [BOT]  # one 👀 per summons
    [reply] = replies(bench, pr.number, asked.id)  # one reply
    [review] = sim.reviews(REPO, pr.number)  # one round
    assert f"#pullrequestreview-{review.id}" in reply.body
    assert reply.id in bench.ledger().posted_comment_ids(REPO)
    assert len(sim.requests_to(REPLIES, "POST")) == 1  # adopted after a kill, never posted again
    assert not list((bench.root / "reviews").rglob("undelivered-*.json"))
    assert bench.legs() == (2 if step == "mid-leg" else 1)
    if step != "reaction-unanswered":  # recorded: never sent again
        assert len(sim.requests_to(REACTIONS, "POST")) == 1
    kinds = {re.sub(r"\d+", "N", r.path) for r in sim.requests_to(REACTIONS, "POST")}
    assert kinds == {f"/repos/{REPO}/issues/comments/N/reactions"}
