"""Issue 27, D90: a real roster ``kdev review-pr`` with ``review_post`` on, killed with
SIGKILL at each step of posting its round (the steps of tests/wrapper/
test_round_post_kill.py), then rerun: one review, every roster finding's comment id
recorded, the validator's withdrawal done once, nothing left owed."""

from __future__ import annotations

import os
import signal
import subprocess
from typing import Any

import pytest

from tests.wrapper.reviewbench import REPO, Bench
from tests.wrapper.test_delivery import NOTIFIER, _delivered
from tests.wrapper.test_roster import roster_bench, roster_config  # noqa: F401
from tests.wrapper.test_roster_review_post import FILES, REVIEWS, posting_config, writes
from tests.wrapper.test_round_post_kill import DELAY, STEPS, _argv, _kill_when, _run, arm_step
from wrapper.config import KdevConfig
from wrapper.review.findings_post import newest_round


def _config(bench: Bench, blocked_notice: bool) -> KdevConfig:
    config = posting_config(bench)
    if not blocked_notice:
        return config
    script = bench.root / "notifier.sh"
    script.write_text(NOTIFIER)
    notify: list[dict[str, Any]] = [
        {"type": "command", "argv": ["sh", str(script), str(bench.root)]}
    ]
    return bench.config(**{**config.model_dump(), "notify": notify})


def _start(bench: Bench, env: dict[str, str], pr: int, head: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        _argv(pr, head, bench.checkout), env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip


@pytest.mark.parametrize("step", STEPS)
def test_kill_9_at_each_posting_step_posts_the_roster_round_once(
    roster_bench: Bench,  # noqa: F811
    step: str,
) -> None:
    bench = roster_bench
    env = bench.kdev_env(_config(bench, blocked_notice=step == "before-post"))
    pr = bench.sim.open_pr(REPO, "f", FILES)
    sim = bench.sim
    ready = arm_step(bench, step, pr.number)
    _kill_when(_start(bench, env, pr.number, pr.head_sha), ready)
    assert list((bench.root / "reviews").rglob("undelivered-*.json"))  # the round is owed
    assert newest_round(bench.ledger(), REPO, pr.number) is None  # not yet recorded
    if step == "before-post":
        os.kill(int((bench.root / "notifier.pid").read_text()), signal.SIGKILL)
        (bench.root / "block").unlink()
        assert sim.reviews(REPO, pr.number) == []
    if step == "rerun-listing":  # the rerun, killed while it looks for the round
        sim.inject_fault("GET", REVIEWS, delay=DELAY)
        rerun = _start(bench, env, pr.number, pr.head_sha)
        _kill_when(rerun, lambda: bool(sim.requests_to(REVIEWS, "GET")))

    for _ in range(2):  # the rerun posts what is owed; the next one finds nothing owed
        assert _run(bench, env, pr.number, pr.head_sha)["outcome"] == "carried_forward"
    [review] = [r for r in sim.reviews(REPO, pr.number) if r.body]  # 0 duplicates, 0 lost
    assert writes(bench) == {"reviews": 1, "line": 0, "issue": 0, "replies": 1}
    comments = sim.review_comments(REPO, pr.number, review.id)
    assert len(comments) == 3
    recorded = newest_round(bench.ledger(), REPO, pr.number)
    assert recorded is not None and (recorded.expected, recorded.posted) == (5, 5)
    assert {c["id"] for c in recorded.comments if c["anchored"]} == {c.id for c in comments}
    [invalid] = [w for w in recorded.withdrawn if w["anchored"]]
    assert invalid["done"] == ["replied", "resolved"] and sim.thread_resolved(REPO, invalid["id"])
    posted = bench.ledger().posted_comment_ids(REPO)
    assert {review.id, *(c.id for c in comments)} <= posted
    assert not list((bench.root / "reviews").rglob("undelivered-*.json"))
    assert not list((bench.root / "reviews").rglob("round-*.json"))
    assert bench.legs() == 10  # six reviewers and four validations (P1/P2), once
    if step == "before-post":
        assert len(_delivered(bench.root)) == 1
    else:
        assert len(bench.notes()) == 1


def test_a_kill_after_posting_at_the_carrying_head_is_adopted_there(
    roster_bench: Bench,  # noqa: F811
) -> None:
    """D90: the owed round of a head a rebase left out is posted at the head carrying its
    diff; a kill before its answer leaves it owed, and the rerun adopts the review at
    that head (its marker) instead of posting a second one."""
    bench = roster_bench
    config = posting_config(bench)
    env = bench.kdev_env(config)
    sim = bench.sim
    pr = sim.open_pr(REPO, "f", FILES)
    sim.inject_fault("POST", REVIEWS, status=502)
    first = subprocess.run(
        _argv(pr.number, pr.head_sha, bench.checkout), env=env, capture_output=True, timeout=120
    )
    assert first.returncode != 0 and b"review_post_failed" in first.stderr
    sim.commit_to_base(REPO, {"other.py": "2\n"})
    rebased = sim.force_push(REPO, pr.number, FILES)
    # The three POSTs of the rerun (two refused at the reviewed head, then the carried
    # one) are each answered late; the kill comes once the carried review exists.
    sim.inject_fault("POST", REVIEWS, delay=DELAY / 4, times=3)
    ready = lambda: any(r.body for r in sim.reviews(REPO, pr.number))  # noqa: E731
    _kill_when(_start(bench, env, pr.number, rebased), ready)
    assert list((bench.root / "reviews").rglob("undelivered-*.json"))  # still owed
    for _ in range(2):
        assert _run(bench, env, pr.number, rebased)["outcome"] == "carried_forward"
    [review] = [r for r in sim.reviews(REPO, pr.number) if r.body]
    assert review.commit_id == rebased
    assert writes(bench)["reviews"] == 4  # the 502, two refusals, the carried one: once
    assert not list((bench.root / "reviews").rglob("undelivered-*.json"))
    recorded = newest_round(bench.ledger(), REPO, pr.number)
    assert recorded is not None and {c["review_id"] for c in recorded.comments} == {review.id}
