"""Issue 27, D86: a real ``kdev review-pr`` killed with SIGKILL at each step of posting
its round, then rerun: the round is on the PR exactly once (0 duplicates, 0 lost), its
ids recorded, nothing left owed.

The steps: before the POST (its notice blocked); GitHub made the review but has not
answered (ghsim applies a POST, then sleeps the injected delay before answering); GitHub
answered, the comment ids not yet read back and recorded; and a rerun killed while it
lists the PR's reviews to adopt the one the first run made."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.wrapper.reviewbench import BIN, REPO, Bench
from tests.wrapper.test_delivery import NOTIFIER, _delivered
from wrapper.config import KdevConfig

HANDLE = "kdev"
REVIEWS = r"/pulls/\d+/reviews$"
DELAY = 4.0  # ghsim's sleep before it answers; the kill comes well inside it


def _argv(pr: int, head: str, checkout: Path) -> list[str]:
    return [
        str(BIN / "kdev"), "review-pr", "--repo", REPO, "--pr", str(pr), "--head-sha", head,
        "--checkout", str(checkout), "--json",
    ]  # fmt: skip


def _config(bench: Bench, blocked_notice: bool) -> KdevConfig:
    notify: list[dict[str, Any]] = [{"type": "file", "path": str(bench.root / "notes.jsonl")}]
    if blocked_notice:
        script = bench.root / "notifier.sh"
        script.write_text(NOTIFIER)
        notify = [{"type": "command", "argv": ["sh", str(script), str(bench.root)]}]
    return bench.config(mention_handle=HANDLE, review_post={"enabled": True}, notify=notify)


def _kill_when(proc: subprocess.Popen[bytes], ready: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not ready():
        if proc.poll() is not None:
            raise AssertionError(f"kdev ended first: {proc.communicate()}")
        time.sleep(0.02)
    assert ready()
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)


def _run(bench: Bench, env: dict[str, str], pr: int, head: str) -> dict[str, Any]:
    done = subprocess.run(
        _argv(pr, head, bench.checkout), env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


STEPS = ("before-post", "accepted-unanswered", "answered-unrecorded", "rerun-listing")


def arm_step(bench: Bench, step: str, pr: int) -> Callable[[], bool]:
    """Sets up the kill at ``step`` of posting PR ``pr``'s round; returns when to kill:
    the stub blocked before posting, GitHub made the review but has not answered, or it
    answered and kdev is reading the review's comments back."""
    sim = bench.sim
    if step == "before-post":
        (bench.root / "block").touch()
        return (bench.root / "started").exists
    if step in ("accepted-unanswered", "rerun-listing"):
        sim.inject_fault("POST", REVIEWS, delay=DELAY)
        return lambda: bool(sim.reviews(REPO, pr))
    sim.inject_fault("GET", r"/reviews/\d+/comments$", delay=DELAY)
    return lambda: bool(sim.requests_to(r"/reviews/\d+/comments$", "GET"))


@pytest.mark.parametrize("step", STEPS)
def test_kill_9_at_each_posting_step_posts_the_round_once(bench: Bench, step: str) -> None:
    config = _config(bench, blocked_notice=step == "before-post")
    env = bench.kdev_env(config)
    pr = bench.sim.open_pr(REPO, "f", {"app.py": "print('hi')\nx = 1  # TODO\ny = 2  # FIXME\n"})
    head = pr.head_sha
    sim = bench.sim
    ready = arm_step(bench, step, pr.number)
    proc = subprocess.Popen(
        _argv(pr.number, head, bench.checkout), env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    _kill_when(proc, ready)
    assert list((bench.root / "reviews").rglob("patch-*.md"))  # the verdict is written
    assert list((bench.root / "reviews").rglob("undelivered-*.json"))  # the round is owed
    if step == "before-post":
        os.kill(int((bench.root / "notifier.pid").read_text()), signal.SIGKILL)
        (bench.root / "block").unlink()
        assert sim.reviews(REPO, pr.number) == []
    if step == "rerun-listing":  # the rerun, killed while it looks for the round
        sim.inject_fault("GET", REVIEWS, delay=DELAY)
        rerun = subprocess.Popen(
            _argv(pr.number, head, bench.checkout), env=env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, start_new_session=True,
        )  # fmt: skip
        _kill_when(rerun, lambda: bool(sim.requests_to(REVIEWS, "GET")))

    for _ in range(2):  # the rerun posts what is owed; the next one finds nothing owed
        report = _run(bench, env, pr.number, head)
        assert report["outcome"] == "carried_forward"
    [review] = sim.reviews(REPO, pr.number)  # 0 duplicates, 0 lost
    assert len(sim.requests_to(REVIEWS, "POST")) == 1
    comments = sim.review_comments(REPO, pr.number, review.id)
    assert sorted(c.line for c in comments) == [2, 3]
    posted = bench.ledger().posted_comment_ids(REPO)
    assert {review.id, *(c.id for c in comments)} <= posted
    assert not list((bench.root / "reviews").rglob("undelivered-*.json"))
    assert bench.legs() == 1
    if step == "before-post":
        assert len(_delivered(bench.root)) == 1
    else:
        assert len(bench.notes()) == 1
