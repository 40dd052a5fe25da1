"""Priority triage on real-looking bodies from each review bot (pure, no I/O): issue 29's
table (docs/priorities.md)."""

from __future__ import annotations

import pytest

from wrapper.authorloop.feedback import build_feedback, summarise
from wrapper.authorloop.threads import ReviewThread
from wrapper.authorloop.triage import Basis, Priority, Source, classify, detect_source, triage

GEMINI_CRITICAL = """![critical](https://www.gstatic.com/codereviewagent/critical.svg)

The SQL query is built with an f-string from `user_id`, which comes straight from the
request. This allows SQL injection.

```suggestion
cursor.execute("SELECT * FROM users WHERE id = %s", (user_id,))
```"""

GEMINI_HIGH = """![high](https://www.gstatic.com/codereviewagent/high-priority.svg)

`close()` is never called on the file handle when `parse()` raises, so the descriptor
leaks under load. Consider a `with` block."""

GEMINI_MEDIUM_SERIOUS = """![medium](https://www.gstatic.com/codereviewagent/medium-priority.svg)

This `except Exception: pass` swallows the timeout, so the caller never learns the
upload failed. The error handling here should at least log and re-raise."""

GEMINI_MEDIUM_STYLE = """![medium](https://www.gstatic.com/codereviewagent/medium-priority.svg)

For readability, consider extracting this loop into a helper named `_collect_rows`."""

GEMINI_LOW = """![low](https://www.gstatic.com/codereviewagent/low-priority.svg)

Nit: the docstring says "retuns"."""

BUGBOT_HIGH = """### Bug: Cache Key Ignores Token Scope

<!-- **High Severity** -->

<!-- DESCRIPTION START -->
The cache key is built from the URL only, so two tokens share cached bodies and one
user can read another's private listing.
<!-- DESCRIPTION END -->

<!-- BUGBOT_BUG_ID: 3f1c2a9e-0b7d-4d55-9a57-8f0e2d1c6b11 -->

[Fix in Cursor](https://cursor.com/open?data=abc) • [Fix in Web](https://cursor.com/agents?id=1)"""

BUGBOT_MEDIUM = """### Bug: Retry Counter Never Resets

<!-- **Medium Severity** -->

<!-- DESCRIPTION START -->
After one successful call the retry counter keeps its value.
<!-- DESCRIPTION END -->"""

CLAUDE_CRITICAL = """## Code Review

### Critical Issues

🚨 **Race in `claim()`**: two workers can both read `lease_until` as expired and both
claim the job; the UPDATE needs a `WHERE lease_owner IS NULL` guard.

### Suggestions
- Rename `tmp2` to `pending_rows`."""

CLAUDE_WARNING_SERIOUS = """⚠️ **Potential issue**: renaming `--reviews` to `--reviews-dir` is a
breaking change for existing cron entries; keep the old flag as an alias."""

CLAUDE_WARNING_STYLE = (
    """⚠️ Minor: this function is getting long (80 lines); consider splitting it."""
)

HUMAN_SERIOUS = "This returns the wrong value when the list is empty (off-by-one on line 12)."
HUMAN_NIT = "Could we name this `deadline` instead of `t`?"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (GEMINI_CRITICAL, Priority.P1),
        (GEMINI_HIGH, Priority.P2),  # high blocks (P1/P2): P2
        (GEMINI_MEDIUM_SERIOUS, Priority.P2),
        # Gemini's medium is decided by content: error handling blocks, readability not
        (GEMINI_MEDIUM_STYLE, Priority.P3),
        (GEMINI_LOW, Priority.P3),
        (BUGBOT_HIGH, Priority.P1),
        (BUGBOT_MEDIUM, Priority.P2),  # "### Bug:" blocks whatever the severity
        (CLAUDE_CRITICAL, Priority.P1),
        (CLAUDE_WARNING_SERIOUS, Priority.P2),
        (CLAUDE_WARNING_STYLE, Priority.P3),
        (HUMAN_SERIOUS, Priority.P2),
        (HUMAN_NIT, Priority.P3),
        ("", Priority.P3),
    ],
)
def test_priority_of_real_bodies(body: str, expected: Priority) -> None:
    assert classify(body) == expected


def test_bugbot_high_severity_outside_a_comment_counts_too() -> None:
    assert classify("**High Severity**\n\nThe lock is never released.") == Priority.P1


def test_changes_requested_summary_is_at_least_p2() -> None:
    assert classify("Please split this PR.", review_state="CHANGES_REQUESTED") == Priority.P2
    assert classify("Please split this PR.", review_state="APPROVED") == Priority.P3


