"""What one round posts (issue 27, D84): the summary body and the line comments."""

from __future__ import annotations

from typing import Any

import pytest
from markdown_it import MarkdownIt

from wrapper.neutralise import refuse_live_pings
from wrapper.review.anchoring import OUTSIDE_HUNKS, FileDiff, Hunk, place_all
from wrapper.review.findings_contract import (
    LINE_PAST_END,
    MAX_BODY,
    MAX_FINDINGS,
    Finding,
    ParsedReview,
    verdict_of,
)
from wrapper.review.review_body import (
    BODY_BUDGET,
    CUT_NOTE,
    Carried,
    NotReviewed,
    close_fences,
    code_span,
    comment_body,
    fenced,
    render_round,
)

PARSER = MarkdownIt("commonmark")
APP_HUNK = Hunk(1, 10, 1, 12, frozenset({4, 5}))
NEW_HUNK = Hunk(0, 0, 1, 3, frozenset({1, 2, 3}))
FILES = {
    "app.py": FileDiff("app.py", "app.py", "modified", hunks=(APP_HUNK,)),
    "new.py": FileDiff("new.py", None, "added", hunks=(NEW_HUNK,)),
}


def review_of(*findings: Finding, summary: str = "Two things.", **extra: Any) -> ParsedReview:
    return ParsedReview("findings", verdict_of(findings), summary, findings, **extra)


def fences(markdown: str) -> list[tuple[str, str]]:
    """(info, content) of every fenced code block, as a CommonMark renderer sees them."""
    return [(t.info, t.content) for t in PARSER.parse(markdown) if t.type == "fence"]


def texts(markdown: str) -> str:
    """The prose of ``markdown`` outside code blocks."""
    return "\n".join(t.content for t in PARSER.parse(markdown) if t.type == "inline")


INLINE = Finding("app.py", 4, "P1", "Off by one", "The loop stops early.", replacement="x = 1\n")
RANGE = Finding("app.py", 8, "P3", "Name", "A nit.", start_line=6)
OUTSIDE = Finding("app.py", 40, "P2", "Leak", "The file is never closed.")
PAST = Finding("new.py", 9, "P2", "Past", "Hallucinated.", problem=LINE_PAST_END,
               problem_detail="line 9 is past the end of the file (3 lines)")  # fmt: skip


def test_inline_findings_become_create_review_comments() -> None:
    placements = place_all([INLINE, RANGE, OUTSIDE], FILES)
    rendered = render_round(review_of(INLINE, RANGE, OUTSIDE), placements, ["app.py"])
    first, second = rendered.comments
    assert first == {
        "path": "app.py",
        "line": 4,
        "side": "RIGHT",
        "body": "**P1: Off by one**\n\nThe loop stops early.\n\n```suggestion\nx = 1\n```",
    }
    assert {k: v for k, v in second.items() if k != "body"} == {
        "path": "app.py",
        "line": 8,
        "side": "RIGHT",
        "start_line": 6,
        "start_side": "RIGHT",
    }
    assert second["body"] == "**P3: Name**\n\nA nit."
    assert fences(first["body"]) == [("suggestion", "x = 1\n")]


def test_the_summary_has_verdict_counts_files_and_every_unplaced_finding() -> None:
    findings = (INLINE, RANGE, OUTSIDE, PAST)
    rendered = render_round(
        review_of(*findings),
        place_all(findings, FILES),
        ["app.py", "new.py"],
        [NotReviewed("logo.png", "binary"), NotReviewed("big.sql", "over 500 KiB")],
    )
    body = rendered.body
    assert body.startswith("**Review: REQUEST_CHANGES** (1 P1, 2 P2, 1 P3)\n\n")
    assert "- Files reviewed (2): `app.py`, `new.py`" in body
    assert "- Files not reviewed (2): `logo.png` (binary), `big.sql` (over 500 KiB)" in body
    assert "> Two things." in body
    assert "Findings not on a line (2):" in body
    assert "- **P2** `app.py:40`: Leak (not on a line: line 40 is outside the diff's hunks)" in body
    assert "  The file is never closed." in body
    assert "- **P2** `new.py:9`: Past (not on a line: line 9 is past the end" in body
    assert "Off by one" not in body  # inline findings are on their lines, not here
    assert len(rendered.comments) == 2


