"""GitHub's JSON into engine.github.types, strictly. Pure: no I/O, no httpx.

A field that is missing or of the wrong JSON type raises :class:`Malformed` (with the
reason ``malformed_payload``, or ``ghost_user`` for a pull whose author was deleted); the
client turns it into a :class:`~engine.github.types.GitHubMalformedPayload` or, in a
listing, a :class:`~engine.github.types.SkippedItem`. The small field readers
(:func:`get_field`, :func:`optional_field`, :func:`parse_time`) are public so that other
typed reads (the wrapper's own GitHub calls) parse with the same rules.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from engine.github.types import (
    GHOST_USER,
    MALFORMED_PAYLOAD,
    PullRequest,
    RateInfo,
    SkippedItem,
)

if TYPE_CHECKING:
    import httpx

T = TypeVar("T")

# The parts of a pull object the parser reads. A cached page keeps only these (a list
# item is ~15 KB otherwise), and cache keys carry a digest of this shape, so an entry
# written under an older shape is never read back as a malformed page.
PULL_SHAPE: dict[str, Any] = {
    "number": None,
    "title": None,
    "body": None,
    "html_url": None,
    "state": None,
    "draft": None,
    "user": {"login": None, "id": None, "type": None},
    "created_at": None,
    "updated_at": None,
    "merged_at": None,
    "merge_commit_sha": None,
    "head": {"sha": None, "ref": None, "repo": {"full_name": None, "id": None, "fork": None}},
    "base": {"ref": None, "repo": {"full_name": None, "id": None}},
}
PULL_SHAPE_ID = hashlib.sha256(json.dumps(PULL_SHAPE, sort_keys=True).encode()).hexdigest()[:8]
# The same for a comment of a repository-wide feed (engine.triggers parses it).
COMMENT_SHAPE: dict[str, Any] = {
    "id": None,
    "node_id": None,
    "body": None,
    "html_url": None,
    "user": {"login": None, "id": None, "type": None},
    "created_at": None,
    "updated_at": None,
    "issue_url": None,
    "pull_request_url": None,
}
_COMMENT_SHAPE_JSON = json.dumps(COMMENT_SHAPE, sort_keys=True).encode()
COMMENT_SHAPE_ID = hashlib.sha256(_COMMENT_SHAPE_JSON).hexdigest()[:8]


class Malformed(Exception):
    """An object that is not the shape expected; ``reason`` is its reason code."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def project(value: Any, shape: dict[str, Any] | None) -> Any:
    """``value`` with only the keys of ``shape`` (missing keys stay missing)."""
    if shape is None or not isinstance(value, dict):
        return value
    return {key: project(value[key], sub) for key, sub in shape.items() if key in value}


def json_name(kind: type[Any]) -> str:
    """The JSON name of a Python type (``dict``: object, ``list``: array, ...)."""
    names = {list: "array", dict: "object", str: "string", bool: "boolean", int: "integer"}
    return names.get(kind, "null" if kind is type(None) else kind.__name__)


def get_field(obj: Mapping[str, Any], key: str, kind: type[T], where: str) -> T:
    """``obj[key]``, which must be present and of JSON type ``kind``; ``where`` prefixes
    the key in the message (e.g. ``head.``)."""
    if key not in obj:
        raise Malformed(MALFORMED_PAYLOAD, f"{where}{key} is missing")
    value = obj[key]
    # bool is an int in Python, never in JSON: an id of ``true`` is malformed.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise Malformed(
            MALFORMED_PAYLOAD,
            f"{where}{key} is a JSON {json_name(type(value))}, not {json_name(kind)}",
        )
    return value


def optional_field(obj: Mapping[str, Any], key: str, kind: type[T], where: str) -> T | None:
    """As :func:`get_field`, but a JSON null is None (the key must still be present)."""
    if obj.get(key) is None:
        if key not in obj:
            raise Malformed(MALFORMED_PAYLOAD, f"{where}{key} is missing")
        return None
    return get_field(obj, key, kind, where)


def parse_time(value: str | None, where: str) -> datetime | None:
    """An ISO 8601 timestamp with a zone, as aware UTC (None stays None)."""
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise Malformed(MALFORMED_PAYLOAD, f"{where} is not a timestamp: {value!r}") from None
    if parsed.tzinfo is None:
        raise Malformed(MALFORMED_PAYLOAD, f"{where} has no time zone: {value!r}")
    return parsed.astimezone(UTC)


