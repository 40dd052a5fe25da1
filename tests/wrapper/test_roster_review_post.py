"""Issue 27, D90: with ``review_post`` on, a roster round is ONE GitHub review whose line
comments are every roster reviewer's anchored findings, each signed with its reviewer's
name; the validator withdraws findings that are comments of that review; a 422 keeps
every finding in the summary; a carried-forward head posts no new review."""

from __future__ import annotations

import sys
from collections import Counter
from typing import Any

import pytest

from tests.wrapper.reviewbench import REPO, Bench
from tests.wrapper.test_roster import roster_bench, roster_config  # noqa: F401
from wrapper.authorloop.own_findings import own_findings
from wrapper.config import KdevConfig
from wrapper.errors import KdevError, Outcome
from wrapper.review.findings import signed_by
from wrapper.review.findings_post import newest_round
from wrapper.review.round_post import FALLBACK_NOTE, marker

ROSTER_REVIEWER = """\
import sys
prompt = sys.stdin.read()
if "independent validator of one code-review finding" in prompt:
    if "reaches the log" in prompt:
        print("VALIDATION: INVALID: the log call masks the number")
    elif "outside the diff" in prompt:
        print("no decision line at all")
    else:
        print("VALIDATION: VALID: yes")
    raise SystemExit(0)
print("reviewed")
if "Your role in this review: pci-auditor" in prompt:
    print("- [P1] the card number reaches the log at `plugins/auth/card.py:1`")
    print("- [P2] plugins/auth/card.py:2 names no owner")
    print("P3 the name card is vague")
if "Your role in this review: code-reviewer" in prompt:
    print("1. **P2** app.py:2 shadows a builtin")
    print("2. **P2** app.py:40 is outside the diff")
print("VERDICT: APPROVE")
"""
FILES = {"app.py": "x = 1\ny = 2\n", "plugins/auth/card.py": "card = 2\nname = 3\n"}
REVIEWS = r"/pulls/\d+/reviews$"
WITHDRAWN = "Withdrawn by the independent validator"


def posting_config(bench: Bench) -> KdevConfig:
    """The roster bench's roster (its root file turns the independent validator on,
    ``uncertain_action: drop``) with review posting on."""
    script = bench.root / "roster_reviewer.py"
    script.write_text(ROSTER_REVIEWER)
    config = roster_config(bench, [sys.executable, "-P", str(script)])
    update = {"mention_handle": "kdev", "review_post": {"enabled": True}}
    return bench.config(**{**config.model_dump(), **update})


def writes(bench: Bench) -> dict[str, int]:
    sim = bench.sim
    return {
        "reviews": len(sim.requests_to(REVIEWS, "POST")),
        "line": len(sim.requests_to(r"/pulls/\d+/comments$", "POST")),
        "issue": len(sim.requests_to(r"/issues/\d+/comments$", "POST")),
        "replies": len(sim.requests_to(r"/comments/\d+/replies$", "POST")),
    }


def _round(bench: Bench) -> tuple[int, Any, Any]:
    pr = bench.sim.open_pr(REPO, "f", FILES).number
    report = bench.review(pr, config=posting_config(bench))
    # A reply on a thread comes with a review of its own (ghsim, as GitHub): the round's
    # review is the one with a summary.
    [review] = [r for r in bench.sim.reviews(REPO, pr) if r.body]
    return pr, report, review


