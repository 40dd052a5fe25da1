"""The trigger classifier: mention detection, allowlist parsing, decisions, watermarks."""

from __future__ import annotations

import json
import logging
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import InvalidInput
from engine.triggers import (
    REASON_LOG_LEVELS,
    CommentItem,
    PayloadError,
    PullItem,
    Reason,
    TriggerState,
    advance_watermark,
    classify_comment,
    classify_pull,
    comment_from_payload,
    find_mention,
    parse_allowlist,
    validate_handle,
    validate_verb,
)

HANDLE = "claude"
REPO = "octo/app"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "github"
T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
MAINTAINER_ID = 101
AGENT_ID = 999
# The verbs of the schedule under test (the engine has none of its own).
VERBS = frozenset({"review", "describe"})
DEFAULT_VERB = "review"

# (body, expected verb or None when the handle does not count)
MENTION_CASES: list[tuple[str, str | None]] = [
    # plain prose, case, verbs
    ("@claude", "review"),
    ("@claude review", "review"),
    ("@claude describe", "describe"),
    ("@Claude DESCRIBE", "describe"),
    ("@CLAUDE please look", "review"),
    ("hey @claude describe this", "describe"),
    ("@claude, describe", "describe"),
    ("@claude: describe", "describe"),
    ("@claude describes", "review"),
    ("@claude\ndescribe", "review"),
    ("@claude  \ndescribe", "review"),
    ("@claude *describe*", "describe"),
    ("@claude `describe`", "review"),
    ("# @claude describe", "describe"),
    ("- item\n- @claude describe", "describe"),
    ("[@claude describe](https://example.com)", None),
    ("**@claude** describe", "describe"),
    ("first @claude, then @claude describe", "review"),
    ("`@claude` then @claude describe", "describe"),
    ("> @claude\n\n@claude describe", "describe"),
    # punctuation after the handle
    ("thanks @claude.", "review"),
    ("ask @claude!", "review"),
    ("(@claude)", "review"),
    ("@claude...", "review"),
    ("@claude's turn", "review"),
    # word bounds before and after
    ("user@claude.ai", None),
    ("x@claude", None),
    ("@@claude", None),
    (".@claude", None),
    ("-@claude", None),
    ("see https://example.com/@claude", None),
    ("@claudebot describe", None),
    ("@claude-ci describe", None),
    ("@claude_x", None),
    ("@claude.ai", None),
    ("@claud", None),
    ("claude describe", None),
    # fenced code: backticks, tildes, indentation, nesting, unclosed
    ("```\n@claude describe\n```", None),
    ("~~~\n@claude describe\n~~~", None),
    ("   ```\n@claude\n   ```", None),
    ("  ~~~ python\n@claude\n  ~~~", None),
    ("````\n```\n@claude\n```\n````", None),
    ("~~~~\n~~~\n@claude\n~~~\n~~~~", None),
    ("```\nunclosed\n\n@claude describe", None),
    ("````\n```\n@claude", None),
    # indented code
    ("    @claude describe", None),
    ("text\n\n    @claude", None),
    ("\t@claude", None),
    # code spans of any backtick run
    ("`@claude`", None),
    ("``@claude``", None),
    ("```@claude```", None),
    ("`` a ` @claude ``", None),
    # blockquotes, nested and indented, lazy continuation
    ("> @claude describe", None),
    ("> > @claude", None),
    ("   > @claude", None),
    ("> quote\n@claude", None),
    ("- > @claude", None),
    # HTML comments; text in raw HTML counts unless under a, code or pre (as GitHub
    # renders it); an entity or escaped @ is decoded before matching, as on GitHub
    ("<!-- @claude describe -->", None),
    ("<!--\n@claude\n-->", None),
    ("text <!-- @claude --> text", None),
    ("<div>\n@claude\n</div>", "review"),
    ("<div>\n@claude describe\n</div>", "describe"),
    ("<code>@claude</code>", None),
    ("<pre>\n@claude\n</pre>", None),
    ('<a href="u">@claude</a>', None),
    ("<p><b>@claude</b> describe</p>", "describe"),
    ("&#64;claude describe", "describe"),
    ("\\@claude describe", "describe"),
    ("@&#8203;claude describe", None),
    ("@<!-- -->claude describe", None),
    # link text, reference links and a link reference definition (spec example 193)
    ("[ask @claude review](https://x.test)", None),
    ("[ask @claude][ref]\n\n[ref]: https://x.test", None),
    ('[foo]: /url\n"title" ok\n    @claude describe', "describe"),
    # autolinks and image alt text are not prose
    ("<https://example.com/@claude>", None),
    ("![@claude](https://example.com/x.png)", None),
    # empty
    ("", None),
]


