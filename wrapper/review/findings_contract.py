"""The findings contract: one versioned, machine-readable form both backends answer in
(issue 27; docs/reviewers.md "Findings (the contract)"; docs/decisions.md D84). Pure: no I/O.

The form is one JSON object::

    {"kdev_findings": 1, "summary": "...", "findings": [
      {"path": "src/app.py", "line": 42, "start_line": null, "severity": "P2",
       "title": "...", "body": "...", "replacement": null}]}

- An OpenAI-compatible endpoint that supports structured outputs is sent
  :func:`response_format` (strict JSON schema :data:`FINDINGS_SCHEMA`), asked with
  :data:`STRUCTURED_INSTRUCTION`, and its whole answer is the object
  (``structured=True``).
- A CLI reviewer is asked with :data:`FINDINGS_INSTRUCTION` to put the object in one
  fenced block with info string ``kdev-findings`` and still end with the ``VERDICT:``
  line (``structured=False``). Only the block is posted; text around it is not. A
  block in a blockquote or inside another fence is quoted, not the reviewer's own.
- A CLI reviewer that writes no such block is read as prose (``mode="prose"``): the
  verdict comes from the strict grammar (:mod:`wrapper.review.verdict_grammar`) and the
  whole output is one PR-level comment.

:func:`parse_review` returns a :class:`ParsedReview` or a :class:`ContractFailure`
(one reason code, one line). A block that breaks the form anywhere (bad JSON, a key
missing or unknown, a wrong type, a severity other than P1/P2/P3, an empty path,
``start_line`` above ``line``, a wrong version, over a cap) fails as a whole: nothing of
it is posted. A well-formed finding whose place the head does not have (an unknown
path, a line past the end of the file) is kept with its :attr:`Finding.problem` and goes
to the review's summary, never inline; it still counts for the verdict.

The verdict follows from the findings: REQUEST_CHANGES exactly when a P1 or P2 finding
stands (:func:`verdict_of`). A CLI reviewer's own ``VERDICT:`` line that disagrees does
not change it; :attr:`ParsedReview.contradiction` says so, for the summary.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from markdown_it import MarkdownIt

from wrapper.refusal import Refusal
from wrapper.review.findings_earlier import (
    EARLIER_KEY,
    EARLIER_SCHEMA,
    EarlierError,
    EarlierReport,
    parse_earlier,
)
from wrapper.review.verdict_grammar import parse_verdict

VERSION_KEY = "kdev_findings"
FINDINGS_VERSION = 1
# Version 2 adds ``earlier``, the report on earlier rounds' findings (D91); both are read.
EARLIER_VERSION = 2
VERSIONS = (FINDINGS_VERSION, EARLIER_VERSION)
BLOCK_INFO = "kdev-findings"
SCHEMA_NAME = "kdev_findings"
SEVERITIES = ("P1", "P2", "P3")
BLOCKING = frozenset({"P1", "P2"})
APPROVE = "APPROVE"
REQUEST_CHANGES = "REQUEST_CHANGES"

# Caps: what one round may post stays well inside GitHub's 65536 characters a body.
MAX_FINDINGS = 50
MAX_PATH = 500
MAX_TITLE = 200
MAX_BODY = 4000
MAX_SUMMARY = 4000
MAX_REPLACEMENT = 8000
MAX_LINE = 999_999_999

# Reason codes of a ContractFailure (the whole output is refused; nothing is posted).
BAD_JSON = "findings_bad_json"
NOT_OBJECT = "findings_not_object"
BAD_VERSION = "findings_bad_version"
MISSING_FIELD = "findings_missing_field"
UNKNOWN_FIELD = "findings_unknown_field"
BAD_TYPE = "findings_bad_type"
BAD_SEVERITY = "findings_bad_severity"
MISSING_PATH = "findings_missing_path"
BAD_PATH = "findings_bad_path"
BAD_LINE = "findings_bad_line"
BAD_RANGE = "findings_bad_range"
BAD_TITLE = "findings_bad_title"
TOO_MANY = "findings_too_many"
TOO_LONG = "findings_text_too_long"
BLOCK_REPEATED = "findings_block_repeated"
NO_VERDICT = "no_verdict"

# Reason codes of a kept finding the head cannot place (Finding.problem: summary only).
UNKNOWN_PATH = "unknown_path"
LINE_PAST_END = "line_past_end"

HeadLines = Mapping[str, int] | Callable[[str], int | None]
"""The head's line count of a path (None or absent: the head has no such file)."""

_FINDING_KEYS = ("path", "line", "start_line", "severity", "title", "body", "replacement")
_NULLABLE = frozenset({"start_line", "replacement"})
_TOP_KEYS = (VERSION_KEY, "summary", "findings")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_PARSER = MarkdownIt("commonmark")