def test_a_roster_round_is_one_review_signed_per_reviewer(roster_bench: Bench) -> None:  # noqa: F811
    bench = roster_bench
    pr, report, review = _round(bench)
    assert report.verdict == "REQUEST_CHANGES"  # the VALID P2s block; the INVALID P1 not
    # One POST /reviews, no comment written any other way; the one reply withdraws the
    # INVALID finding on its thread (below).
    assert writes(bench) == {"reviews": 1, "line": 0, "issue": 0, "replies": 1}
    assert review.commit_id == bench.sim.pull(REPO, pr).head_sha
    assert review.body.rstrip().endswith(marker(report.patch_id))
    comments = bench.sim.review_comments(REPO, pr, review.id)
    # N = 3 line comments from K = 2 reviewers, each signed by its own.
    assert Counter(signed_by(c.body) for c in comments) == {"pci-auditor": 2, "code-reviewer": 1}
    placed = {(c.path, c.line): c.body for c in comments}
    card = "plugins/auth/card.py"
    assert set(placed) == {(card, 1), (card, 2), ("app.py", 2)}
    assert placed[card, 1].startswith("**pci-auditor** (P1): - [P1] the card number")
    # The summary: the verdict, counts by severity, the roster, the files, a section per
    # reviewer, and each finding not on a line with its path:line and why.
    body = review.body
    assert body.startswith(
        "**Review: REQUEST_CHANGES** (1 P1, 3 P2, 1 P3; 2 withdrawn by the independent validator)"
    )
    assert "Spawning 6 reviewers" in body
    assert "Files reviewed (2): `app.py`, `plugins/auth/card.py`" in body
    assert "### `pci-auditor`: REQUEST_CHANGES" in body
    assert "### `code-reviewer`: REQUEST_CHANGES" in body
    assert "### `silent-failure-hunter`: APPROVE" in body
    assert (
        "- **P2** `app.py:40` (not on a line: line 40 is outside the diff's hunks) "
        "(withdrawn by the independent validator, UNCERTAIN: no validation line): "
        "2. **P2** app.py:40 is outside the diff"
    ) in body
    assert "- **P3** (names no path:line of its reviewer's files): P3 the name card" in body
    # The findings record: every finding posted, the line comments by their ids.
    recorded = newest_round(bench.ledger(), REPO, pr)
    assert recorded is not None
    assert (recorded.expected, recorded.posted, recorded.failures) == (5, 5, [])
    ids = {c["id"] for c in recorded.comments if c["anchored"]}
    assert ids == {c.id for c in comments}
    assert {c["review_id"] for c in recorded.comments} == {review.id}
    assert ids | {review.id} <= bench.ledger().posted_comment_ids(REPO)
    assert len(bench.notes()) == 1
    assert not list((bench.root / "reviews").rglob("round-*.json"))
    # Triage takes kdev's own line comments in, the withdrawn one left out (D63).
    invalid = next(c for c in comments if (c.path, c.line) == (card, 1))
    assert set(own_findings(bench.ledger(), REPO, pr)) == ids - {invalid.id}
    again = bench.review(pr, config=posting_config(bench))
    assert again.outcome is Outcome.CARRIED_FORWARD
    assert writes(bench) == {"reviews": 1, "line": 0, "issue": 0, "replies": 1}


def test_the_validator_withdraws_a_comment_of_the_review_on_its_thread(
    roster_bench: Bench,  # noqa: F811
) -> None:
    bench = roster_bench
    pr, _, review = _round(bench)
    comments = bench.sim.review_comments(REPO, pr, review.id)
    invalid = next(c for c in comments if "reaches the log" in c.body)
    [reply] = [c for c in bench.sim.comments(REPO, "review") if c.in_reply_to_id == invalid.id]
    assert reply.body.startswith(f"{WITHDRAWN}: INVALID: the log call masks the number")
    assert bench.sim.thread_resolved(REPO, invalid.id)
    assert not any(bench.sim.thread_resolved(REPO, c.id) for c in comments if c is not invalid)
    recorded = newest_round(bench.ledger(), REPO, pr)
    assert recorded is not None
    done = sorted((w["validation"], w["anchored"], tuple(w["done"])) for w in recorded.withdrawn)
    assert done == [
        ("INVALID", True, ("replied", "resolved")),
        ("UNCERTAIN", False, ("in_summary",)),
    ]
    assert reply.id in bench.ledger().posted_comment_ids(REPO)
    assert recorded.acceptance == {
        "code-reviewer": {"valid": 1, "invalid": 0, "uncertain": 1},
        "pci-auditor": {"valid": 1, "invalid": 1, "uncertain": 0},
    }


