"""Priority triage of PR feedback: pure functions from (author, body) to source and priority.

Priorities (docs/author-loop.md):

* ``P1`` must be fixed before merge: Gemini ``![critical]``; Cursor Bugbot
  ``**High Severity**`` (also inside an HTML comment); Claude ``🚨``, ``**Critical**`` or
  ``### Critical Issues``.
* ``P2`` should be fixed: Gemini ``![high]``; Bugbot ``### Bug:`` of any other severity;
  Gemini ``![medium]`` and Claude ``⚠️`` when the text speaks of correctness, security,
  a breaking change, data loss or error handling (:data:`SERIOUS`); any other body that
  does (inferred from content); a review summary that requests changes.
* ``P3`` everything else: nits, style, questions, ``![low]``, ``![medium]`` and ``⚠️``
  without a serious topic.

The markers are read whoever wrote the comment (a human may paste a bot's badge); the
source only labels where the feedback came from.
"""

from __future__ import annotations

import enum
import re


class Priority(enum.StrEnum):
    P1 = "P1"  # must fix before merge
    P2 = "P2"  # should fix
    P3 = "P3"  # optional: style, nits, questions


class Source(enum.StrEnum):
    GEMINI = "gemini"  # gemini-code-assist[bot]
    BUGBOT = "bugbot"  # cursor[bot] (Cursor Bugbot)
    CLAUDE = "claude"  # claude[bot] and other logins naming claude
    BOT = "bot"  # any other bot account
    HUMAN = "human"  # everyone else


# The topics that lift a medium/warning (or unmarked) finding to P2.
SERIOUS = re.compile(
    r"\b(?:incorrect(?:ly)?|correctness|wrong (?:result|value|answer|output)|off-by-one|"
    r"security|vulnerab\w*|injection|xss|csrf|ssrf|secret|credential|auth(?:entication|"
    r"orization)? bypass|breaking change|breaks? (?:the )?(?:api|compatibility|callers?)|"
    r"backwards?[- ]compatib\w*|data loss|lose data|loses data|lost data|corrupt\w*|"
    r"error handling|unhandled|swallow\w*|silently (?:ignor|fail|drop)\w*|race condition|"
    r"deadlock|crash\w*|null pointer|nonetype|raises? an? (?:exception|error)|bug)\b",
    re.IGNORECASE,
)
_GEMINI_BADGE = re.compile(r"!\[(critical|high|medium|low)\]", re.IGNORECASE)
_BUGBOT_HIGH = re.compile(r"\*\*High Severity\*\*", re.IGNORECASE)
_BUGBOT_BUG = re.compile(r"^#{2,4}\s*Bug:", re.IGNORECASE | re.MULTILINE)
_CLAUDE_CRITICAL = re.compile(r"🚨|\*\*Critical\*\*|^#{2,4}\s*Critical Issues", re.MULTILINE)
_WARNING = "⚠️"


def detect_source(login: str | None, user_type: str | None = None) -> Source:
    """Where feedback came from, by author login (``user_type`` ``Bot`` marks other bots)."""
    name = (login or "").lower()
    if name.startswith("gemini-code-assist"):
        return Source.GEMINI
    if name.startswith("cursor") or "bugbot" in name:
        return Source.BUGBOT
    if "claude" in name:
        return Source.CLAUDE
    if name.endswith("[bot]") or user_type == "Bot":
        return Source.BOT
    return Source.HUMAN


def is_serious(body: str) -> bool:
    """True when ``body`` speaks of correctness, security, breaking changes, data loss or
    error handling."""
    return SERIOUS.search(body) is not None


def classify(body: str, *, review_state: str | None = None) -> Priority:
    """The priority of one piece of feedback (see the module docstring for the rules).

    ``review_state`` is the state of a review summary (``CHANGES_REQUESTED`` is at least
    P2); None for comments.
    """
    text = body or ""
    found: list[Priority] = []
    for badge in _GEMINI_BADGE.findall(text):
        level = badge.lower()
        if level == "critical":
            found.append(Priority.P1)
        elif level == "high":
            found.append(Priority.P2)
        elif level == "medium":
            found.append(Priority.P2 if is_serious(text) else Priority.P3)
        else:
            found.append(Priority.P3)
    if _BUGBOT_HIGH.search(text):
        found.append(Priority.P1)
    elif _BUGBOT_BUG.search(text):
        found.append(Priority.P2)
    if _CLAUDE_CRITICAL.search(text):
        found.append(Priority.P1)
    elif _WARNING in text:
        found.append(Priority.P2 if is_serious(text) else Priority.P3)
    if not found:
        found.append(Priority.P2 if is_serious(text) else Priority.P3)
    if review_state == "CHANGES_REQUESTED":
        found.append(Priority.P2)
    return min(found)  # "P1" < "P2" < "P3"