@pytest.mark.parametrize(("body", "verb"), MENTION_CASES)
def test_mention_table(body: str, verb: str | None) -> None:
    mention = find_mention(body, HANDLE, verbs=VERBS, default_verb=DEFAULT_VERB)
    assert (mention.verb if mention else None) == verb


@pytest.mark.parametrize(("body", "verb"), MENTION_CASES)
def test_without_verbs_a_mention_has_no_verb(body: str, verb: str | None) -> None:
    # The engine has no verb of its own: with none configured every mention found has
    # verb None, and the same bodies count as mentions.
    mention = find_mention(body, HANDLE)
    assert (mention is not None) == (verb is not None)
    assert mention is None or mention.verb is None


def test_verbs_are_the_schedules_own_words() -> None:
    verbs = frozenset({"deploy", "summarise"})
    found = find_mention("@claude Deploy now", HANDLE, verbs=verbs, default_verb="go")
    assert found is not None and (found.verb, found.word) == ("deploy", "deploy")
    other = find_mention("@claude describe", HANDLE, verbs=verbs, default_verb="go")
    assert other is not None and (other.verb, other.word) == ("go", "describe")
    bare = find_mention("@claude", HANDLE, verbs=verbs)
    assert bare is not None and (bare.verb, bare.word) == (None, "")


def test_a_verb_is_one_word_case_folded() -> None:
    assert validate_verb("Describe") == "describe"
    for bad in ["", "two words", "-x", "a-b", 3, None, "x\n"]:
        with pytest.raises(InvalidInput) as caught:
            validate_verb(bad)
        assert caught.value.reason == "invalid_verb"


def test_mention_table_is_big_enough() -> None:
    assert len(MENTION_CASES) >= 40


def test_handle_is_configurable_and_validated() -> None:
    assert find_mention("@octo-bot describe", "octo-bot") is not None
    assert find_mention("@claude describe", "octo-bot") is None
    for bad in ["@claude", "", "-x", "x-", "a--b", "a b", "x" * 40, "claude[bot]"]:
        with pytest.raises(InvalidInput) as caught:
            validate_handle(bad)
        assert caught.value.reason == "invalid_handle"


def _lines(text: str) -> list[str]:
    return re.split(r"\r\n?|\n", text)


def _longest_run(text: str, char: str) -> int:
    return max((len(run) for run in re.findall(f"{re.escape(char)}+", text)), default=0)


@settings(max_examples=150, deadline=None)
@given(st.text(), st.sampled_from(["`", "~"]))
def test_handle_in_a_fence_never_counts(text: str, char: str) -> None:
    fence = char * max(3, _longest_run(text, char) + 1)
    body = f"{fence}\n{text}\n@claude describe {text}\n{fence}\n"
    assert find_mention(body, HANDLE) is None


@settings(max_examples=150, deadline=None)
@given(st.text())
def test_handle_in_indented_code_never_counts(text: str) -> None:
    lines = [*_lines(text), "@claude describe", *_lines(text)]
    body = "\n".join("    " + line for line in lines)
    assert find_mention(body, HANDLE) is None


@settings(max_examples=150, deadline=None)
@given(st.text().map(lambda t: re.sub(r"[`\r\n]", "", t)), st.integers(1, 3))
def test_handle_in_a_code_span_never_counts(text: str, run: int) -> None:
    ticks = "`" * run
    body = f"{ticks} {text} @claude describe {text} {ticks}"
    assert find_mention(body, HANDLE) is None