@pytest.mark.parametrize(
    ("login", "kind", "source"),
    [
        ("gemini-code-assist[bot]", "Bot", Source.GEMINI),
        ("cursor[bot]", "Bot", Source.BUGBOT),
        ("claude[bot]", "Bot", Source.CLAUDE),
        ("dependabot[bot]", "Bot", Source.BOT),
        ("renovate", "Bot", Source.BOT),
        ("alice", "User", Source.HUMAN),
        (None, None, Source.HUMAN),
    ],
)
def test_source_by_login(login: str | None, kind: str | None, source: Source) -> None:
    assert detect_source(login, kind) == source


def _comment(i: int, login: str, body: str, **extra: object) -> dict[str, object]:
    return {
        "id": i,
        "node_id": f"N{i}",
        "user": {"login": login, "type": "Bot" if login.endswith("[bot]") else "User"},
        "body": body,
        "created_at": f"2024-05-01T00:00:{i:02d}Z",
        **extra,
    }


def test_build_feedback_and_summary_by_priority_and_file() -> None:
    issue = [_comment(1, "claude[bot]", CLAUDE_CRITICAL)]
    inline = [
        _comment(2, "gemini-code-assist[bot]", GEMINI_HIGH, path="src/io.py", line=4),
        _comment(3, "alice", "Agreed.", path="src/io.py", line=4, in_reply_to_id=2),
        _comment(4, "cursor[bot]", BUGBOT_HIGH, path="src/cache.py", line=9),
    ]
    reviews = [
        {"id": 5, "node_id": "R5", "user": {"login": "bob"}, "state": "COMMENTED", "body": ""},
        {
            "id": 6,
            "node_id": "R6",
            "user": {"login": "bob"},
            "state": "APPROVED",
            "body": "LGTM",
            "submitted_at": "2024-05-01T00:01:00Z",
        },
    ]
    threads = [
        ReviewThread("T2", True, "src/io.py", 4, "N2", 2, 2),
        ReviewThread("T4", False, "src/cache.py", 9, "N4", 4, 1),
    ]
    items = build_feedback(issue, inline, reviews, threads)
    assert [(i.kind, i.id, i.priority.value) for i in items] == [
        ("issue", 1, "P1"),
        ("inline", 2, "P2"),
        ("inline", 4, "P1"),
        ("review", 6, "P3"),
    ]
    assert items[1].replies == 1 and items[1].resolved is True and items[2].resolved is False
    report = summarise("o/r", 1, items, open_threads=1)
    assert report.by_priority == {"P1": 2, "P2": 1, "P3": 1}
    assert report.by_source == {"claude": 1, "gemini": 1, "bugbot": 1, "human": 1}
    assert report.by_file["src/cache.py"] == {"P1": 1, "P2": 0, "P3": 0}
    assert report.by_file["(conversation)"] == {"P1": 1, "P2": 0, "P3": 1}


# --- the table's markers, and each vendor's mapped into it (issue 29) ---------------------

MARKER_CASES = [
    ("_⚠️ Potential issue_ | _🔴 Critical_\n\n**Renames the working dir.**", "P1"),
    ("_⚠️ Potential issue_ | _🟠 Major_\n\n**Missing await.**", "P2"),
    ("_⚠️ Potential issue_ | _🟡 Minor_\n\n**SQL injection in a test fixture.**", "P3"),
    ("_🛠️ Refactor suggestion_\n\nThis crashes nothing; extract a helper.", "P3"),
    ("<summary>🧹 Nitpick comments (2)</summary> a race condition, nit", "P3"),
    ("![critical](https://www.gstatic.com/codereviewagent/critical.svg)\n\nx", "P1"),
    ("![security-high](https://www.gstatic.com/codereviewagent/security-high-priority.svg)", "P2"),
    ("![low](https://www.gstatic.com/codereviewagent/low-priority.svg) data loss", "P3"),
    ("### Typo in log\n\n**Low Severity**\n\nA crash message is misspelled.", "P3"),
    ("**<sub><sub>![P1 Badge](https://img.shields.io/badge/P1-orange)</sub></sub> X**", "P1"),
    ("**<sub><sub>![P3 Badge](https://img.shields.io/badge/P3-blue)</sub></sub> X**", "P3"),
    ("<h3>Greptile Summary</h3>\n\nConfidence Score: 2/5\n\nThe PR is not safe to merge.", "P2"),
    ("[nitpick] The variable name could be clearer; it will fail nothing.", "P3"),
    ("🔴 **Important**: the lock is taken twice.", "P2"),
    ("🟡 **Nit**: this crashes nothing, rename it.", "P3"),
    ("🟣 **Pre-existing**: `parse()` already crashes on empty input.", "P3"),
    ("**suggestion (testing):** Add a test for the race condition.", "P3"),
]