def test_a_refused_review_posts_every_roster_finding_in_the_summary(
    roster_bench: Bench,  # noqa: F811
) -> None:
    bench = roster_bench
    bench.sim.inject_fault("POST", REVIEWS, status=422)
    pr, report, review = _round(bench)
    assert report.verdict == "REQUEST_CHANGES"
    assert writes(bench) == {"reviews": 2, "line": 0, "issue": 0, "replies": 0}
    assert bench.sim.review_comments(REPO, pr, review.id) == []
    body = review.body
    assert FALLBACK_NOTE in body and body.rstrip().endswith(marker(report.patch_id))
    for where in ("plugins/auth/card.py:1", "plugins/auth/card.py:2", "app.py:2", "app.py:40"):
        assert f"`{where}`" in body
    assert "the card number reaches the log" in body and "P3 the name card is vague" in body
    assert "(withdrawn by the independent validator, INVALID: the log call masks" in body
    recorded = newest_round(bench.ledger(), REPO, pr)
    assert recorded is not None and (recorded.expected, recorded.posted) == (5, 5)
    assert not any(c["anchored"] for c in recorded.comments)
    assert {tuple(w["done"]) for w in recorded.withdrawn} == {("in_summary",)}


def test_review_post_off_keeps_one_comment_per_finding(roster_bench: Bench) -> None:  # noqa: F811
    bench = roster_bench
    pr = bench.sim.open_pr(REPO, "f", FILES).number
    config = posting_config(bench)
    off = bench.config(**{**config.model_dump(), "review_post": {"enabled": False}})
    bench.review(pr, config=off)
    counted = writes(bench)
    # Today's roster posting: a line comment a finding with a path (4 tries: the one
    # outside the diff is refused, 422), a PR comment for each of the two others and for
    # app.py:40 after its refusal, and a PR comment withdrawing that dropped one.
    assert (counted["reviews"], counted["line"], counted["issue"]) == (0, 4, 3)
    assert sum(1 for c in bench.sim.comments(REPO) if signed_by(c.body)) == 6


def test_a_carried_forward_head_posts_no_new_review(roster_bench: Bench) -> None:  # noqa: F811
    """D90: an update-branch gives a new head with the reviewed diff; the merge gate's
    status on it carries the verdict, and nothing new lands on the PR."""
    bench = roster_bench
    config = bench.config(**{**posting_config(bench).model_dump(), "merge_gate": {"enabled": True}})
    pr = bench.sim.open_pr(REPO, "f", FILES).number
    first = bench.review(pr, config=config)
    legs, notes, before = bench.legs(), len(bench.notes()), writes(bench)
    bench.sim.commit_to_base(REPO, {"other.py": "2\n"})
    new_head = bench.sim.merge_base_into_head(REPO, pr)
    report = bench.review(pr, config=config)
    assert report.outcome is Outcome.CARRIED_FORWARD and report.head_sha == new_head
    assert report.patch_id == first.patch_id
    assert (bench.legs(), len(bench.notes()), writes(bench)) == (legs, notes, before)
    assert report.merge_gate is not None
    assert (report.merge_gate["state"], report.merge_gate["action"]) == ("failure", "set")
    [status] = bench.sim.statuses_for(bench.sim.repo(REPO), new_head)
    assert (status.state, status.description) == ("failure", "changes requested by kdev")
    [entry] = [e for h, e in bench.ledger().read_index(REPO, pr).items() if h == new_head]
    assert entry.carried_from == first.head_sha and entry.patch_id == first.patch_id


