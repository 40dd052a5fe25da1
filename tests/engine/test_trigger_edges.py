"""Issue 29's trigger edge cases, each found by running another bot's own cases against
ours (docs/triggers.md; D98): a verb is a whole word, a mention on a plain issue is no
pull request's while the open-PR set is unknown, and a naive watermark is refused when
the state that carries it is made."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from engine.triggers import (
    PayloadError,
    Reason,
    TriggerState,
    classify_comment,
    comment_from_payload,
    find_mention,
)

HANDLE = "claude"
REPO = "octocat/Hello-World"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "github"
WEBHOOKS = FIXTURES.parent / "webhooks"
VERBS = frozenset({"review", "describe"})
T0 = datetime(2011, 1, 1, tzinfo=UTC)


# --- the verb is a whole word ------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        "@claude describe-it",
        "@claude describe/now",
        "@claude describe.it",
        "@claude describe@home",
        "@claude, describe-it please",
    ],
)
def test_a_verb_glued_to_more_is_no_verb(body: str) -> None:
    found = find_mention(body, HANDLE, verbs=VERBS, default_verb="review")
    assert found is not None
    assert found.verb == "review"  # the default, not "describe"
    assert found.word == ""


@pytest.mark.parametrize(
    "body",
    ["@claude describe", "@claude describe.", "@claude describe, please", "@claude: describe!"],
)
def test_a_whole_word_is_still_the_verb(body: str) -> None:
    found = find_mention(body, HANDLE, verbs=VERBS, default_verb="review")
    assert found is not None and found.verb == "describe"


# --- a plain issue is no pull request ------------------------------------------------


def _issue_comment(**changes: Any) -> dict[str, Any]:
    """The real published issue-comments listing item (tests/fixtures/github/SOURCES.md):
    its ``html_url`` is an ``/issues/1347`` page, a plain issue's."""
    items: list[dict[str, Any]] = json.loads((FIXTURES / "issue-comments-list.json").read_text())
    return {**items[0], "body": "@claude review", **changes}


def _unknown_set(**changes: Any) -> TriggerState:
    values: dict[str, Any] = {
        "pr_watermark": None,
        "comments_watermark": None,
        "open_prs": None,  # an incomplete pulls listing: the set is unknown
        "handle": HANDLE,
        "allowlist": frozenset({1}),  # the fixture's author, octocat
        "verbs": VERBS,
    }
    return TriggerState(**{**values, **changes})


def test_the_listing_item_says_whether_it_is_on_a_pull_request() -> None:
    raw = _issue_comment()
    assert "pull_request" not in raw  # only the issue object has that key
    assert comment_from_payload(raw, "issue").on_pull is False
    on_pull = _issue_comment(html_url=raw["html_url"].replace("/issues/", "/pull/"))
    assert comment_from_payload(on_pull, "issue").on_pull is True


def test_a_real_plain_issue_comment_reads_as_not_on_a_pull_request() -> None:
    """octokit/webhooks' issue_comment example (tests/fixtures/webhooks/SOURCES.md): the
    issue has no ``pull_request`` key, and its comment's page says the same."""
    event = json.loads((WEBHOOKS / "issue-comment-created.json").read_text())
    assert "pull_request" not in event["issue"]
    item = comment_from_payload(event["comment"], "issue")
    assert (item.pr_number, item.on_pull) == (event["issue"]["number"], False)
    mention = {**event["comment"], "body": "@claude review"}
    allowed = _unknown_set(allowlist=frozenset({event["comment"]["user"]["id"]}))
    decision = classify_comment(comment_from_payload(mention, "issue"), REPO, allowed)
    assert decision.reason is Reason.NOT_A_PULL


def test_a_mention_on_a_plain_issue_does_not_pass_while_the_open_pr_set_is_unknown() -> None:
    item = comment_from_payload(_issue_comment(), "issue")
    decision = classify_comment(item, REPO, _unknown_set())
    assert not decision.accept
    assert decision.reason is Reason.NOT_A_PULL


def test_a_mention_on_a_pull_request_still_passes_while_the_set_is_unknown() -> None:
    raw = _issue_comment()
    on_pull = _issue_comment(html_url=raw["html_url"].replace("/issues/", "/pull/"))
    decision = classify_comment(comment_from_payload(on_pull, "issue"), REPO, _unknown_set())
    assert decision.accept and decision.verb == "review"
    # A pull the incomplete listing did read is a pull request whatever the page says.
    seen = classify_comment(
        comment_from_payload(raw, "issue"), REPO, _unknown_set(seen_pulls=frozenset({1347}))
    )
    assert seen.accept


def test_a_known_open_pr_set_decides_as_before() -> None:
    item = comment_from_payload(_issue_comment(), "issue")
    assert classify_comment(item, REPO, _unknown_set(open_prs=frozenset({1347}))).accept
    closed = classify_comment(item, REPO, _unknown_set(open_prs=frozenset({1})))
    assert closed.reason is Reason.PR_NOT_OPEN


@pytest.mark.parametrize(
    "html_url",
    [
        None,
        "https://github.com/octocat/Hello-World/discussions/1347",
        "https://github.com/octocat/Hello-World/pull/9#issuecomment-1",  # another number
    ],
)
def test_an_issue_comment_without_a_readable_page_is_malformed(html_url: str | None) -> None:
    raw = _issue_comment(html_url=html_url)
    with pytest.raises(PayloadError) as caught:
        comment_from_payload(raw, "issue")
    assert caught.value.reason == "malformed_payload"
    assert "html_url" in str(caught.value)


def test_a_diff_comment_is_always_on_a_pull_request() -> None:
    items = json.loads((FIXTURES / "review-comments-list.json").read_text())
    assert comment_from_payload(items[0], "diff").on_pull is True


# --- a naive watermark is refused when it is made ------------------------------------


@pytest.mark.parametrize("field", ["pr_watermark", "comments_watermark"])
def test_a_naive_watermark_is_refused_when_the_state_is_made(field: str) -> None:
    naive = datetime(2026, 1, 1, 12, 0, 0)
    with pytest.raises(ValueError, match=f"{field} .* has no time zone"):
        _unknown_set(**{field: naive})


def test_an_aware_watermark_is_taken() -> None:
    made = _unknown_set(pr_watermark=T0, comments_watermark=T0)
    assert made.comments_watermark == T0
