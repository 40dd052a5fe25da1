"""The pure parts of pr-status's branch protection: GitHub's approval count, required check
states, the parsers of both protection answers, and judging with parts unread."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.github import PullRequest
from wrapper.authorloop.protection import (
    Requirements,
    Seen,
    check_state,
    count_approvals,
    judge,
)
from wrapper.gh import BranchRequirements, ChecksRule, ReviewRule, _parse_classic, _parse_rules

HEAD, OLD = "h" * 40, "o" * 40
T0 = datetime(2024, 5, 1, tzinfo=UTC)


def review(login: str, state: str, *, assoc: str = "COLLABORATOR", sha: str = HEAD) -> Any:
    return {"user": {"login": login}, "state": state, "author_association": assoc, "commit_id": sha}


def pull() -> PullRequest:
    return PullRequest(
        1, "t", "u", "open", False, "author", 1, "User", T0, T0, None,
        HEAD, "feature", "o/r", 1, False, "main", "o/r", 1, None,
    )  # fmt: skip


STATES = ["APPROVED", "CHANGES_REQUESTED", "COMMENTED", "DISMISSED"]
reviews_strategy = st.lists(
    st.tuples(
        st.sampled_from(["author", "a", "b", "c"]),
        st.sampled_from(STATES),
        st.sampled_from(["OWNER", "COLLABORATOR", "CONTRIBUTOR", "NONE"]),
        st.sampled_from([HEAD, OLD]),
    ),
    max_size=12,
)


@given(reviews_strategy, st.booleans())
def test_an_approval_counts_only_as_the_latest_decisive_review_of_a_writer(
    items: list[tuple[str, str, str, str]], head_only: bool
) -> None:
    reviews = [review(u, s, assoc=a, sha=sha) for u, s, a, sha in items]
    tally = count_approvals(reviews, HEAD, "author", head_only=head_only)
    for login in tally.approvers:
        last = [r for r in reviews if r["user"]["login"] == login and r["state"] != "COMMENTED"][-1]
        assert last["state"] == "APPROVED" and login != "author"
        assert last["author_association"] in ("OWNER", "COLLABORATOR")
        assert last["commit_id"] == HEAD or not head_only
    assert len(set(tally.approvers)) == len(tally.approvers)
    assert tally.at_head <= len(tally.approvers)


def test_the_latest_review_wins_and_a_comment_changes_nothing() -> None:
    reviews = [
        review("a", "APPROVED"),
        review("a", "COMMENTED"),
        review("b", "APPROVED", sha=OLD),
        review("c", "APPROVED"),
        review("c", "CHANGES_REQUESTED"),
        review("d", "APPROVED"),
        review("d", "DISMISSED"),
        review("e", "APPROVED", assoc="CONTRIBUTOR"),
        {"user": None, "state": "APPROVED"},  # a ghost: nobody to count
    ]
    tally = count_approvals(reviews, HEAD, "author", head_only=False)
    assert (tally.approvers, tally.at_head) == (["a", "b"], 1)
    assert tally.changes_requested == ["c"]
    assert tally.not_counted == {"d": "dismissed", "e": "no_write_access"}
    stale = count_approvals(reviews, HEAD, "author", head_only=True)
    assert stale.approvers == ["a"] and stale.not_counted["b"] == "stale"


@pytest.mark.parametrize(
    ("bucket", "status", "state"),
    [
        (None, None, "missing"),
        ("pass", None, "passed"),
        ("skipping", None, "passed"),
        ("pending", None, "pending"),
        ("cancel", None, "failing"),
        (None, "success", "passed"),
        (None, "error", "failing"),
        ("pass", "failure", "failing"),  # the worse answer wins
        ("pass", "pending", "pending"),
    ],
)
def test_required_check_states(bucket: str | None, status: str | None, state: str) -> None:
    assert check_state(bucket, status) == state


def test_unread_reviews_or_statuses_are_unknown_not_unmet() -> None:
    req = Requirements.combine(
        [BranchRequirements((ReviewRule("classic", 2, False, False, False),),
                            (ChecksRule("classic", ("tests", "lint"), False),))]
    )  # fmt: skip
    seen = Seen("protected", "read", True)
    got = judge(req, seen, None, pull(), {"tests": "pass"}, None, None, ["reviews:server_error"])
    assert (got.state, got.codes) == ("unknown", [])
    assert got.checks == {"tests": "passed", "lint": "unknown"}
    failing = judge(req, seen, None, pull(), {"tests": "fail"}, None, None, ["x"])
    assert (failing.state, failing.codes) == ("unsatisfied", ["check_failing"])


def test_requirements_add_up_across_sources() -> None:
    classic = BranchRequirements((ReviewRule("classic", 1, True, False, False),))
    rules = BranchRequirements(
        (ReviewRule("ruleset 7", 3, False, False, True),),
        (ChecksRule("ruleset 7", ("a", "b"), True),),
        ("deletion", "workflows"),
    )
    req = Requirements.combine([classic, rules])
    assert (req.required_approvals, req.dismiss_stale, req.require_last_push_approval) == (
        3,
        True,
        True,
    )
    assert (req.checks, req.strict, req.not_evaluated) == (["a", "b"], True, ["workflows"])


def test_the_parsers_read_github_shapes_and_refuse_others() -> None:
    classic = _parse_classic(
        {
            "required_pull_request_reviews": {
                "dismiss_stale_reviews": True,
                "require_code_owner_reviews": False,
                "required_approving_review_count": 2,
            },
            "required_status_checks": {"contexts": ["ci"], "checks": [{"context": "ci"}]},
        }
    )
    assert classic.reviews[0].required_approvals == 2 and classic.reviews[0].dismiss_stale
    assert classic.checks[0].contexts == ("ci",)
    assert _parse_classic({"url": "x"}) == BranchRequirements()
    rules = _parse_rules([{"type": "deletion", "ruleset_id": 1}])
    assert rules.other == ("deletion",)
    from engine.github import Malformed

    with pytest.raises(Malformed):
        _parse_rules([{"type": "pull_request", "parameters": {}}])
    with pytest.raises(Malformed):
        _parse_classic({"required_pull_request_reviews": {"dismiss_stale_reviews": "yes"}})
