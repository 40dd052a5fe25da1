"""The ledger's file grammars, pure: the verdict file, index.json, deferred markers and
the lines of legs.jsonl. Every parser raises ValueError (with why) for what it refuses."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any, cast

from wrapper.errors import ConfigError, LedgerError
from wrapper.ledger.records import (
    DEFERRED_BUDGET_STATE,
    HEADER_KEYS,
    MIN_SECRET_LENGTH,
    OLD_HEADER_KEYS,
    SEPARATOR,
    SHA_RE,
    VERDICTS,
    DeferredMarker,
    IndexEntry,
    LegRecord,
    VerdictRecord,
    check_sha,
    format_timestamp,
    parse_timestamp,
)

# --- pure: the verdict file grammar -------------------------------------------------

USAGE_KEY = "USAGE"  # optional, after REVIEWER_MODEL (issue 31, D103)

PR_NUMBER_RE = re.compile(r"^[1-9][0-9]{0,9}$")


def _header_value(key: str, value: str, *, may_be_empty: bool = False) -> str:
    if not isinstance(value, str) or any(c in value for c in "\n\r") or value != value.strip():
        raise LedgerError(f"verdict field {key} must be one trimmed line", "invalid_record")
    if not value and not may_be_empty:
        raise LedgerError(f"verdict field {key} is empty", "invalid_record")
    return value


def render_verdict(record: VerdictRecord) -> str:
    """The exact text of ``record``'s verdict file; ``LedgerError invalid_record`` if a
    header field is not a single trimmed line, the PR number missing, the verdict unknown
    or a SHA malformed."""
    if record.verdict not in VERDICTS:
        raise LedgerError(f"verdict {record.verdict!r} is not one of {VERDICTS}", "invalid_record")
    if type(record.pr) is not int or record.pr < 1:
        raise LedgerError(f"verdict PR {record.pr!r} is not a PR number", "invalid_record")
    try:
        check_sha(record.head_sha, "HEAD_SHA")
        check_sha(record.patch_id, "PATCH_ID")
        reviewed_at = format_timestamp(record.reviewed_at)
    except (ConfigError, ValueError) as exc:
        raise LedgerError(f"verdict record: {exc}", "invalid_record") from None
    values = (
        record.verdict,
        str(record.pr),
        _header_value("PR_URL", record.pr_url, may_be_empty=True),
        record.head_sha,
        record.patch_id,
        _header_value("BASE", record.base),
        reviewed_at,
        _header_value("REVIEWER_MODEL", record.model, may_be_empty=True),
    )
    header = "".join(f"{key}: {value}\n" for key, value in zip(HEADER_KEYS, values, strict=True))
    if record.usage:
        header += f"{USAGE_KEY}: {_header_value(USAGE_KEY, record.usage)}\n"
    return f"{header}{SEPARATOR}\n{record.body}\n"


def _header_values(lines: list[str], keys: tuple[str, ...]) -> dict[str, str]:
    if len(lines) <= len(keys) or lines[len(keys)] != SEPARATOR:
        raise ValueError(f"line {len(keys) + 1} is not {SEPARATOR!r}")
    values: dict[str, str] = {}
    for number, (key, line) in enumerate(zip(keys, lines, strict=False), start=1):
        if line == f"{key}:":
            values[key] = ""
        elif line.startswith(f"{key}: "):
            values[key] = line[len(key) + 2 :]
        else:
            raise ValueError(f"line {number} is not {key}:")
    return values


def parse_verdict(text: str) -> VerdictRecord:
    """The record of a verdict file's text; ValueError (with why) for anything else.

    The header is ``PR: <number>`` then ``PR_URL: <url>``; a file of the old header
    (``PR: <url>``, no ``PR_URL`` line, written before issue 18) parses too, with ``pr``
    None (the ledger knows the number from the file's directory). An optional ``USAGE:``
    line may follow ``REVIEWER_MODEL`` (D103)."""
    lines = text.split("\n")
    old = len(lines) > 2 and lines[2].startswith("HEAD_SHA:")
    keys = OLD_HEADER_KEYS if old else HEADER_KEYS
    if not old and len(lines) > len(keys) and lines[len(keys)].startswith(f"{USAGE_KEY}: "):
        keys = (*keys, USAGE_KEY)
    values = _header_values(lines, keys)
    pr: int | None = None
    if old:
        pr_url = values["PR"]
    else:
        if not PR_NUMBER_RE.match(values["PR"]):
            raise ValueError(f"PR {values['PR']!r} is not a PR number")
        pr, pr_url = int(values["PR"]), values["PR_URL"]
    verdict = values["VERDICT"]
    if verdict not in VERDICTS:
        raise ValueError(f"VERDICT {verdict!r} is not one of {VERDICTS}")
    for key in ("HEAD_SHA", "PATCH_ID"):
        if not SHA_RE.match(values[key]):
            raise ValueError(f"{key} {values[key]!r} is not an object name")
    body = "\n".join(lines[len(keys) + 1 :])
    if body.endswith("\n"):
        body = body[:-1]
    return VerdictRecord(
        verdict=verdict,
        pr_url=pr_url,
        head_sha=values["HEAD_SHA"],
        patch_id=values["PATCH_ID"],
        base=values["BASE"],
        reviewed_at=parse_timestamp(values["REVIEWED_AT"]),
        model=values["REVIEWER_MODEL"],
        body=body,
        pr=pr,
        usage=values.get(USAGE_KEY, ""),
    )


def find_secrets(text: str, secrets: Iterable[str]) -> bool:
    """True when any secret value of at least MIN_SECRET_LENGTH characters is in ``text``."""
    return any(s and len(s) >= MIN_SECRET_LENGTH and s in text for s in secrets)


# --- pure: JSON shapes -------------------------------------------------------------------


def _entry_to_json(entry: IndexEntry) -> dict[str, Any]:
    data: dict[str, Any] = {
        "patch_id": entry.patch_id,
        "verdict": entry.verdict,
        "reviewed_at": format_timestamp(entry.reviewed_at),
        "carried_from": entry.carried_from,
    }
    if entry.carried_at is not None:  # absent in the entries of an older kdev
        data["carried_at"] = format_timestamp(entry.carried_at)
    return data


def index_to_json(index: dict[str, IndexEntry]) -> str:
    data = {head: _entry_to_json(entry) for head, entry in index.items()}
    return json.dumps(data, indent=2) + "\n"


def index_from_json(text: str) -> dict[str, IndexEntry]:
    data: Any = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("the top level is not an object")
    index: dict[str, IndexEntry] = {}
    for head, raw in data.items():
        if not SHA_RE.match(head) or not isinstance(raw, dict):
            raise ValueError(f"entry {head!r} is malformed")
        patch_id, verdict = raw.get("patch_id"), raw.get("verdict")
        carried_from, reviewed_at = raw.get("carried_from"), raw.get("reviewed_at")
        if not isinstance(patch_id, str) or not SHA_RE.match(patch_id):
            raise ValueError(f"entry {head}: patch_id is malformed")
        if verdict not in VERDICTS:
            raise ValueError(f"entry {head}: verdict {verdict!r} is unknown")
        if carried_from is not None and (
            not isinstance(carried_from, str) or not SHA_RE.match(carried_from)
        ):
            raise ValueError(f"entry {head}: carried_from is malformed")
        if not isinstance(reviewed_at, str):
            raise ValueError(f"entry {head}: reviewed_at is missing")
        carried_at = raw.get("carried_at")
        if carried_at is not None and not isinstance(carried_at, str):
            raise ValueError(f"entry {head}: carried_at is malformed")
        index[head] = IndexEntry(
            patch_id=patch_id,
            verdict=verdict,
            reviewed_at=parse_timestamp(reviewed_at),
            carried_from=carried_from,
            carried_at=None if carried_at is None else parse_timestamp(carried_at),
        )
    return index


def marker_to_json(marker: DeferredMarker) -> str:
    return json.dumps(marker.to_json(), indent=2) + "\n"


def marker_from_json(text: str) -> DeferredMarker:
    data: Any = json.loads(text)
    if not isinstance(data, dict) or data.get("state") != DEFERRED_BUDGET_STATE:
        raise ValueError(f"state is not {DEFERRED_BUDGET_STATE!r}")
    budget, count, limit = data.get("budget"), data.get("count"), data.get("limit")
    head_sha, pr_url = data.get("head_sha"), data.get("pr_url")
    reopens_at, created_at = data.get("reopens_at"), data.get("created_at")
    if not isinstance(budget, str) or not isinstance(pr_url, str):
        raise ValueError("budget or pr_url is not a string")
    if not all(type(n) is int for n in (count, limit)):
        raise ValueError("count or limit is not an integer")
    if not isinstance(head_sha, str) or not SHA_RE.match(head_sha):
        raise ValueError("head_sha is malformed")
    if not isinstance(created_at, str) or not (reopens_at is None or isinstance(reopens_at, str)):
        raise ValueError("created_at or reopens_at is malformed")
    return DeferredMarker(
        budget=budget,
        count=cast(int, count),
        limit=cast(int, limit),
        reopens_at=None if reopens_at is None else parse_timestamp(reopens_at),
        head_sha=head_sha,
        pr_url=pr_url,
        created_at=parse_timestamp(created_at),
    )


def leg_from_json(line: str) -> LegRecord:
    data: Any = json.loads(line)
    if not isinstance(data, dict):
        raise ValueError("not an object")
    pr, head_sha, started_at = data.get("pr"), data.get("head_sha"), data.get("started_at")
    if type(pr) is not int or pr < 1:
        raise ValueError("pr is not a positive integer")
    if not isinstance(head_sha, str) or not isinstance(started_at, str):
        raise ValueError("head_sha or started_at is not a string")
    return LegRecord(pr=pr, head_sha=head_sha, started_at=parse_timestamp(started_at))


def leg_to_json(leg: LegRecord) -> dict[str, Any]:
    """The JSON object of one leg (a line of legs.jsonl, an item of legs.window.json)."""
    return {"pr": leg.pr, "head_sha": leg.head_sha, "started_at": format_timestamp(leg.started_at)}