def parse_pull_item(item: Any) -> PullRequest:
    """One pull object as GitHub serves it. A null author raises ``ghost_user``, a missing
    or wrongly typed field ``malformed_payload``; ``head.repo: null`` (a deleted fork) is
    valid."""
    if not isinstance(item, dict):
        raise Malformed(MALFORMED_PAYLOAD, f"a pull is {type(item).__name__}, not an object")
    number = get_field(item, "number", int, "")
    if "user" in item and item["user"] is None:
        raise Malformed(GHOST_USER, f"pull #{number} has no author (a deleted account)")
    user = get_field(item, "user", dict, "")
    head = get_field(item, "head", dict, "")
    base = get_field(item, "base", dict, "")
    head_repo = optional_field(head, "repo", dict, "head.")
    base_repo = get_field(base, "repo", dict, "base.")
    created_at = parse_time(get_field(item, "created_at", str, ""), "created_at")
    updated_at = parse_time(get_field(item, "updated_at", str, ""), "updated_at")
    assert created_at is not None and updated_at is not None
    return PullRequest(
        number=number,
        title=get_field(item, "title", str, ""),
        html_url=get_field(item, "html_url", str, ""),
        state=get_field(item, "state", str, ""),
        draft=get_field(item, "draft", bool, ""),
        user_login=get_field(user, "login", str, "user."),
        user_id=get_field(user, "id", int, "user."),
        user_type=get_field(user, "type", str, "user."),
        created_at=created_at,
        updated_at=updated_at,
        merged_at=parse_time(optional_field(item, "merged_at", str, ""), "merged_at"),
        head_sha=get_field(head, "sha", str, "head."),
        head_ref=get_field(head, "ref", str, "head."),
        head_repo_full_name=(
            None if head_repo is None else get_field(head_repo, "full_name", str, "head.repo.")
        ),
        head_repo_id=None if head_repo is None else get_field(head_repo, "id", int, "head.repo."),
        head_repo_fork=(
            None if head_repo is None else get_field(head_repo, "fork", bool, "head.repo.")
        ),
        base_ref=get_field(base, "ref", str, "base."),
        base_repo_full_name=get_field(base_repo, "full_name", str, "base.repo."),
        base_repo_id=get_field(base_repo, "id", int, "base.repo."),
        merge_commit_sha=optional_field(item, "merge_commit_sha", str, ""),
        body=optional_field(item, "body", str, "") or "",
    )


def parse_pull_page(items: list[Any]) -> tuple[list[PullRequest], list[SkippedItem]]:
    """Parse a page of pulls; malformed items are returned as skipped, not raised."""
    pulls: list[PullRequest] = []
    skipped: list[SkippedItem] = []
    for item in items:
        try:
            pulls.append(parse_pull_item(item))
        except Malformed as exc:
            number = item.get("number") if isinstance(item, dict) else None
            number = number if isinstance(number, int) and not isinstance(number, bool) else None
            skipped.append(SkippedItem(number, exc.reason, exc.detail))
    return pulls, skipped


def unique_pulls(pulls: list[PullRequest]) -> list[PullRequest]:
    """``pulls`` without repeated numbers (the first one of each is kept)."""
    seen: set[int] = set()
    kept: list[PullRequest] = []
    for pull in pulls:
        if pull.number not in seen:
            seen.add(pull.number)
            kept.append(pull)
    return kept


def parse_rate(headers: Mapping[str, str]) -> RateInfo | None:
    """The ``x-ratelimit-*`` headers, or None when they are absent or unreadable."""
    try:
        limit = int(headers["x-ratelimit-limit"])
        remaining = int(headers["x-ratelimit-remaining"])
        reset = datetime.fromtimestamp(int(headers["x-ratelimit-reset"]), UTC)
        used = int(headers.get("x-ratelimit-used", limit - remaining))
    except (KeyError, ValueError, OverflowError, OSError):
        return None
    return RateInfo(limit, remaining, used, reset, headers.get("x-ratelimit-resource", "core"))


def said_message(response: httpx.Response) -> str | None:
    """GitHub's ``message`` in a JSON error body; None when the body is not JSON, not an
    object, or its ``message`` is not a string."""
    try:
        payload = response.json()
    except ValueError:
        return None
    text = payload.get("message") if isinstance(payload, dict) else None
    return text if isinstance(text, str) else None