@dataclass(frozen=True)
class Finding:
    """One finding of the contract. ``start_line`` is None or below ``line`` (a range);
    ``problem`` is None, or why the head has no such place (UNKNOWN_PATH,
    LINE_PAST_END) with ``problem_detail`` saying it in words."""

    path: str
    line: int
    severity: str  # "P1" | "P2" | "P3"
    title: str
    body: str
    start_line: int | None = None
    replacement: str | None = None
    problem: str | None = None
    problem_detail: str = ""

    @property
    def location(self) -> str:
        """``path:line`` or ``path:start-line``."""
        if self.start_line is None:
            return f"{self.path}:{self.line}"
        return f"{self.path}:{self.start_line}-{self.line}"


@dataclass(frozen=True)
class ParsedReview:
    """A reviewer's output read under the contract. ``mode`` "findings": ``summary`` is
    the block's summary and ``findings`` its findings; "prose": ``summary`` is the whole
    output (one PR-level comment) and there are no findings. ``stated_verdict`` is the
    reviewer's own VERDICT line (None when it gave none, or in structured mode)."""

    mode: Literal["findings", "prose"]
    verdict: str
    summary: str
    findings: tuple[Finding, ...] = ()
    stated_verdict: str | None = None
    contradiction: str | None = None
    earlier: tuple[EarlierReport, ...] = ()  # version 2's report (D91)


@dataclass(frozen=True)
class ContractFailure(Refusal):
    """Why a reviewer's output is refused: a reason code and one line of detail."""

    WHAT = "reviewer output breaks the findings contract"


class _Malformed(Exception):
    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def _nullable(kind: str) -> dict[str, Any]:
    return {"type": [kind, "null"]}


FINDINGS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": list(_TOP_KEYS),
    "properties": {
        VERSION_KEY: {"type": "integer", "enum": [FINDINGS_VERSION]},
        "summary": {"type": "string"},
        "findings": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": list(_FINDING_KEYS),
                "properties": {
                    "path": {"type": "string"},
                    "line": {"type": "integer"},
                    "start_line": _nullable("integer"),
                    "severity": {"type": "string", "enum": list(SEVERITIES)},
                    "title": {"type": "string"},
                    "body": {"type": "string"},
                    "replacement": _nullable("string"),
                },
            },
        },
    },
}
"""The JSON Schema of the form, in the subset OpenAI's strict mode accepts: every object
closed (``additionalProperties: false``), every property required, an optional one as
nullable, no length or number bounds (the caps are checked by :func:`parse_review`)."""


def response_format(version: int = FINDINGS_VERSION) -> dict[str, Any]:
    """The ``response_format`` of an OpenAI-compatible chat completion (a fresh copy);
    ``version`` 2 is the schema with ``earlier`` (an incremental round, D91)."""
    schema = copy.deepcopy(FINDINGS_SCHEMA)
    if version == EARLIER_VERSION:
        schema["required"].append(EARLIER_KEY)
        schema["properties"][VERSION_KEY]["enum"] = [EARLIER_VERSION]
        schema["properties"][EARLIER_KEY] = copy.deepcopy(EARLIER_SCHEMA)
    return {
        "type": "json_schema",
        "json_schema": {"name": SCHEMA_NAME, "strict": True, "schema": schema},
    }


_FIELDS_TEXT = f"""\
- `path`: the file's path in the pull request's head, as the diff names it (no `a/` or
  `b/` prefix).
- `line`: a line number of the head's version of the file (the `+` side of the diff);
  `start_line`: the first line of a range ending at `line`, or null for one line.
- `severity`: `P1` must be fixed before merge (wrong in ordinary use, destructive, a
  security hole an outsider can reach); `P2` should be fixed (a real defect of limited
  reach: an edge case, missing error handling, a leak); `P3` is optional (style, naming,
  refactoring, tests for code that works).
- `title`: one line of at most {MAX_TITLE} characters; `body`: the explanation, Markdown,
  at most {MAX_BODY} characters; `summary`: the review in a few sentences, at most
  {MAX_SUMMARY} characters.
- `replacement`: null, or the exact text that replaces the lines `start_line`..`line`
  (or `line` alone), offered to the author as a suggestion to apply.
- At most {MAX_FINDINGS} findings; none when there is nothing to fix. A finding on a
  line the diff does not show is listed in the review's summary instead of on the line.
- The verdict follows from the findings: REQUEST_CHANGES when any finding is P1 or P2,
  else APPROVE."""

_EXAMPLE = (
    '{"kdev_findings": 1, "summary": "One bug in the retry loop.", "findings": '
    '[{"path": "src/app.py", "line": 42, "start_line": 40, "severity": "P2", '
    '"title": "The retry loop never ends", "body": "`attempt` is never increased.", '
    '"replacement": null}]}'
)