@settings(max_examples=150, deadline=None)
@given(st.text(), st.integers(0, 3), st.integers(1, 3))
def test_handle_in_a_blockquote_never_counts(text: str, indent: int, depth: int) -> None:
    prefix = " " * indent + "> " * depth
    lines = [*_lines(text), "@claude describe", *_lines(text)]
    body = "\n".join(prefix + line for line in lines)
    assert find_mention(body, HANDLE) is None


@settings(max_examples=150, deadline=None)
@given(st.text().map(lambda t: t.replace("-->", "")))
def test_handle_in_an_html_comment_never_counts(text: str) -> None:
    body = f"<!-- {text}\n@claude describe {text} -->"
    assert find_mention(body, HANDLE) is None


# --- allowlist ---------------------------------------------------------------------


def test_allowlist_accepts_positive_ints() -> None:
    assert parse_allowlist([1, 583231, 1]) == frozenset({1, 583231})
    assert parse_allowlist([]) == frozenset()


@pytest.mark.parametrize("bad", ["octocat", 0, -1, True, False, 1.5, "--5", "5", None])
def test_allowlist_config_errors(bad: object) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_allowlist([1, bad])
    assert caught.value.reason == "allowlist_config_error"
    assert repr(bad) in caught.value.message
    assert "\n" not in caught.value.message


@pytest.mark.parametrize("bad", ["1,2", 5, None, {"a": 1}])
def test_allowlist_must_be_a_list(bad: object) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_allowlist(bad)
    assert caught.value.reason == "allowlist_config_error"


# --- classifier --------------------------------------------------------------------


def state(**changes: Any) -> TriggerState:
    values: dict[str, Any] = {
        "pr_watermark": T0,
        "comments_watermark": T0,
        "open_prs": frozenset({7}),
        "handle": HANDLE,
        "allowlist": frozenset({MAINTAINER_ID, AGENT_ID}),
        "verbs": VERBS,
        "default_verb": DEFAULT_VERB,
    }
    values.update(changes)
    return TriggerState(**values)


def comment(**changes: Any) -> CommentItem:
    values: dict[str, Any] = {
        "id": 55,
        "node_id": "IC_55",
        "body": "@claude describe",
        "user_login": "maintainer",
        "user_id": MAINTAINER_ID,
        "user_type": "User",
        "created_at": T0 - timedelta(days=3),
        "updated_at": T0 + timedelta(seconds=5),
        "pr_number": 7,
        "kind": "issue",
    }
    values.update(changes)
    return CommentItem(**values)


def pull(**changes: Any) -> PullItem:
    values: dict[str, Any] = {
        "number": 7,
        "state": "open",
        "draft": False,
        "user_login": "maintainer",
        "user_id": MAINTAINER_ID,
        "user_type": "User",
        "created_at": T0 + timedelta(seconds=5),
        "head_sha": "abc123",
    }
    values.update(changes)
    return PullItem(**values)


def test_comment_accepted_as_mention() -> None:
    decision = classify_comment(comment(), REPO, state())
    assert decision.accept
    assert decision.reason == "accepted"
    assert decision.event == "mention"
    assert decision.dedupe_key == "mention:octo/app:7:55"
    assert decision.verb == "describe"


@pytest.mark.parametrize(
    ("item", "trigger_state", "reason"),
    [
        (comment(updated_at=T0 - timedelta(seconds=1)), state(), "not_fresh"),
        (comment(pr_number=8), state(), "pr_not_open"),
        (comment(user_type="Bot", user_login="ci"), state(), "bot_commenter"),
        (comment(user_login="helper[bot]"), state(), "bot_commenter"),
        (comment(body="LGTM"), state(), "no_mention"),
        (comment(body="```\n@claude\n```"), state(), "no_mention"),
        (comment(user_id=202), state(), "commenter_not_allowlisted"),
        # freshness first: stale, on a closed PR, by a non-allowlisted bot
        (
            comment(
                updated_at=T0 - timedelta(hours=1),
                pr_number=8,
                user_type="Bot",
                user_login="x[bot]",
                user_id=303,
            ),
            state(),
            "not_fresh",
        ),
        # order: closed PR before bot, bot before mention
        (comment(pr_number=8, user_type="Bot"), state(), "pr_not_open"),
        (comment(user_type="Bot", user_id=AGENT_ID), state(), "bot_commenter"),
        (comment(user_id=AGENT_ID, body="nothing"), state(), "no_mention"),
        (comment(user_id=202, body="nothing"), state(), "no_mention"),
    ],
)
def test_comment_rejections(item: CommentItem, trigger_state: TriggerState, reason: str) -> None:
    decision = classify_comment(item, REPO, trigger_state)
    assert not decision.accept
    assert decision.reason == reason
    assert decision.event is None and decision.dedupe_key is None and decision.verb is None