@pytest.mark.parametrize(("body", "expected"), MARKER_CASES)
def test_a_decisive_marker_wins_over_the_content(body: str, expected: str) -> None:
    decided = triage(body)
    assert decided.priority == expected
    assert decided.basis == Basis.MARKER and decided.marker
    assert decided.rule.startswith("marker:")


CONTENT_CASES = [
    # Gemini's medium, Claude's warning, Bugbot's Medium, a CodeRabbit issue without a
    # severity and Sourcery's issue are read by content.
    ("![medium](https://www.gstatic.com/codereviewagent/medium-priority.svg) style", "P3", "style"),
    (
        "![medium](https://www.gstatic.com/codereviewagent/medium-priority.svg) This "
        "interpolates the name into the query: a SQL injection.",
        "P2",
        "security",
    ),
    (
        "### Lock kept\n\n**Medium Severity**\n\nA crash follows the second call.",
        "P2",
        "correctness",
    ),
    ("_⚠️ Potential issue_\n\n**Wrong result for an empty list.**", "P2", "correctness"),
    (
        "**issue (bug_risk):** The file is deleted before the retry, so data loss.",
        "P2",
        "data-loss",
    ),
    ("⚠️ The new flag name is a breaking change for every existing cron entry.", "P1", "breaking"),
    # Codex's P2 ("Normal. To be fixed eventually", its own review prompt) and Greptile's P2
    # are medium levels (D108); the badge's own URL ("?style=flat") is not read as words.
    (
        "**<sub><sub>![P2 Badge](https://img.shields.io/badge/P2-yellow?style=flat)</sub></sub>"
        "  Rename the helper**\n\nThe name `tmp2` says nothing.",
        "P3",
        "style",
    ),
    (
        "**<sub><sub>![P2 Badge](https://img.shields.io/badge/P2-yellow?style=flat)</sub></sub>"
        "  Guard the empty list**\n\nAn empty list raises an IndexError here.",
        "P2",
        "correctness",
    ),
    (
        '<img alt="P2" src="https://greptile-static-assets.s3.amazonaws.com/badges/p2.svg?v=9"> '
        "**Typo in the log line**",
        "P3",
        "style",
    ),
]


def test_a_p2_badge_alone_is_ambiguous_not_optional() -> None:
    # With no words to read, a Codex or Greptile P2 is the first-round default (P2), never
    # P3: the medium level lets the content decide, and no content decides nothing.
    for body in (
        # The badge as Codex posts it: "?style=flat" in its URL must not read as "style".
        "**<sub><sub>![P2 Badge](https://img.shields.io/badge/P2-yellow?style=flat)</sub></sub>"
        "  Handle the second mount**\n\nClosing one of two mounts tears down the other.",
        '<img alt="P2" src="https://greptile-static-assets.s3.amazonaws.com/badges/p2.svg"> x',
    ):
        decided = triage(body)
        assert (decided.priority, decided.rule) == ("P2", "default:first-round-ambiguous")
        assert triage(body, first_round=False).priority == "P3"


@pytest.mark.parametrize(("body", "expected", "category"), CONTENT_CASES)
def test_a_content_marker_leaves_the_decision_to_the_content(
    body: str, expected: str, category: str
) -> None:
    decided = triage(body)
    assert (decided.priority, decided.basis) == (expected, Basis.CONTENT)
    assert decided.rule == f"content:{category}" and decided.marker


def test_ambiguous_content_is_p2_on_the_first_round_and_p3_after() -> None:
    body = "_⚠️ Potential issue_\n\n**Off by one.**"
    first = triage(body)
    assert (first.priority, first.basis) == (Priority.P2, Basis.DEFAULT)
    assert first.rule == "default:first-round-ambiguous" and first.blocking
    later = triage(body, first_round=False)
    assert (later.priority, later.rule) == (Priority.P3, "default:later-round-ambiguous")


def test_a_vendors_fixed_wording_is_not_read_as_content() -> None:
    """Qodo calls every suggestion "optional" and lists "No security concerns
    identified": neither softens a finding nor raises one."""
    suggestion = (
        "## PR Code Suggestions ✨\n\nExplore these optional code suggestions:\n\n"
        "**Escape the message to prevent XSS attacks.**"
    )
    assert triage(suggestion).rule == "content:security"
    guide = (
        "## PR Reviewer Guide 🔍\n\n<tr><td>🔒&nbsp;<strong>No security concerns identified"
        "</strong></td></tr>\n\nThe partials are tightly coupled; hard to maintain."
    )
    assert (triage(guide).priority, triage(guide).rule) == (Priority.P3, "content:style")