FINDINGS_INSTRUCTION = f"""\
Report your review as one fenced block whose info string is `{BLOCK_INFO}`, holding one
JSON object in this form:

```{BLOCK_INFO}
{_EXAMPLE}
```

{_FIELDS_TEXT}
- Only this block is posted: text outside it is not shown to anyone."""
"""What a CLI reviewer is asked (the verdict instruction still follows it)."""

STRUCTURED_INSTRUCTION = f"""\
Answer with one JSON object and nothing else, in this form:

{_EXAMPLE}

{_FIELDS_TEXT}"""
"""What an endpoint answering under :func:`response_format` is asked."""


def verdict_of(findings: Sequence[Finding]) -> str:
    """REQUEST_CHANGES exactly when a P1 or P2 finding stands, else APPROVE."""
    blocking = any(f.severity in BLOCKING for f in findings)
    return REQUEST_CHANGES if blocking else APPROVE


def parse_review(
    output: str, *, structured: bool, head_lines: HeadLines
) -> ParsedReview | ContractFailure:
    """``output`` read under the contract (see the module doc). ``structured``: the
    whole output is the JSON object (an endpoint under :func:`response_format`); else
    one ``kdev-findings`` block, or prose. ``head_lines`` gives a head file's line
    count, for the location check of each finding."""
    try:
        if structured:
            return _findings_review(output, None, head_lines)
        blocks = _blocks(output)
        if not blocks:
            return _prose(output)
        if len(blocks) > 1:
            raise _Malformed(BLOCK_REPEATED, f"{len(blocks)} {BLOCK_INFO} blocks, not one")
        return _findings_review(blocks[0], parse_verdict(output), head_lines)
    except _Malformed as bad:
        return ContractFailure(bad.reason, bad.detail)


def _blocks(output: str) -> list[str]:
    """The contents of the fences labelled ``kdev-findings`` outside blockquotes (one
    quoted there, or shown inside another fence, is not the reviewer's own: the verdict
    grammar's quoting, D23; a list item is not quoting)."""
    normalised = output.replace("\r\n", "\n").replace("\r", "\n")
    found: list[str] = []
    quotes = 0
    for token in _PARSER.parse(normalised):
        if token.type in ("blockquote_open", "blockquote_close"):
            quotes += 1 if token.type == "blockquote_open" else -1
        elif token.type == "fence" and not quotes and token.info.strip() == BLOCK_INFO:
            found.append(token.content)
    return found


def _prose(output: str) -> ParsedReview | ContractFailure:
    verdict = parse_verdict(output)
    if verdict is None:
        detail = f"no {BLOCK_INFO} block and no verdict line the grammar accepts"
        return ContractFailure(NO_VERDICT, detail)
    return ParsedReview("prose", verdict, output.strip(), stated_verdict=verdict)


def _findings_review(document: str, stated: str | None, head_lines: HeadLines) -> ParsedReview:
    data = _load(document)
    summary = _text(data, "summary", MAX_SUMMARY, "the summary")
    items = data["findings"]
    if not isinstance(items, list):
        raise _Malformed(BAD_TYPE, "findings is not an array")
    if len(items) > MAX_FINDINGS:
        raise _Malformed(TOO_MANY, f"{len(items)} findings, more than {MAX_FINDINGS}")
    lookup = _lookup(head_lines)
    findings = tuple(_locate(_finding(item, n), lookup) for n, item in enumerate(items, 1))
    earlier: tuple[EarlierReport, ...] = ()
    if data[VERSION_KEY] == EARLIER_VERSION:
        try:
            earlier = parse_earlier(data[EARLIER_KEY])
        except EarlierError as bad:
            raise _Malformed(bad.reason, bad.detail) from None
    verdict = verdict_of(findings)
    return ParsedReview(
        "findings",
        verdict,
        summary,
        findings,
        stated_verdict=stated,
        contradiction=_contradiction(stated, verdict, findings),
        earlier=earlier,
    )


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        raise _Malformed(BAD_JSON, "a JSON object repeats a key")
    return dict(pairs)


def _load(document: str) -> dict[str, Any]:
    try:
        data = json.loads(document, object_pairs_hook=_reject_duplicates)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}"
        raise _Malformed(BAD_JSON, f"not valid JSON (at {where})") from None
    except (ValueError, RecursionError):  # an integer of too many digits, deep nesting
        raise _Malformed(BAD_JSON, "not valid JSON (a value out of range)") from None
    if not isinstance(data, dict):
        raise _Malformed(NOT_OBJECT, f"the JSON is {_kind(data)}, not an object")
    version = data.get(VERSION_KEY)
    if type(version) is not int or version not in VERSIONS:
        shown = "missing" if VERSION_KEY not in data else _shown(version)
        raise _Malformed(BAD_VERSION, f"{VERSION_KEY} is {shown}, not 1 or 2")
    keys = _TOP_KEYS if version == FINDINGS_VERSION else (*_TOP_KEYS, EARLIER_KEY)
    _keys(data, keys, frozenset(), "the object")
    return data


