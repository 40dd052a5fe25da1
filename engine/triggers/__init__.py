"""Triggers: decide, purely, whether a pull request or a comment fires an event.

Why it is built this way: docs/decisions.md D14.

- :mod:`engine.triggers.mention`: does a comment body mention a handle in prose, and
  with which verb.
- :mod:`engine.triggers.allowlist`: parse the numeric user-id allowlist.
- :mod:`engine.triggers.classify`: typed items and state in, a :class:`Decision` with a
  reason code out; watermarks and dedupe keys.

See docs/triggers.md. The poller integration (comment feeds, persisted watermarks,
firing) is built on top of this package.
"""

from engine.triggers.allowlist import ALLOWLIST_CONFIG_ERROR, parse_allowlist
from engine.triggers.classify import (
    GHOST_USER,
    MALFORMED_PAYLOAD,
    REASON_LOG_LEVELS,
    CommentItem,
    CommentKind,
    Decision,
    PayloadError,
    PullItem,
    Reason,
    TriggerEvent,
    TriggerState,
    advance_watermark,
    classify_comment,
    classify_pull,
    comment_from_payload,
    is_bot,
    mention_dedupe_key,
    pr_opened_dedupe_key,
)
from engine.triggers.mention import (
    FALLBACK_VERB,
    INVALID_HANDLE,
    KNOWN_VERBS,
    Mention,
    count_mentions,
    find_mention,
    prose_lines,
    validate_handle,
)

__all__ = [
    "ALLOWLIST_CONFIG_ERROR",
    "FALLBACK_VERB",
    "GHOST_USER",
    "INVALID_HANDLE",
    "KNOWN_VERBS",
    "MALFORMED_PAYLOAD",
    "REASON_LOG_LEVELS",
    "CommentItem",
    "CommentKind",
    "Decision",
    "Mention",
    "PayloadError",
    "PullItem",
    "Reason",
    "TriggerEvent",
    "TriggerState",
    "advance_watermark",
    "classify_comment",
    "classify_pull",
    "comment_from_payload",
    "count_mentions",
    "find_mention",
    "is_bot",
    "mention_dedupe_key",
    "parse_allowlist",
    "pr_opened_dedupe_key",
    "prose_lines",
    "validate_handle",
]