def test_a_contradiction_and_a_carried_diff_are_said() -> None:
    note = "The reviewer's own verdict line said APPROVE; the findings decide."
    rendered = render_round(
        review_of(INLINE, contradiction=note, stated_verdict="APPROVE"),
        place_all([INLINE], FILES),
        ["app.py"],
        carried=Carried("p" * 40, "c" * 40),
    )
    assert note in rendered.body
    assert f"Carried forward: this diff (patch-id `{'p' * 40}`) was reviewed at `{'c' * 40}`" in (
        rendered.body
    )


def test_a_review_without_findings_says_so_and_lists_no_section() -> None:
    rendered = render_round(review_of(summary=""), (), [])
    assert rendered.body == "**Review: APPROVE** (0 P1, 0 P2, 0 P3)\n\n- Files reviewed (0): none"
    assert rendered.comments == ()


def test_a_prose_review_is_its_text_after_the_verdict() -> None:
    prose = "It is fine.\n\nVERDICT: APPROVE"
    rendered = render_round(
        ParsedReview("prose", "APPROVE", prose, stated_verdict="APPROVE"), (), ["a.py"]
    )
    assert rendered.body.startswith(
        "**Review: APPROVE** (prose: no findings in the contract's form)"
    )
    assert rendered.body.endswith("\n\n" + prose)
    assert rendered.comments == ()


@pytest.mark.parametrize(
    ("replacement", "marker"),
    [
        ("plain\n", "```"),
        ("```python\ncode\n```\n", "````"),
        ("a ```` b", "`````"),
        ("~~~\n", "```"),
    ],
)
def test_a_replacement_with_backticks_gets_a_longer_fence(replacement: str, marker: str) -> None:
    block = fenced(replacement, "suggestion")
    assert block.startswith(marker + "suggestion\n") and block.endswith("\n" + marker)
    assert fences(block) == [
        ("suggestion", replacement if replacement.endswith("\n") else replacement + "\n")
    ]


def test_an_empty_replacement_is_an_empty_suggestion_that_deletes_the_lines() -> None:
    assert fenced("", "suggestion") == "```suggestion\n```"
    assert fences(fenced("", "suggestion")) == [("suggestion", "")]
    assert fences(fenced("\n", "suggestion")) == [("suggestion", "\n")]


def test_an_unclosed_fence_in_the_body_cannot_swallow_the_suggestion() -> None:
    finding = Finding("app.py", 4, "P2", "t", "See:\n\n```python\nx = 1", replacement="y\n")
    body = comment_body(finding, suggestion=True)
    assert fences(body) == [("python", "x = 1\n"), ("suggestion", "y\n")]


@pytest.mark.parametrize(
    ("text", "closed"),
    [
        ("no fence", "no fence"),
        ("```\nclosed\n```", "```\nclosed\n```"),
        ("```\nopen", "```\nopen\n```"),
        ("````\nopen\n```", "````\nopen\n```\n````"),
        ("~~~\nopen", "~~~\nopen\n~~~"),
        ("```", "```\n```"),
        ("> ```\n> quoted", "> ```\n> quoted"),  # a blockquote closes it itself
    ],
)
def test_close_fences(text: str, closed: str) -> None:
    assert close_fences(text) == closed


def test_a_replacement_that_cannot_be_a_suggestion_is_shown_as_code() -> None:
    finding = Finding("app.py", 4, "P2", "t", "", replacement="y")
    body = comment_body(finding, suggestion=False)
    assert fences(body) == [("text", "y\n")]
    assert "suggestion" not in body


def test_reviewer_text_cannot_swallow_the_sections_after_it() -> None:
    review = review_of(OUTSIDE, summary="Look:\n\n```\nunclosed")
    body = render_round(review, place_all([OUTSIDE], FILES), ["app.py"]).body
    assert "Findings not on a line (1):" in texts(body)
    broken = Finding("app.py", 40, "P2", "First", "```\nunclosed")
    after = Finding("app.py", 41, "P2", "Second", "text")
    body = render_round(review_of(broken, after), place_all([broken, after], FILES), []).body
    assert "Second" in texts(body)