def test_an_owed_round_after_a_rebase_is_posted_at_the_head_carrying_its_diff(
    roster_bench: Bench,  # noqa: F811
) -> None:
    """The one case a carried head posts: the round was owed (GitHub failed), and a
    rebase left the reviewed head out of the pull, so GitHub refuses a review at it
    (422, "not part of the pull request"): it is posted at the head carrying the diff,
    every finding in the summary, saying which diff it carries."""
    bench = roster_bench
    config = posting_config(bench)
    pr = bench.sim.open_pr(REPO, "f", FILES)
    reviewed = pr.head_sha  # (ghsim's pull object follows the head)
    bench.sim.inject_fault("POST", REVIEWS, status=502)
    with pytest.raises(KdevError) as caught:
        bench.review(pr.number, config=config)
    assert caught.value.reason == "review_post_failed"
    bench.sim.commit_to_base(REPO, {"other.py": "2\n"})
    rebased = bench.sim.force_push(REPO, pr.number, FILES)  # the same diff on the new base
    report = bench.review(pr.number, config=config)
    assert report.outcome is Outcome.CARRIED_FORWARD and report.head_sha == rebased
    # The 502; then at the reviewed head with its comments, and alone (both 422); then
    # at the carrying head.
    assert writes(bench)["reviews"] == 4
    [review] = [r for r in bench.sim.reviews(REPO, pr.number) if r.body]
    assert review.commit_id == rebased
    assert bench.sim.review_comments(REPO, pr.number, review.id) == []
    assert review.body.startswith(
        f"Carried forward: this diff (patch-id `{report.patch_id}`) was reviewed at "
        f"`{reviewed}`; its review stands."
    )
    assert "`app.py:2`" in review.body and FALLBACK_NOTE in review.body
    assert review.body.rstrip().endswith(marker(report.patch_id))
    recorded = newest_round(bench.ledger(), REPO, pr.number)
    assert recorded is not None and not any(c["anchored"] for c in recorded.comments)
    assert not list((bench.root / "reviews").rglob("undelivered-*.json"))
    again = bench.review(pr.number, config=config)  # nothing owed any more
    assert again.outcome is Outcome.CARRIED_FORWARD and writes(bench)["reviews"] == 4


def test_a_clean_roster_round_is_one_review_and_records_zero_of_zero(
    roster_bench: Bench,  # noqa: F811
) -> None:
    bench = roster_bench
    pr = bench.sim.open_pr(REPO, "f", FILES).number
    config = roster_config(bench)  # the stub: no finding line
    on = bench.config(
        **{**config.model_dump(), "mention_handle": "kdev", "review_post": {"enabled": True}}
    )
    assert bench.review(pr, config=on).verdict == "APPROVE"
    [review] = bench.sim.reviews(REPO, pr)
    assert review.body.startswith("**Review: APPROVE** (0 P1, 0 P2, 0 P3)")
    assert bench.sim.review_comments(REPO, pr, review.id) == []
    recorded = newest_round(bench.ledger(), REPO, pr)
    assert recorded is not None and (recorded.expected, recorded.posted) == (0, 0)


def test_a_forced_second_round_of_the_same_diff_records_its_own_review(
    roster_bench: Bench,  # noqa: F811
) -> None:
    """``--force`` reviews a diff again: its new review's comments replace the first
    round's in the findings record (the record of a round is kept only against a
    rerun that adopts the same review)."""
    bench = roster_bench
    pr, _, first = _round(bench)
    budgets = {"max_concurrent_legs_per_repo": 3, "daily_rounds_per_pr": 100}
    config = bench.config(**{**posting_config(bench).model_dump(), "budgets": budgets})
    again = bench.review(pr, force=True, config=config)
    assert again.outcome is Outcome.REVIEWED
    [second] = [r for r in bench.sim.reviews(REPO, pr) if r.body and r.id != first.id]
    recorded = newest_round(bench.ledger(), REPO, pr)
    assert recorded is not None
    assert {c["review_id"] for c in recorded.comments} == {second.id}
    ids = {c.id for c in bench.sim.review_comments(REPO, pr, second.id)}
    assert {c["id"] for c in recorded.comments if c["anchored"]} == ids
    [invalid] = [w for w in recorded.withdrawn if w["anchored"]]
    assert invalid["done"] == ["replied", "resolved"] and invalid["id"] in ids
