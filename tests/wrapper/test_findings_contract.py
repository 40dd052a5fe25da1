"""The findings contract (issue 27, D84): one versioned form, a parser that fails loud."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wrapper.review import findings_contract as fc
from wrapper.review.findings_contract import (
    FINDINGS_INSTRUCTION,
    FINDINGS_SCHEMA,
    STRUCTURED_INSTRUCTION,
    ContractFailure,
    Finding,
    ParsedReview,
    parse_review,
    response_format,
    verdict_of,
)

ROOT = Path(__file__).resolve().parents[2]
HEAD = {"src/app.py": 120, "README.md": 10, "empty.txt": 0}


def finding(**overrides: Any) -> dict[str, Any]:
    item: dict[str, Any] = {
        "path": "src/app.py",
        "line": 42,
        "start_line": None,
        "severity": "P2",
        "title": "The retry loop never ends",
        "body": "`attempt` is never increased.",
        "replacement": None,
    }
    item.update(overrides)
    return item


def document(*findings: dict[str, Any], **top: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"kdev_findings": 1, "summary": "One bug.", "findings": list(findings)}
    data.update(top)
    return data


def cli_output(data: Any, verdict: str | None = "REQUEST_CHANGES", before: str = "") -> str:
    text = data if isinstance(data, str) else json.dumps(data, indent=2)
    tail = f"\n\nVERDICT: {verdict}\n" if verdict else "\n"
    return f"{before}```kdev-findings\n{text}\n```{tail}"


def parsed(output: str, *, structured: bool = False, head: Any = HEAD) -> ParsedReview:
    result = parse_review(output, structured=structured, head_lines=head)
    assert isinstance(result, ParsedReview), result
    return result


def failed(output: str, *, structured: bool = False) -> ContractFailure:
    result = parse_review(output, structured=structured, head_lines=HEAD)
    assert isinstance(result, ContractFailure), result
    return result


# --- well-formed output ---------------------------------------------------------------


def test_a_structured_answer_is_read_whole_and_its_verdict_follows_its_findings() -> None:
    data = document(finding(), finding(severity="P3", line=7, start_line=3, replacement="x\n"))
    review = parsed(json.dumps(data), structured=True)
    assert review.mode == "findings"
    assert review.verdict == "REQUEST_CHANGES"
    assert review.stated_verdict is None and review.contradiction is None
    assert review.summary == "One bug."
    title, body = "The retry loop never ends", "`attempt` is never increased."
    assert review.findings == (
        Finding("src/app.py", 42, "P2", title, body),
        Finding("src/app.py", 7, "P3", title, body, start_line=3, replacement="x\n"),
    )
    assert review.findings[1].location == "src/app.py:3-7"


@pytest.mark.parametrize(
    ("severities", "verdict"),
    [
        ((), "APPROVE"),
        (("P3",), "APPROVE"),
        (("P3", "P3"), "APPROVE"),
        (("P3", "P2"), "REQUEST_CHANGES"),
        (("P1",), "REQUEST_CHANGES"),
    ],
)
def test_request_changes_exactly_when_a_p1_or_p2_stands(
    severities: tuple[str, ...], verdict: str
) -> None:
    data = document(*(finding(severity=s) for s in severities))
    assert parsed(json.dumps(data), structured=True).verdict == verdict
    assert verdict_of([Finding("a", 1, s, "t", "") for s in severities]) == verdict


def test_a_cli_block_with_an_agreeing_verdict_line_has_no_contradiction() -> None:
    review = parsed(cli_output(document(finding()), "REQUEST_CHANGES"))
    assert review.mode == "findings"
    assert (review.verdict, review.stated_verdict, review.contradiction) == (
        "REQUEST_CHANGES",
        "REQUEST_CHANGES",
        None,
    )


def test_findings_win_over_an_approving_verdict_line_and_the_summary_says_so() -> None:
    review = parsed(cli_output(document(finding(severity="P1")), "APPROVE"))
    assert review.verdict == "REQUEST_CHANGES"
    assert review.stated_verdict == "APPROVE"
    assert review.contradiction is not None
    assert "said APPROVE" in review.contradiction
    assert "P1 or P2 findings stand: 1" in review.contradiction
    assert review.contradiction.endswith("the verdict is REQUEST_CHANGES.")


def test_findings_win_over_a_request_for_changes_without_a_p1_or_p2() -> None:
    review = parsed(cli_output(document(finding(severity="P3")), "REQUEST_CHANGES"))
    assert review.verdict == "APPROVE"
    assert review.contradiction is not None
    assert "said REQUEST_CHANGES" in review.contradiction
    assert "no P1 or P2 finding stands" in review.contradiction


def test_a_block_without_a_verdict_line_takes_the_verdict_of_its_findings() -> None:
    review = parsed(cli_output(document(finding()), verdict=None))
    assert (review.verdict, review.stated_verdict, review.contradiction) == (
        "REQUEST_CHANGES",
        None,
        None,
    )


def test_text_around_the_block_is_not_part_of_the_review() -> None:
    before = "Let me think step by step about the secret plan.\n\n"
    review = parsed(cli_output(document(), "APPROVE", before=before))
    assert review.summary == "One bug."
    assert "step by step" not in review.summary and review.findings == ()


def test_absent_nullable_keys_read_as_null_and_a_one_line_range_is_one_line() -> None:
    item = finding(start_line=42)
    del item["replacement"]
    review = parsed(cli_output(document(item)))
    assert review.findings[0].start_line is None
    assert review.findings[0].replacement is None
    assert review.findings[0].location == "src/app.py:42"


def test_an_empty_replacement_is_kept_apart_from_none() -> None:
    review = parsed(cli_output(document(finding(replacement=""))))
    assert review.findings[0].replacement == ""


def test_a_title_is_stripped_and_its_body_may_be_empty() -> None:
    review = parsed(cli_output(document(finding(title="  Padded  ", body=""))))
    assert (review.findings[0].title, review.findings[0].body) == ("Padded", "")


def test_a_block_in_crlf_output_is_found() -> None:
    output = cli_output(document(finding()), "REQUEST_CHANGES").replace("\n", "\r\n")
    assert parsed(output).findings[0].line == 42


# --- the head's places ------------------------------------------------------------------


def test_a_finding_on_a_file_the_head_does_not_have_is_kept_with_its_problem() -> None:
    review = parsed(cli_output(document(finding(path="src/gone.py", severity="P1"))))
    (kept,) = review.findings
    assert kept.problem == fc.UNKNOWN_PATH
    assert kept.problem_detail == "the head has no such file"
    assert review.verdict == "REQUEST_CHANGES"  # it still counts: a misplaced P1 blocks


@pytest.mark.parametrize(
    ("path", "line", "start", "problem"),
    [
        ("src/app.py", 120, None, None),  # the last line
        ("src/app.py", 121, None, fc.LINE_PAST_END),
        ("src/app.py", 121, 100, fc.LINE_PAST_END),
        ("empty.txt", 1, None, fc.LINE_PAST_END),
        ("README.md", 1, None, None),
    ],
)
def test_a_line_past_the_end_of_the_file_is_a_problem(
    path: str, line: int, start: int | None, problem: str | None
) -> None:
    review = parsed(cli_output(document(finding(path=path, line=line, start_line=start))))
    assert review.findings[0].problem == problem
    if problem == fc.LINE_PAST_END:
        count = HEAD[path]
        assert review.findings[0].problem_detail == (
            f"line {line} is past the end of the file ({count} lines)"
        )


def test_the_head_may_be_a_callable() -> None:
    asked: list[str] = []

    def head(path: str) -> int | None:
        asked.append(path)
        return 5 if path == "lib/x.py" else None

    output = cli_output(document(finding(path="lib/x.py", line=5), finding(path="b.py")))
    review = parsed(output, head=head)
    assert [f.problem for f in review.findings] == [None, fc.UNKNOWN_PATH]
    assert asked == ["lib/x.py", "b.py"]


# --- prose ------------------------------------------------------------------------------


def test_prose_with_a_verdict_line_is_a_prose_review() -> None:
    output = "Looks fine overall.\n\n- P3 a nit in `a.py:3`\n\nVERDICT: APPROVE\n"
    review = parsed(output)
    assert review.mode == "prose"
    assert review.verdict == review.stated_verdict == "APPROVE"
    assert review.summary == output.strip()
    assert review.findings == ()


def test_prose_without_a_verdict_line_fails_as_no_verdict() -> None:
    failure = failed("I could not decide.\n")
    assert failure.reason == fc.NO_VERDICT


@pytest.mark.parametrize(
    "output",
    [
        # quoted in a blockquote, or shown inside another fence: not the reviewer's own
        "> ```kdev-findings\n> {}\n> ```\n\nVERDICT: APPROVE\n",
        "````markdown\n```kdev-findings\n{}\n```\n````\n\nVERDICT: APPROVE\n",
        "- a list\n\n  > ```kdev-findings\n  > {}\n  > ```\n\nVERDICT: APPROVE\n",
        # another info string
        "```json\n" + json.dumps(document()) + "\n```\n\nVERDICT: APPROVE\n",
    ],
)
def test_a_quoted_or_differently_labelled_block_is_prose(output: str) -> None:
    review = parsed(output)
    assert review.mode == "prose" and review.verdict == "APPROVE"


# --- malformed output: refused whole, with one reason code ------------------------------


def with_finding(**overrides: Any) -> dict[str, Any]:
    return document(finding(**overrides))


def without(key: str) -> dict[str, Any]:
    item = finding()
    del item[key]
    return document(item)


def top_without(key: str) -> dict[str, Any]:
    data = document(finding())
    del data[key]
    return data


MALFORMED: list[tuple[str, Any]] = [
    (fc.BAD_JSON, "{"),
    (fc.BAD_JSON, '{"kdev_findings": 1} trailing'),
    (fc.BAD_JSON, '{"kdev_findings": 1, "kdev_findings": 1, "summary": "", "findings": []}'),
    (fc.BAD_JSON, '{"kdev_findings": 1, "summary": "", "findings": [' + "[" * 100_000 + "]"),
    (fc.BAD_JSON, '{"kdev_findings": ' + "1" * 5000 + "}"),
    (fc.NOT_OBJECT, "[]"),
    (fc.NOT_OBJECT, '"text"'),
    (fc.BAD_VERSION, top_without("kdev_findings")),
    (fc.BAD_VERSION, document(kdev_findings=3)),
    (fc.MISSING_FIELD, document(kdev_findings=2)),  # version 2 without its report
    (fc.BAD_VERSION, document(kdev_findings="1")),
    (fc.BAD_VERSION, document(kdev_findings=True)),
    (fc.BAD_VERSION, document(kdev_findings=1.0)),
    (fc.MISSING_FIELD, top_without("summary")),
    (fc.MISSING_FIELD, top_without("findings")),
    (fc.MISSING_FIELD, without("title")),
    (fc.MISSING_FIELD, without("body")),
    (fc.MISSING_FIELD, without("severity")),
    (fc.MISSING_FIELD, without("line")),
    (fc.UNKNOWN_FIELD, document(verdict="APPROVE")),
    (fc.UNKNOWN_FIELD, with_finding(startline=3)),
    (fc.BAD_TYPE, document(findings={})),
    (fc.BAD_TYPE, document("not an object")),
    (fc.BAD_TYPE, document(summary=None)),
    (fc.BAD_TYPE, with_finding(line="42")),
    (fc.BAD_TYPE, with_finding(line=42.0)),
    (fc.BAD_TYPE, with_finding(line=True)),
    (fc.BAD_TYPE, with_finding(start_line="1")),
    (fc.BAD_TYPE, with_finding(path=7)),
    (fc.BAD_TYPE, with_finding(title=None)),
    (fc.BAD_TYPE, with_finding(body=["x"])),
    (fc.BAD_TYPE, with_finding(replacement=5)),
    (fc.BAD_SEVERITY, with_finding(severity="P0")),
    (fc.BAD_SEVERITY, with_finding(severity="p1")),
    (fc.BAD_SEVERITY, with_finding(severity="critical")),
    (fc.BAD_SEVERITY, with_finding(severity=None)),
    (fc.MISSING_PATH, without("path")),
    (fc.MISSING_PATH, with_finding(path="")),
    (fc.BAD_PATH, with_finding(path="/etc/passwd")),
    (fc.BAD_PATH, with_finding(path="a\nb.py")),
    (fc.BAD_PATH, with_finding(path="a" * 501)),
    (fc.BAD_LINE, with_finding(line=0)),
    (fc.BAD_LINE, with_finding(line=-3)),
    (fc.BAD_LINE, with_finding(line=10**10)),
    (fc.BAD_LINE, with_finding(start_line=0)),
    (fc.BAD_RANGE, with_finding(start_line=43)),
    (fc.BAD_TITLE, with_finding(title="")),
    (fc.BAD_TITLE, with_finding(title="   ")),
    (fc.BAD_TITLE, with_finding(title="two\nlines")),
    (fc.TOO_MANY, document(*[finding()] * 51)),
    (fc.TOO_LONG, with_finding(title="t" * 201)),
    (fc.TOO_LONG, with_finding(body="b" * 4001)),
    (fc.TOO_LONG, with_finding(replacement="r" * 8001)),
    (fc.TOO_LONG, document(summary="s" * 4001)),
]


@pytest.mark.parametrize(("reason", "data"), MALFORMED, ids=[r for r, _ in MALFORMED])
def test_malformed_output_is_refused_whole_with_its_reason(reason: str, data: Any) -> None:
    text = data if isinstance(data, str) else json.dumps(data)
    for failure in (failed(text, structured=True), failed(cli_output(text))):
        assert failure.reason == reason
        assert "\n" not in failure.message
        assert failure.message.endswith(f"[{reason}]")
        assert len(failure.detail) < 120


def test_one_malformed_finding_refuses_the_well_formed_ones_too() -> None:
    data = document(finding(severity="P1"), finding(severity="P0"))
    failure = failed(cli_output(data))
    assert (failure.reason, failure.detail) == (
        fc.BAD_SEVERITY,
        'finding 2: severity "P0" is not P1, P2 or P3',
    )


def test_the_caps_are_inclusive() -> None:
    data = document(
        *[finding(title="t" * 200, body="b" * 4000, replacement="r" * 8000)] * 50,
        summary="s" * 4000,
    )
    assert len(parsed(json.dumps(data), structured=True).findings) == 50


def test_a_detail_never_echoes_much_of_the_reviewers_text() -> None:
    failure = failed(cli_output(with_finding(severity="x" * 500)))
    assert failure.detail.startswith('finding 1: severity "xxx')
    assert "x" * 40 not in failure.detail


def test_a_block_in_a_list_item_is_the_reviewers_own() -> None:
    block = json.dumps(document(finding()))
    output = f"1. My findings:\n\n   ```kdev-findings\n   {block}\n   ```\n\nVERDICT: APPROVE\n"
    review = parsed(output)
    assert review.mode == "findings" and review.findings[0].line == 42


def test_two_blocks_are_refused() -> None:
    output = cli_output(document()) + "\n" + cli_output(document(), "APPROVE")
    assert failed(output).reason == fc.BLOCK_REPEATED


def test_structured_mode_takes_nothing_but_the_object() -> None:
    assert parsed("\n  " + json.dumps(document()) + "\n", structured=True).verdict == "APPROVE"
    assert failed(cli_output(document()), structured=True).reason == fc.BAD_JSON
    assert failed("VERDICT: APPROVE", structured=True).reason == fc.BAD_JSON


def test_an_unclosed_block_is_bad_json_not_prose() -> None:
    output = "```kdev-findings\n" + json.dumps(document()) + "\n\nVERDICT: APPROVE\n"
    assert failed(output).reason == fc.BAD_JSON


# --- the schema and the parser agree ----------------------------------------------------


def _objects(schema: dict[str, Any]) -> list[dict[str, Any]]:
    found = [schema] if schema.get("type") == "object" else []
    for sub in schema.get("properties", {}).values():
        found += _objects(sub)
    if "items" in schema:
        found += _objects(schema["items"])
    return found


def test_the_schema_keeps_openais_strict_rules() -> None:
    objects = _objects(FINDINGS_SCHEMA)
    assert len(objects) == 2
    for obj in objects:
        assert obj["additionalProperties"] is False
        assert sorted(obj["required"]) == sorted(obj["properties"])
    text = json.dumps(FINDINGS_SCHEMA)
    for keyword in ("minLength", "maxLength", "maxItems", "minimum", "maximum", "pattern"):
        assert keyword not in text
    jsonschema.Draft202012Validator.check_schema(FINDINGS_SCHEMA)


def test_response_format_is_a_fresh_strict_json_schema() -> None:
    first = response_format()
    assert first["type"] == "json_schema"
    assert first["json_schema"]["strict"] is True
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", first["json_schema"]["name"])
    assert first["json_schema"]["schema"] == FINDINGS_SCHEMA
    first["json_schema"]["schema"]["properties"].clear()
    assert response_format()["json_schema"]["schema"] == FINDINGS_SCHEMA


_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-2, max_value=130),
    st.just(1.5),
    st.sampled_from(["", " ", "P1", "P2", "P3", "P4", "src/app.py", "/abs", "a\tb", "ok"]),
    st.just([]),
)
_KEYS = list(fc._FINDING_KEYS)


@st.composite
def _documents(draw: st.DrawFn) -> dict[str, Any]:
    """Mostly well-formed documents with some fields replaced by arbitrary values."""
    items = []
    for _ in range(draw(st.integers(0, 3))):
        item = finding(
            line=draw(st.integers(1, 120)),
            start_line=draw(st.none() | st.integers(1, 120)),
            severity=draw(st.sampled_from(["P1", "P2", "P3"])),
            replacement=draw(st.none() | st.text(max_size=5)),
        )
        for key in draw(st.lists(st.sampled_from(_KEYS), max_size=2)):
            item[key] = draw(_VALUES)
        items.append(item)
    data = document(*items)
    if draw(st.booleans()):
        data[draw(st.sampled_from(["kdev_findings", "summary"]))] = draw(_VALUES)
    return data


def _semantic_ok(data: dict[str, Any]) -> bool:
    """The rules beyond the schema, stated independently of the parser."""
    for item in data["findings"]:
        path, title, start = item["path"], item["title"], item["start_line"]
        if not path or path.startswith("/") or any(ord(c) < 32 for c in path):
            return False
        if not title.strip() or any(ord(c) < 32 for c in title):
            return False
        if not 1 <= item["line"] or (start is not None and not 1 <= start <= item["line"]):
            return False
    return True


@settings(max_examples=200, deadline=None)
@given(_documents())
def test_the_parser_accepts_exactly_what_the_schema_and_its_rules_accept(
    data: dict[str, Any],
) -> None:
    valid = jsonschema.Draft202012Validator(FINDINGS_SCHEMA).is_valid(data)
    result = parse_review(json.dumps(data), structured=True, head_lines=HEAD)
    assert isinstance(result, ParsedReview) == (valid and _semantic_ok(data)), result


# --- what reviewers are shown is itself accepted ----------------------------------------


def _json_after(text: str, marker: str) -> str:
    start = text.index(marker) + len(marker)
    return text[start : text.index("\n```", start)]


def test_the_cli_instruction_shows_an_example_the_parser_accepts() -> None:
    example = _json_after(FINDINGS_INSTRUCTION, "```kdev-findings\n")
    review = parsed(cli_output(example, "REQUEST_CHANGES"))
    assert review.verdict == "REQUEST_CHANGES" and review.findings[0].start_line == 40
    assert "`kdev-findings`" in FINDINGS_INSTRUCTION


def test_the_structured_instruction_shows_an_example_the_parser_accepts() -> None:
    example = next(line for line in STRUCTURED_INSTRUCTION.split("\n") if line.startswith("{"))
    assert parsed(example, structured=True).findings[0].severity == "P2"
    assert jsonschema.Draft202012Validator(FINDINGS_SCHEMA).is_valid(json.loads(example))


def test_the_documented_example_is_accepted() -> None:
    docs = (ROOT / "docs" / "reviewers.md").read_text(encoding="utf-8")
    section = docs[docs.index("## Findings (the contract)") :]
    example = _json_after(section, "```json\n")
    data = json.loads(example)
    head = {f["path"]: 1000 for f in data["findings"]}
    review = parsed(example, structured=True, head=head)
    assert len(review.findings) == len(data["findings"]) >= 2
    assert jsonschema.Draft202012Validator(FINDINGS_SCHEMA).is_valid(data)
    assert review.findings == parsed(cli_output(copy.deepcopy(data)), head=head).findings
