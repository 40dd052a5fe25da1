"""Decide whether a pull request or a comment triggers an event, the pure part.

Nothing here does I/O: the poller fetches items, keeps the watermarks and fires; this
module maps ``(item, state)`` to a :class:`Decision`. Two events:

- ``pr_opened``: a pull request, fresh by ``created_at`` against the PR watermark.
- ``mention``: a comment (issue or diff comment) that mentions the handle, fresh by
  ``updated_at`` against the comments watermark, so editing a mention into an old
  comment still triggers.

Checks run in a fixed order and the first failing one names the reason; freshness is
always first, so a re-seen item is ``not_fresh`` and never a repeated other reason::

    comment: not_fresh -> pr_not_open | not_a_pull -> bot_commenter -> no_mention
             -> commenter_not_allowlisted -> accepted
    pull:    not_fresh -> pr_not_open -> bot_author -> draft
             -> author_not_allowlisted -> accepted

Watermarks are timezone-aware, forward-only and compared strictly: an item is stale
only when its timestamp is strictly older than the watermark, so the boundary second is
re-offered; re-offers cost nothing because of the dedupe keys
(``pr_opened:{repo}:{pr}:{head_sha}`` and ``mention:{repo}:{pr}:{comment_id}``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal, TypeVar

from engine.triggers.mention import find_mention

# "issue": a conversation comment (/issues/comments); "diff": a comment on a diff line
# (/pulls/comments).
CommentKind = Literal["issue", "diff"]
T = TypeVar("T")


class Reason(StrEnum):
    """Why an item was accepted or rejected; the same string in logs, JSON and docs."""

    ACCEPTED = "accepted"  # the item fires its event
    NOT_FRESH = "not_fresh"  # strictly older than its watermark: already classified
    PR_NOT_OPEN = "pr_not_open"  # the PR is not in the open-PR set (or not open)
    NOT_A_PULL = "not_a_pull"  # open-PR set unknown and the comment is on a plain issue
    BOT_AUTHOR = "bot_author"  # the pull request was opened by a bot
    BOT_COMMENTER = "bot_commenter"  # the comment was written by a bot
    DRAFT = "draft"  # the pull request is a draft
    NO_MENTION = "no_mention"  # the comment does not mention the handle in prose
    AUTHOR_NOT_ALLOWLISTED = "author_not_allowlisted"  # PR author id not allowlisted
    COMMENTER_NOT_ALLOWLISTED = "commenter_not_allowlisted"  # commenter id not allowlisted


class TriggerEvent(StrEnum):
    """What an accepted item fires."""

    PR_OPENED = "pr_opened"  # a pull request was opened
    MENTION = "mention"  # a comment mentions the handle


# Every decision, accepted ones included, is logged at DEBUG with its reason code (issue
# 18): one level for all keeps the log a complete audit at DEBUG and an idle poller quiet
# at INFO. The decision table (``li schedule events``) is the place to look without DEBUG.
REASON_LOG_LEVELS: Mapping[Reason, int] = dict.fromkeys(Reason, logging.DEBUG)
"""The level at which the poller logs each decision (the reason is a log field)."""

GHOST_USER = "ghost_user"
MALFORMED_PAYLOAD = "malformed_payload"


@dataclass(frozen=True)
class CommentItem:
    """One comment from a repo-wide feed: ``kind`` is ``issue`` (conversation) or
    ``diff`` (on a diff line). Timestamps are timezone-aware."""

    id: int
    node_id: str
    body: str
    user_login: str
    user_id: int
    user_type: str
    created_at: datetime
    updated_at: datetime
    pr_number: int
    kind: CommentKind
    # What the payload says: True when the comment is on a pull request (a diff comment
    # always is; an issue comment when its ``html_url`` is a ``/pull/N`` page), False on
    # a plain issue (``/issues/N``). The issue-comments feed carries both (D98).
    on_pull: bool = True


@dataclass(frozen=True)
class PullItem:
    """One pull request from the pulls listing. ``created_at`` is timezone-aware."""

    number: int
    state: str
    draft: bool
    user_login: str
    user_id: int
    user_type: str
    created_at: datetime
    head_sha: str


@dataclass(frozen=True)
class TriggerState:
    """What the classifier knows besides the item.

    ``open_prs`` is the latest open-PR set, or None while unknown (no 200 yet): then the
    open-PR filter is off (fail open). ``allowlist`` comes from
    :func:`engine.triggers.allowlist.parse_allowlist`. There is no account filter: the
    agent's own account may summon it (docs/decisions.md D25). ``verbs`` and
    ``default_verb`` are the schedule's (engine.triggers.mention.find_mention).
    ``seen_pulls``: the open pulls this pass did read, when ``open_prs`` is unknown
    because the listing was incomplete (a comment on one of them is on a pull request).

    Both watermarks must be timezone-aware: a naive one is a :class:`ValueError` here,
    when the state is made, never later at its first comparison (D98).
    """

    pr_watermark: datetime | None
    comments_watermark: datetime | None
    open_prs: frozenset[int] | None
    handle: str
    allowlist: frozenset[int]
    verbs: frozenset[str] = frozenset()
    default_verb: str | None = None
    seen_pulls: frozenset[int] = frozenset()

    def __post_init__(self) -> None:
        for name in ("pr_watermark", "comments_watermark"):
            moment = getattr(self, name)
            if moment is not None:
                check_aware(moment, name)


@dataclass(frozen=True)
class Decision:
    """The outcome for one item. An accept carries its ``event`` and ``dedupe_key``
    (and, for a mention, its ``verb``, None when the schedule gives none); a reject
    carries only its ``reason``."""

    accept: bool
    reason: Reason
    event: TriggerEvent | None = None
    dedupe_key: str | None = None
    verb: str | None = None


class PayloadError(ValueError):
    """One feed item cannot be classified: ``ghost_user`` (``user: null``, a deleted
    account) or ``malformed_payload``. The poller skips that item with a warning."""

    def __init__(self, message: str, reason: str, item_id: int | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.item_id = item_id


def _reject(reason: Reason) -> Decision:
    return Decision(accept=False, reason=reason)


def _accept(event: TriggerEvent, dedupe_key: str, verb: str | None = None) -> Decision:
    return Decision(
        accept=True, reason=Reason.ACCEPTED, event=event, dedupe_key=dedupe_key, verb=verb
    )


def is_bot(user_type: str, login: str) -> bool:
    """GitHub marks bot accounts with ``type: "Bot"`` and a login ending in ``[bot]``."""
    return user_type == "Bot" or login.endswith("[bot]")


def check_aware(moment: datetime, what: str = "watermark timestamp") -> datetime:
    """``moment`` when it is timezone-aware; :class:`ValueError` naming ``what`` if not."""
    if not isinstance(moment, datetime):
        raise ValueError(f"{what} is a {type(moment).__name__}, not a datetime")
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"{what} {moment.isoformat()} has no time zone")
    return moment


def _is_stale(moment: datetime, watermark: datetime | None) -> bool:
    return watermark is not None and moment < watermark


def mention_dedupe_key(repo: str, pr_number: int, comment_id: int) -> str:
    """``mention:{repo}:{pr}:{comment_id}``: a comment fires once, whatever is pushed."""
    return f"{TriggerEvent.MENTION}:{repo}:{pr_number}:{comment_id}"


def pr_opened_dedupe_key(repo: str, pr_number: int, head_sha: str) -> str:
    """``pr_opened:{repo}:{pr}:{head_sha}``."""
    return f"{TriggerEvent.PR_OPENED}:{repo}:{pr_number}:{head_sha}"


def classify_comment(item: CommentItem, repo: str, state: TriggerState) -> Decision:
    """Accept ``item`` as a ``mention`` event or say why not (order in the module doc).

    ``repo`` (``owner/name``) only goes into the dedupe key.
    """
    if _is_stale(item.updated_at, state.comments_watermark):
        return _reject(Reason.NOT_FRESH)
    if state.open_prs is not None and item.pr_number not in state.open_prs:
        return _reject(Reason.PR_NOT_OPEN)
    # The open-PR set unknown (an incomplete pulls listing): the filter is off, but a
    # comment whose payload says it is on a plain issue is still no pull request's.
    if state.open_prs is None and not item.on_pull and item.pr_number not in state.seen_pulls:
        return _reject(Reason.NOT_A_PULL)
    if is_bot(item.user_type, item.user_login):
        return _reject(Reason.BOT_COMMENTER)
    # No check by account: the agent's own account may summon it by typing the handle
    # (a single-maintainer repository). What the fired program posts itself is its own
    # business to neutralise and refuse (docs/triggers.md, "The self-loop").
    mention = find_mention(
        item.body, state.handle, verbs=state.verbs, default_verb=state.default_verb
    )
    if mention is None:
        return _reject(Reason.NO_MENTION)
    # The numeric id, never the login: a freed login may belong to someone else now.
    if item.user_id not in state.allowlist:
        return _reject(Reason.COMMENTER_NOT_ALLOWLISTED)
    return _accept(
        TriggerEvent.MENTION, mention_dedupe_key(repo, item.pr_number, item.id), mention.verb
    )


def classify_pull(item: PullItem, repo: str, state: TriggerState) -> Decision:
    """Accept ``item`` as a ``pr_opened`` event or say why not (order in the module doc).

    A pull whose ``state`` is not ``open`` is ``pr_not_open``. The accept has no verb.
    """
    if _is_stale(item.created_at, state.pr_watermark):
        return _reject(Reason.NOT_FRESH)
    if item.state != "open":
        return _reject(Reason.PR_NOT_OPEN)
    if is_bot(item.user_type, item.user_login):
        return _reject(Reason.BOT_AUTHOR)
    if item.draft:
        return _reject(Reason.DRAFT)
    if item.user_id not in state.allowlist:
        return _reject(Reason.AUTHOR_NOT_ALLOWLISTED)
    return _accept(TriggerEvent.PR_OPENED, pr_opened_dedupe_key(repo, item.number, item.head_sha))


def advance_watermark(current: datetime | None, seen: Iterable[datetime]) -> datetime | None:
    """The newest of ``current`` and every timestamp in ``seen`` (never wall-clock now).

    Forward-only: an older ``seen`` never moves it back; nothing seen keeps ``current``.
    Every timestamp must be timezone-aware, else :class:`ValueError`.
    """
    newest = current
    for moment in [current, *seen]:
        if moment is None:
            continue
        check_aware(moment)
        if newest is None or moment > newest:
            newest = moment
    return newest


_PR_URL_RE = {
    "issue": re.compile(r"/issues/(\d+)$"),
    "diff": re.compile(r"/pulls/(\d+)$"),
}
_PR_URL_FIELD = {"issue": "issue_url", "diff": "pull_request_url"}
# The page of an issue comment: ``https://github.com/o/r/pull/N#issuecomment-I`` on a
# pull request, ``.../issues/N#issuecomment-I`` on a plain issue (D98).
_HTML_PAGE_RE = re.compile(r"/(pull|issues)/(\d+)(?:#[^/]*)?$")


def comment_from_payload(raw: object, kind: CommentKind) -> CommentItem:
    """Parse one item of ``GET /repos/{o}/{r}/issues/comments`` (``kind="issue"``) or
    ``/pulls/comments`` (``kind="diff"``) strictly.

    The PR number comes from ``issue_url`` or ``pull_request_url``; whether an issue
    comment is on a pull request at all from its ``html_url`` (``/pull/N`` or
    ``/issues/N``; the feed item has no ``pull_request`` key, the issue has). Raises
    :class:`PayloadError`: ``ghost_user`` for ``user: null``, ``malformed_payload`` for
    anything missing or wrongly typed. A null ``body`` reads as empty.
    """
    if not isinstance(raw, dict):
        raise PayloadError(
            f"a {kind} comment is a {type(raw).__name__}, not an object", MALFORMED_PAYLOAD
        )
    comment_id = _field(raw, "id", int, None)
    if raw.get("user", 0) is None:
        raise PayloadError(
            f"{kind} comment {comment_id} has no author (a deleted account)",
            GHOST_USER,
            comment_id,
        )
    user = _field(raw, "user", dict, comment_id)
    url_field = _PR_URL_FIELD[kind]
    url = _field(raw, url_field, str, comment_id)
    url_match = _PR_URL_RE[kind].search(url)
    if url_match is None:
        raise PayloadError(
            f"{kind} comment {comment_id}: {url_field} names no pull request: {url!r}",
            MALFORMED_PAYLOAD,
            comment_id,
        )
    body = raw.get("body")
    number = int(url_match.group(1))
    return CommentItem(
        id=comment_id,
        node_id=_field(raw, "node_id", str, comment_id),
        body=_field(raw, "body", str, comment_id) if body is not None else "",
        user_login=_field(user, "login", str, comment_id, "user."),
        user_id=_field(user, "id", int, comment_id, "user."),
        user_type=_field(user, "type", str, comment_id, "user."),
        created_at=_timestamp(raw, "created_at", comment_id),
        updated_at=_timestamp(raw, "updated_at", comment_id),
        pr_number=number,
        kind=kind,
        on_pull=kind == "diff" or _on_pull(raw, number, comment_id),
    )


def _on_pull(raw: Mapping[str, Any], number: int, comment_id: int) -> bool:
    """Whether an issue comment's ``html_url`` names a pull request page (D98)."""
    page = _field(raw, "html_url", str, comment_id)
    match = _HTML_PAGE_RE.search(page)
    if match is None or int(match.group(2)) != number:
        raise PayloadError(
            f"issue comment {comment_id}: html_url names no page of #{number}: {page!r}",
            MALFORMED_PAYLOAD,
            comment_id,
        )
    return match.group(1) == "pull"


def _field(
    obj: Mapping[str, Any], key: str, kind: type[T], item_id: int | None, where: str = ""
) -> T:
    value = obj.get(key)
    # bool is an int in Python, never in JSON: an id of ``true`` is malformed.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        shown = "missing" if key not in obj else f"a {type(value).__name__}"
        raise PayloadError(
            f"comment {item_id}: {where}{key} is {shown}, not {kind.__name__}",
            MALFORMED_PAYLOAD,
            item_id,
        )
    return value


def _timestamp(obj: Mapping[str, Any], key: str, item_id: int | None) -> datetime:
    text = _field(obj, key, str, item_id)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise PayloadError(
            f"comment {item_id}: {key} is not an aware timestamp: {text!r}",
            MALFORMED_PAYLOAD,
            item_id,
        )
    return moment.astimezone(UTC)