@pytest.mark.parametrize(
    ("body", "basis"),
    [
        ("Nit (test only): this assertion gives a false sense of security.", Basis.CONTENT),
        ("In this test helper the mock appears to have a bug in its name; nit.", Basis.CONTENT),
        ("This gives a false sense of security; consider a stricter assert.", Basis.CONTENT),
        ("Consider renaming `x`; the security of this is fine.", Basis.CONTENT),
        ("The mock helper raises a TypeError when it is called twice.", Basis.CONTENT),
        # service notices and empty reviews are summaries
        ("You have reached your daily quota limit. Please wait up to 24 hours.", Basis.SUMMARY),
        ("`octo` has reached the 50-review limit for trial accounts.", Basis.SUMMARY),
        ("⚠️ **Code review skipped** — your overage spend limit has been reached.", Basis.SUMMARY),
        ("## PR Code Suggestions ✨\n\nNo code suggestions found for the PR.", Basis.SUMMARY),
    ],
)
def test_style_test_code_and_service_notices_are_p3(body: str, basis: Basis) -> None:
    decided = triage(body)
    assert decided.priority == Priority.P3 and decided.basis == basis


def test_an_unknown_bot_is_read_by_content_and_says_so() -> None:
    body = "This deletes the cache before the write, so a crash causes data loss."
    decided = triage(body)
    assert (decided.priority, decided.basis) == (Priority.P2, Basis.CONTENT)
    [item] = build_feedback([_comment(1, "some-reviewer[bot]", body)], [], [], [])
    shown = item.to_json()
    assert shown["source"] == "bot" and shown["priority_source"] == "content:data-loss"
    assert shown["marker"] is None


def test_the_json_form_keeps_its_keys_and_their_order() -> None:
    """``kdev comments --json``: the keys of an item and of the report, in the order they
    were written by hand before the dataclasses' own order gave them (issue 26)."""
    [item] = build_feedback([_comment(1, "coderabbitai[bot]", "a nit")], [], [], [])
    assert list(item.to_json()) == [
        "kind", "id", "node_id", "user", "source", "priority", "priority_source", "marker",
        "path", "line", "state", "thread_id", "resolved", "replies", "agent", "own_finding",
        "validation", "created_at", "body",
    ]  # fmt: skip
    report = summarise("octo/widgets", 5, [item], 0).to_json()
    assert list(report) == [
        "repo", "pr", "by_priority", "by_source", "by_file", "open_threads", "items"
    ]  # fmt: skip
    assert report["items"] == [item.to_json()] and report["by_priority"]["P3"] == 1


def test_the_json_names_the_deciding_rule_and_marker() -> None:
    body = "_⚠️ Potential issue_ | _🔴 Critical_\n\nThis is a nit, but a data loss."
    [item] = build_feedback([_comment(1, "coderabbitai[bot]", body)], [], [], [])
    shown = item.to_json()
    assert shown["source"] == "coderabbit" and shown["priority"] == "P1"
    assert shown["priority_source"] == "marker:coderabbit-critical"
    assert shown["marker"] == "coderabbit-critical: _🔴 Critical_"


@pytest.mark.parametrize(
    ("login", "source"),
    [
        ("coderabbitai[bot]", Source.CODERABBIT),
        ("chatgpt-codex-connector[bot]", Source.CODEX),
        ("greptile-apps[bot]", Source.GREPTILE),
        ("Copilot", Source.COPILOT),
        ("copilot-pull-request-reviewer[bot]", Source.COPILOT),
        ("qodo-merge-pro[bot]", Source.QODO),
        ("sourcery-ai[bot]", Source.SOURCERY),
    ],
)
def test_new_bot_sources(login: str, source: Source) -> None:
    assert detect_source(login, "Bot") == source


# Formats read since the corpus grew to 76 real comments (tests/data/bot_comments.json).
CODERABBIT_REFACTOR_MAJOR = """_🛠️ Refactor suggestion_ | _🟠 Major_

**Wrap the session lookup failure with session context.**

Returning `client.GetSession` errors verbatim loses which lookup failed."""

CODERABBIT_SUMMARY_WITH_CRITICAL = """**Actionable comments posted: 1**

<details>
<summary>🧹 Nitpick comments (2)</summary>
</details>

_⚠️ Potential issue_ | _🔴 Critical_

**The migration drops the users table.**"""