def test_boundary_second_is_reoffered() -> None:
    assert classify_comment(comment(updated_at=T0), REPO, state()).accept
    assert classify_pull(pull(created_at=T0), REPO, state()).accept


def test_no_watermark_means_everything_is_fresh() -> None:
    old = T0 - timedelta(days=365)
    fresh_state = state(pr_watermark=None, comments_watermark=None)
    assert classify_comment(comment(updated_at=old), REPO, fresh_state).accept
    assert classify_pull(pull(created_at=old), REPO, fresh_state).accept


def test_edited_old_comment_is_fresh_by_updated_at() -> None:
    edited = comment(created_at=T0 - timedelta(days=30), updated_at=T0 + timedelta(hours=1))
    assert classify_comment(edited, REPO, state()).accept


def test_unknown_open_pr_set_turns_the_filter_off() -> None:
    decision = classify_comment(comment(pr_number=12345), REPO, state(open_prs=None))
    assert decision.accept
    assert decision.dedupe_key == "mention:octo/app:12345:55"


def test_the_agents_own_account_can_summon_a_review() -> None:
    # A single-maintainer repository: the maintainer's account is the one the agent
    # posts from. The engine does not reject by account; kdev skips only the comment
    # ids it posted itself (skipped_self_comment).
    mine = comment(user_id=AGENT_ID, user_login="agent", body="@claude review")
    decision = classify_comment(mine, REPO, state())
    assert decision.accept and decision.verb == "review"
    assert "self_comment" not in {reason.value for reason in Reason}


def test_impostor_with_a_freed_login_is_rejected() -> None:
    # "maintainer" (id 101) renamed; someone else registered the freed login.
    impostor = comment(user_login="maintainer", user_id=4242)
    assert classify_comment(impostor, REPO, state()).reason == "commenter_not_allowlisted"
    assert classify_pull(pull(user_id=4242), REPO, state()).reason == "author_not_allowlisted"


def test_dedupe_key_ignores_edits_and_pushes() -> None:
    first = classify_comment(comment(), REPO, state())
    edited = classify_comment(comment(updated_at=T0 + timedelta(hours=2)), REPO, state())
    assert first.dedupe_key == edited.dedupe_key


def test_pull_accepted_as_pr_opened() -> None:
    decision = classify_pull(pull(), REPO, state())
    assert decision.accept
    assert decision.event == "pr_opened"
    assert decision.dedupe_key == "pr_opened:octo/app:7:abc123"
    assert decision.verb is None


@pytest.mark.parametrize(
    ("item", "reason"),
    [
        (pull(created_at=T0 - timedelta(seconds=1)), "not_fresh"),
        (pull(state="closed"), "pr_not_open"),
        (pull(user_type="Bot", user_login="dependabot"), "bot_author"),
        (pull(user_login="renovate[bot]"), "bot_author"),
        (pull(draft=True), "draft"),
        (pull(user_id=202), "author_not_allowlisted"),
        # precedence: stale draft by a bot is not_fresh; a bot's draft is bot_author
        (pull(created_at=T0 - timedelta(days=1), draft=True, user_type="Bot"), "not_fresh"),
        (pull(draft=True, user_type="Bot"), "bot_author"),
        (pull(draft=True, user_id=202), "draft"),
    ],
)
def test_pull_rejections(item: PullItem, reason: str) -> None:
    decision = classify_pull(item, REPO, state())
    assert not decision.accept
    assert decision.reason == reason


def test_pull_ignores_comment_watermark_and_open_set() -> None:
    trigger_state = state(comments_watermark=T0 + timedelta(days=1), open_prs=frozenset())
    assert classify_pull(pull(), REPO, trigger_state).accept


