"""Priority triage on real-looking bodies from each review bot (pure, no I/O)."""

from __future__ import annotations

import pytest

from wrapper.feedback import build_feedback, summarise
from wrapper.threads import ReviewThread
from wrapper.triage import Priority, Source, classify, detect_source

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
        (GEMINI_HIGH, Priority.P2),
        (GEMINI_MEDIUM_SERIOUS, Priority.P2),
        (GEMINI_MEDIUM_STYLE, Priority.P3),
        (GEMINI_LOW, Priority.P3),
        (BUGBOT_HIGH, Priority.P1),
        (BUGBOT_MEDIUM, Priority.P2),
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