def test_a_path_with_backticks_is_one_code_span() -> None:
    assert code_span("a`b.py") == "``a`b.py``"
    assert code_span("`x`") == "`` `x` ``"
    assert code_span("tab\there") == "`tab?here`"
    rendered = render_round(review_of(), (), ["we`ird.py"])
    assert "we`ird.py" in [
        child.content
        for token in PARSER.parse(rendered.body)
        if token.type == "inline"
        for child in token.children or []
        if child.type == "code_inline"
    ]


def test_the_summary_stays_within_budget_and_keeps_every_header() -> None:
    findings = [
        Finding("app.py", 100 + n, "P2", f"Finding {n}", "b" * MAX_BODY, replacement="r" * 8000)
        for n in range(MAX_FINDINGS)
    ]
    rendered = render_round(
        review_of(*findings, summary="s" * 4000), place_all(findings, FILES), ["app.py"]
    )
    assert len(rendered.body) <= BODY_BUDGET
    for n in range(MAX_FINDINGS):
        assert f"- **P2** `app.py:{100 + n}`: Finding {n} (not on a line: " in rendered.body
    assert rendered.body.count(CUT_NOTE) == MAX_FINDINGS
    assert rendered.comments == ()


def test_texts_of_many_short_lines_are_cut_to_the_budget_too() -> None:
    # Indenting doubles such a text: the first share is too large and is shrunk.
    findings = [Finding("app.py", 100 + n, "P2", "t", "x\n" * 2000) for n in range(MAX_FINDINGS)]
    body = render_round(review_of(*findings), place_all(findings, FILES), []).body
    assert BODY_BUDGET - 2000 < len(body) <= BODY_BUDGET
    assert body.count("- **P2** `app.py:") == MAX_FINDINGS


def test_one_unplaced_finding_is_shown_whole() -> None:
    finding = Finding("app.py", 40, "P2", "t", "b" * MAX_BODY, replacement="r" * 8000)
    body = render_round(review_of(finding), place_all([finding], FILES), []).body
    assert "b" * MAX_BODY in body and "r" * 8000 in body and CUT_NOTE not in body


def test_a_long_prose_review_is_cut_with_a_note() -> None:
    prose = "word " * 40_000 + "\n\nVERDICT: APPROVE"
    review = ParsedReview("prose", "APPROVE", prose, stated_verdict="APPROVE")
    body = render_round(review, (), []).body
    assert len(body) <= BODY_BUDGET
    assert body.endswith(CUT_NOTE)


def test_many_files_are_listed_with_a_count_of_the_rest() -> None:
    names = [f"src/module_{n}.py" for n in range(300)]
    body = render_round(review_of(), (), names).body
    assert body.count("`src/module_") == 100
    assert "- Files reviewed (300): " in body and " and 200 more" in body
    long_names = ["d/" * 240 + f"{n}.py" for n in range(100)]
    body = render_round(review_of(), (), long_names).body
    assert len(body) < 7000 and " more" in body


def test_what_kdev_adds_pings_nobody_and_holds_no_html() -> None:
    findings = (INLINE, RANGE, OUTSIDE, PAST)
    rendered = render_round(
        review_of(*findings, contradiction="The reviewer's own verdict line said APPROVE."),
        place_all(findings, FILES),
        ["app.py"],
        [NotReviewed("x.bin", "binary")],
        Carried("abc123", "def456"),
    )
    for text in [rendered.body, *(c["body"] for c in rendered.comments)]:
        refuse_live_pings(text, "kdev-bot")
        assert "<" not in text and "@" not in text


def test_a_placement_outside_hunks_names_its_reason_when_it_has_no_detail() -> None:
    from wrapper.review.anchoring import Placement

    bare = Placement(OUTSIDE, "summary", reason=OUTSIDE_HUNKS)
    body = render_round(review_of(OUTSIDE), [bare], []).body
    assert f"(not on a line: {OUTSIDE_HUNKS})" in body
