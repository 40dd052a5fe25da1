"""Triggers: decide, purely, whether a pull request or a comment fires an event.

Why it is built this way: docs/decisions.md D14.

- :mod:`engine.triggers.mention`: does a comment body mention a handle in prose, and
  with which of the schedule's verbs; GitHub's comment parser (cmark-gfm).
- :mod:`engine.triggers.pings`: every mention of any login or team, and every
  cross-reference, that GitHub could link in a body (for text that must link nobody).
- :mod:`engine.triggers.allowlist`: parse the numeric user-id allowlist.
- :mod:`engine.triggers.classify`: typed items and state in, a :class:`Decision` with a
  reason code out; watermarks and dedupe keys.

The names exported here are the public API (the detector and the parser); other
packages import them from ``engine.triggers``, never a module's private names.

See docs/triggers.md. The poller integration (comment feeds, persisted watermarks,
firing) is built on top of this package.
"""

from engine.triggers.allowlist import ALLOWLIST_CONFIG_ERROR, allowlist_ids, parse_allowlist
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
    GFM_EXTENSIONS,
    INVALID_HANDLE,
    INVALID_VERB,
    Mention,
    count_mentions,
    find_mention,
    has_raw_html,
    mention_pattern,
    prose_lines,
    render,
    validate_handle,
    validate_verb,
)
from engine.triggers.pings import (
    INVALID_MENTION_NAME,
    NEUTRAL_SPACE,
    Ping,
    linkable_runs,
    mention_names_problem,
    pings,
    scan_pings,
    validate_mention_name,
)

__all__ = [
    "ALLOWLIST_CONFIG_ERROR",
    "GFM_EXTENSIONS",
    "GHOST_USER",
    "INVALID_HANDLE",
    "INVALID_MENTION_NAME",
    "INVALID_VERB",
    "MALFORMED_PAYLOAD",
    "NEUTRAL_SPACE",
    "REASON_LOG_LEVELS",
    "CommentItem",
    "CommentKind",
    "Decision",
    "Mention",
    "PayloadError",
    "Ping",
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
    "has_raw_html",
    "is_bot",
    "linkable_runs",
    "mention_dedupe_key",
    "mention_names_problem",
    "mention_pattern",
    "allowlist_ids",
    "parse_allowlist",
    "pings",
    "pr_opened_dedupe_key",
    "prose_lines",
    "render",
    "scan_pings",
    "validate_handle",
    "validate_mention_name",
    "validate_verb",
]