def _keys(data: dict[str, Any], keys: Sequence[str], nullable: frozenset[str], what: str) -> None:
    unknown = sorted(set(data) - set(keys))
    if unknown:
        raise _Malformed(UNKNOWN_FIELD, f"{what} has unknown key {_shown(unknown[0])}")
    for key in keys:
        if key not in data and key not in nullable:
            reason = MISSING_PATH if key == "path" else MISSING_FIELD
            raise _Malformed(reason, f"{what} has no {key}")


def _finding(item: Any, number: int) -> Finding:
    what = f"finding {number}"
    if not isinstance(item, dict):
        raise _Malformed(BAD_TYPE, f"{what} is {_kind(item)}, not an object")
    _keys(item, _FINDING_KEYS, _NULLABLE, what)
    path = item["path"]
    if not isinstance(path, str):
        raise _Malformed(BAD_TYPE, f"{what}: path is {_kind(path)}, not a string")
    if not path:
        raise _Malformed(MISSING_PATH, f"{what}: path is empty")
    if len(path) > MAX_PATH or _CONTROL.search(path) or path.startswith("/"):
        raise _Malformed(BAD_PATH, f"{what}: path is not a relative path of one line")
    severity = item["severity"]
    if severity not in SEVERITIES:
        raise _Malformed(BAD_SEVERITY, f"{what}: severity {_shown(severity)} is not P1, P2 or P3")
    line = _line(item["line"], f"{what}: line")
    start = item.get("start_line")
    start_line = None if start is None else _line(start, f"{what}: start_line")
    if start_line is not None and start_line > line:
        raise _Malformed(BAD_RANGE, f"{what}: start_line {start_line} is after line {line}")
    title = _text(item, "title", MAX_TITLE, f"{what}: title")
    if not title.strip() or _CONTROL.search(title):
        raise _Malformed(BAD_TITLE, f"{what}: title is empty or not one line")
    replacement = item.get("replacement")
    if replacement is not None:
        replacement = _text(item, "replacement", MAX_REPLACEMENT, f"{what}: replacement")
    return Finding(
        path=path,
        line=line,
        severity=severity,
        title=title.strip(),
        body=_text(item, "body", MAX_BODY, f"{what}: body"),
        start_line=None if start_line == line else start_line,
        replacement=replacement,
    )


def _line(value: Any, what: str) -> int:
    if type(value) is not int:
        raise _Malformed(BAD_TYPE, f"{what} is {_kind(value)}, not an integer")
    if not 1 <= value <= MAX_LINE:
        raise _Malformed(BAD_LINE, f"{what} {value} is not a line number")
    return value


def _text(data: dict[str, Any], key: str, cap: int, what: str) -> str:
    value = data[key]
    if not isinstance(value, str):
        raise _Malformed(BAD_TYPE, f"{what} is {_kind(value)}, not a string")
    if len(value) > cap:
        raise _Malformed(TOO_LONG, f"{what} has {len(value)} characters, more than {cap}")
    return value


def _lookup(head_lines: HeadLines) -> Callable[[str], int | None]:
    if isinstance(head_lines, Mapping):
        return head_lines.get
    return head_lines


def _locate(finding: Finding, lookup: Callable[[str], int | None]) -> Finding:
    """``finding`` with its problem set when the head has no such place."""
    count = lookup(finding.path)
    if count is None:
        return _with_problem(finding, UNKNOWN_PATH, "the head has no such file")
    if finding.line > count:
        detail = f"line {finding.line} is past the end of the file ({count} lines)"
        return _with_problem(finding, LINE_PAST_END, detail)
    return finding


def _with_problem(finding: Finding, problem: str, detail: str) -> Finding:
    return replace(finding, problem=problem, problem_detail=detail)


def _contradiction(stated: str | None, verdict: str, findings: Sequence[Finding]) -> str | None:
    if stated is None or stated == verdict:
        return None
    blocking = sum(1 for f in findings if f.severity in BLOCKING)
    why = f"P1 or P2 findings stand: {blocking}" if blocking else "no P1 or P2 finding stands"
    return (
        f"The reviewer's own verdict line said {stated}; the findings decide: "
        f"{why}, so the verdict is {verdict}."
    )


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return {
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "an array",
        dict: "an object",
    }.get(type(value), type(value).__name__)


def _shown(value: Any) -> str:
    """A short, one-line rendering of a value from the reviewer, for an error detail."""
    text = json.dumps(value, ensure_ascii=True)
    return text if len(text) <= 24 else text[:21] + "..."