def test_a_coderabbit_refactor_header_caps_its_severity_pill() -> None:
    decided = triage(CODERABBIT_REFACTOR_MAJOR)
    assert (decided.priority, decided.basis) == (Priority.P3, Basis.MARKER)
    assert decided.marker is not None and decided.marker.startswith("coderabbit-kind:")
    assert "_🟠 Major_" in decided.marker
    nitpick = triage("_🧹 Nitpick_ | _🟡 Minor_\n\nRename `x`.")
    assert nitpick.priority == Priority.P3


def test_only_the_header_kind_caps_so_a_summary_keeps_its_critical_finding() -> None:
    decided = triage(CODERABBIT_SUMMARY_WITH_CRITICAL)
    assert (decided.priority, decided.basis) == (Priority.P1, Basis.MARKER)
    issue = "_⚠️ Potential issue_ | _🟠 Major_\n\n**Refactor suggestion** follows."
    assert triage(issue).priority == Priority.P2


def test_the_copilot_verdict_line_leaves_the_decision_to_the_content() -> None:
    body = "### 🟡 Changes recommended\n\nThe hook fails on macOS, where Bash 3.2 is installed."
    decided = triage(body)
    assert (decided.priority, decided.basis) == (Priority.P2, Basis.CONTENT)
    assert decided.marker == "copilot-changes-recommended: ### 🟡 Changes recommended"


def test_the_new_greptile_summary_is_a_summary() -> None:
    body = "<!-- greptile_summary -->\n\n<h2>Confidence Score: 5/5</h2>\n\nNo crash remains."
    assert triage(body).basis == Basis.SUMMARY
    assert triage(body).priority == Priority.P3


@pytest.mark.parametrize(
    "body",
    [
        "Calling .toLowerCase() on it will cause a runtime error if the value is a number.",
        "Contributors on older Bash will get confusing syntax errors during `git commit`.",
        "So a lower-TCB report can silently become the approved floor.",
        "A malformed entry bypasses the expiry guard.",
        "So a launch using a different runtime artifact can pass the approval step.",
    ],
)
def test_the_content_reads_concrete_failures_written_by_copilot(body: str) -> None:
    decided = triage(body)
    assert decided.blocking and decided.basis == Basis.CONTENT
    assert decided.rule.startswith("content:")


@pytest.mark.parametrize(
    "body",
    [
        "The job runs silently in the background; consider a log line.",
        "The approval step passes now, thanks.",
        "Nit: this could raise a runtime error in theory, but only in tests.",
    ],
)
def test_the_content_rubric_stays_conservative(body: str) -> None:
    assert triage(body).priority == Priority.P3


@pytest.mark.parametrize(
    "body",
    [
        "Codex Review: Didn't find any major issues. Bravo.\n\nIf Codex has suggestions, it "
        "will comment; otherwise it will react with 👍.",
        "Cursor Bugbot has reviewed your changes and found 1 potential issue.\n\n<sup>Bugbot "
        "Autofix is OFF.</sup>",
    ],
)
def test_a_no_findings_review_and_a_bugbot_count_are_summaries(body: str) -> None:
    # D113: the count's finding is its own inline comment; the summary asks for nothing.
    decided = triage(body)
    assert (decided.priority, decided.basis, decided.rule) == (
        Priority.P3,
        Basis.SUMMARY,
        "summary",
    )


@pytest.mark.parametrize(
    "body",
    [
        "That context resolves the concern. Failing closed is correct here. I'm withdrawing "
        "this finding; no code change is needed.",
        "That context changes the assessment: the token is never read, so this cannot leak "
        "a credential. Consider this comment resolved.",
    ],
)
def test_a_reviewer_withdrawing_its_own_finding_does_not_block(body: str) -> None:
    # Even when the withdrawal names the problem it withdraws ("leak a credential").
    decided = triage(body)
    assert (decided.priority, decided.rule) == (Priority.P3, "content:withdrawn")


@pytest.mark.parametrize(
    ("body", "category"),
    [
        ("This cleanup job can delete unrelated merged branches.", "data-loss"),
        ("A multi-line hint can inject extra headings into the prompt.", "security"),
        ("Substring matching gives false positives for ordinary words.", "correctness"),
        ("The plan targets `src/physics_core/`, but that directory does not exist.", "correctness"),
        ("Following the hint leads to another failure instead of recovery.", "correctness"),
        ("A malformed catalog silently selects the last duplicate.", "correctness"),
        ("There are a few concrete correctness/composability issues to fix.", "correctness"),
    ],
)
def test_the_content_reads_consequences_named_in_other_words(body: str, category: str) -> None:
    decided = triage(body)
    assert decided.blocking and decided.rule == f"content:{category}"