def test_every_reason_accepted_included_is_logged_at_debug() -> None:
    assert set(REASON_LOG_LEVELS) == set(Reason)
    assert set(REASON_LOG_LEVELS.values()) == {logging.DEBUG}


# --- watermarks --------------------------------------------------------------------


def test_watermark_moves_to_newest_seen() -> None:
    seen = [T0 + timedelta(seconds=3), T0 + timedelta(seconds=9), T0 + timedelta(seconds=1)]
    assert advance_watermark(T0, seen) == T0 + timedelta(seconds=9)
    assert advance_watermark(None, seen) == T0 + timedelta(seconds=9)


def test_watermark_is_forward_only() -> None:
    assert advance_watermark(T0, [T0 - timedelta(days=1)]) == T0
    assert advance_watermark(T0, []) == T0
    assert advance_watermark(None, []) is None


def test_watermark_requires_aware_timestamps() -> None:
    naive = datetime(2026, 1, 1, 12, 0, 0)
    with pytest.raises(ValueError):
        advance_watermark(T0, [naive])
    with pytest.raises(ValueError):
        advance_watermark(naive, [])


# --- payloads ----------------------------------------------------------------------


def _fixture(name: str) -> dict[str, Any]:
    items: list[dict[str, Any]] = json.loads((FIXTURES / name).read_text())
    return items[0]


def test_issue_comment_payload() -> None:
    item = comment_from_payload(_fixture("issue-comments-list.json"), "issue")
    assert (item.id, item.pr_number, item.kind) == (1, 1347, "issue")
    assert (item.user_login, item.user_id, item.user_type) == ("octocat", 1, "User")
    assert item.body == "Me too"
    assert item.updated_at == datetime(2011, 4, 14, 16, 0, 49, tzinfo=UTC)


def test_diff_comment_payload() -> None:
    item = comment_from_payload(_fixture("review-comments-list.json"), "diff")
    assert (item.id, item.pr_number, item.kind) == (10, 1, "diff")
    assert item.node_id.startswith("MDI0")


def test_ghost_user_is_a_payload_error() -> None:
    raw = {**_fixture("issue-comments-list.json"), "user": None}
    with pytest.raises(PayloadError) as caught:
        comment_from_payload(raw, "issue")
    assert caught.value.reason == "ghost_user"
    assert caught.value.item_id == 1
    assert isinstance(caught.value, ValueError)


def test_null_body_reads_as_empty() -> None:
    raw = {**_fixture("issue-comments-list.json"), "body": None}
    assert comment_from_payload(raw, "issue").body == ""


@pytest.mark.parametrize(
    ("changes", "kind"),
    [
        ({"id": "1"}, "issue"),
        ({"id": True}, "issue"),
        ({"updated_at": "yesterday"}, "issue"),
        ({"updated_at": "2011-04-14T16:00:49"}, "issue"),
        ({"issue_url": "https://api.github.com/repos/o/r/issues/x"}, "issue"),
        ({"user": {"login": "a", "id": "1", "type": "User"}}, "issue"),
        ({"pull_request_url": None}, "diff"),
    ],
)
def test_malformed_payloads(changes: dict[str, Any], kind: Any) -> None:
    fixture = "issue-comments-list.json" if kind == "issue" else "review-comments-list.json"
    raw = {**_fixture(fixture), **changes}
    with pytest.raises(PayloadError) as caught:
        comment_from_payload(raw, kind)
    assert caught.value.reason == "malformed_payload"


def test_non_object_payload() -> None:
    with pytest.raises(PayloadError) as caught:
        comment_from_payload(["not", "an", "object"], "issue")
    assert caught.value.reason == "malformed_payload"


def test_the_classifier_takes_the_verb_from_the_state_only() -> None:
    bare = classify_comment(comment(), REPO, state(verbs=frozenset(), default_verb=None))
    assert bare.accept and bare.verb is None
    own = classify_comment(comment(body="@claude deploy"), REPO, state(verbs=frozenset({"deploy"})))
    assert own.accept and own.verb == "deploy"
