"""A roster round rendered as one review (D90), pure: where each finding goes, the
reviewer each line comment is signed for, and a summary that stays within its budget."""

from __future__ import annotations

from wrapper.gh_reviews import LineComment
from wrapper.review.findings import Finding
from wrapper.review.review_body import BODY_BUDGET
from wrapper.review.reviewer import ReviewResult
from wrapper.review.roster import build_roster
from wrapper.review.roster_round import roster_payload
from wrapper.review.round_post import FALLBACK_NOTE, _matched

DIFF = """\
diff --git a/app.py b/app.py
index 1111111..2222222 100644
--- a/app.py
+++ b/app.py
@@ -1 +1,2 @@
-print('hi')
+x = 1
+y = 2
"""
PATCH = "ab" * 20
HEAD = "cd" * 20


def _merged(findings: tuple[Finding, ...], verdicts: tuple[str, ...]) -> ReviewResult:
    verdict = "REQUEST_CHANGES" if "REQUEST_CHANGES" in verdicts else "APPROVE"
    return ReviewResult(verdict, "body", "m", findings=findings, verdicts=verdicts)


def test_each_finding_goes_on_its_line_or_in_its_reviewers_section() -> None:
    roster = build_roster({}, ["app.py"])
    names = [r.name for r in roster.reviewers]
    first, second = names[0], names[1]
    findings = (
        Finding(first, "P2", "- P2 app.py:2 shadows", "app.py", 2),
        Finding(second, "P1", "P1 app.py:9 far away", "app.py", 9),
        Finding(second, "P3", "P3 no place"),
        Finding(first, "P1", "P1 app.py:1 bad", "app.py", 1, "INVALID", "no", "withdraw"),
    )
    verdicts = tuple("REQUEST_CHANGES" if n in (first, second) else "APPROVE" for n in names)
    payload = roster_payload(roster, _merged(findings, verdicts), DIFF, PATCH, HEAD)
    assert payload.roster and payload.head_sha == HEAD
    assert [(c["path"], c["line"], c["agent"]) for c in payload.comments] == [
        ("app.py", 2, first),
        ("app.py", 1, first),
    ]
    assert payload.comments[0]["body"] == f"**{first}** (P2): - P2 app.py:2 shadows"
    assert [f["comment"] for f in payload.findings] == [0, None, None, 1]
    assert all("text" not in f for f in payload.findings)  # where, not the words
    body = payload.body
    assert body.startswith(
        "**Review: REQUEST_CHANGES** (2 P1, 1 P2, 1 P3; 1 withdrawn by the independent validator)"
    )
    section = body[body.index(f"### `{second}`") :]
    assert "`app.py:9` (not on a line: line 9 is outside the diff's hunks): P1 app.py:9" in section
    assert "2 finding(s), 0 on their line." in section
    # The fallback lists every finding, the withdrawn one saying so.
    assert FALLBACK_NOTE in payload.fallback
    assert "`app.py:1` (GitHub refused the review's line comments) (withdrawn by" in (
        payload.fallback
    )


def test_very_many_findings_keep_the_summary_within_its_budget() -> None:
    roster = build_roster({}, ["app.py"])
    name = roster.reviewers[0].name
    findings = tuple(
        Finding(name, "P3", f"P3 app.py:{n} {'x' * 3000}", "app.py", 100 + n) for n in range(3000)
    )
    verdicts = ("APPROVE",) * len(roster.reviewers)
    payload = roster_payload(roster, _merged(findings, verdicts), DIFF, PATCH, HEAD)
    assert len(payload.body) <= BODY_BUDGET and len(payload.fallback) <= BODY_BUDGET + 200
    assert payload.body.startswith("**Review: APPROVE** (0 P1, 0 P2, 3000 P3)")
    assert "`app.py:100` (not on a line" in payload.body
    assert "more finding(s) not listed here (the verdict file has them)" in payload.body
    few = roster_payload(roster, _merged(findings[:20], verdicts), DIFF, PATCH, HEAD)
    assert "x" * 900 in few.body and "x" * 1001 not in few.body  # each text cut to 1000


def test_posted_comments_are_matched_to_the_sent_ones_by_place_and_body() -> None:
    sent = [
        LineComment("a.py", "same", 3),
        LineComment("a.py", "same", 3),
        LineComment("a.py", "other  \n\n", 3),
        LineComment("b.py", "gone", 1),
        LineComment("c.py", "text", 7),
    ]
    posted = [
        {"id": 10, "node_id": "N10", "path": "a.py", "line": 3, "body": "same"},
        {"id": 11, "node_id": "N11", "path": "a.py", "line": 3, "body": "other"},
        {"id": 12, "path": "a.py", "line": 3, "body": "same"},
        {"id": 13, "node_id": "N13", "path": "c.py", "line": 7, "body": "text, normalised"},
        {"id": True, "path": "b.py", "line": 1, "body": "gone"},  # not an id
    ]
    assert _matched(sent, posted) == ((10, "N10"), (12, None), (11, "N11"), None, (13, "N13"))
