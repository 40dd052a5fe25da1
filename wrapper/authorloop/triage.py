"""Priority triage of PR feedback: pure functions from (author, body) to source and priority.

The rubric and the marker table are in docs/priorities.md. In short:

* An explicit severity marker always wins (:mod:`wrapper.authorloop.triage_markers`: CodeRabbit,
  Gemini Code Assist, Cursor Bugbot, Codex, Greptile, Copilot and Claude formats); the
  most severe marker of a body decides.
* A review summary that carries no finding of its own (a walkthrough, an overview) is
  ``P3``.
* Without a marker the keyword fallback applies, and it is conservative: ``P2`` only when
  the text names a concrete serious failure (:data:`SERIOUS`) and does not call itself a
  nit or optional; never ``P1``; otherwise ``P3``. Its result says ``heuristic``.
* A review summary that requests changes is at least ``P2``.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from wrapper.authorloop.triage_markers import KIND_CAP, SUMMARY, find_markers


class Priority(enum.StrEnum):
    P1 = "P1"  # must fix before merge
    P2 = "P2"  # should fix
    P3 = "P3"  # optional: style, nits, questions


class Source(enum.StrEnum):
    GEMINI = "gemini"  # gemini-code-assist[bot]
    BUGBOT = "bugbot"  # cursor[bot] (Cursor Bugbot)
    CLAUDE = "claude"  # claude[bot] and other logins naming claude
    CODERABBIT = "coderabbit"  # coderabbitai[bot]
    CODEX = "codex"  # chatgpt-codex-connector[bot]
    GREPTILE = "greptile"  # greptile-apps[bot]
    COPILOT = "copilot"  # Copilot, copilot-pull-request-reviewer[bot]
    BOT = "bot"  # any other bot account
    HUMAN = "human"  # everyone else


class Basis(enum.StrEnum):
    """What decided a priority."""

    MARKER = "marker"  # an explicit severity marker
    SUMMARY = "summary"  # a review summary without findings of its own
    HEURISTIC = "heuristic"  # the keyword fallback (no marker)
    REVIEW_STATE = "review_state"  # a review that requests changes


@dataclass(frozen=True)
class Triage:
    """A priority and what decided it: ``basis`` and ``marker`` (the marker's name and the
    text it matched, the keyword found, or None)."""

    priority: Priority
    basis: Basis
    marker: str | None = None


# Concrete serious failures; bare words such as "bug" or "security" are not enough
# ("false sense of security", "appears to have a bug" in a nit).
SERIOUS = re.compile(
    r"\b(?:security (?:vulnerabilit\w+|hole|issue|flaw)|vulnerab\w+|"
    r"(?:sql|command|shell|code|header) injection|path traversal|remote code execution|"
    r"xss|csrf|ssrf|(?:leaks?|exposes?|logs?) (?:the |a |an )?(?:secret|token|credential|"
    r"password|api key)\w*|auth(?:entication|orization)? bypass|"
    r"breaking change|breaks? (?:the )?(?:api|build|compatibility|callers?)|"
    r"data loss|los(?:e|es|t) (?:the |all |user )?data|corrupt\w*|"
    r"race condition|deadlock\w*|crash(?:es|ed)?|null pointer|segfault|"
    r"infinite loop|memory leak|off-by-one|wrong (?:result|value|answer|output)|"
    r"incorrect (?:result|value|output|behaviou?r)|(?:will|would) (?:always )?fail|"
    r"(?:raises?|throws?) an? (?:unhandled )?(?:exception|error)|unhandled (?:exception|error)|"
    r"silently (?:ignor|fail|drop|swallow)\w*|(?:can|could|will|would|may|might) silently \w+|"
    r"runtime error|syntax errors?|bypass(?:es|ed|ing)?|"
    r"(?:can|could|will|would) (?:still )?(?:pass|skip) (?:the |this |its )?(?:\w+ )?"
    r"(?:approval|verification|validation|integrity|signature|security|auth\w*) "
    r"(?:step|check|gate))\b",
    re.IGNORECASE,
)
# A text that calls itself minor is not raised by keywords.
SOFTENED = re.compile(
    r"\b(?:nit(?:pick)?s?|optional(?:ly)?|nice to have|non-blocking|minor|style|typo|"
    r"false sense of security)\b",
    re.IGNORECASE,
)
_ORDER = {Priority.P1: 0, Priority.P2: 1, Priority.P3: 2}


def detect_source(login: str | None, user_type: str | None = None) -> Source:
    """Where feedback came from, by author login (``user_type`` ``Bot`` marks other bots)."""
    name = (login or "").lower()
    prefixes = (
        ("gemini-code-assist", Source.GEMINI),
        ("coderabbit", Source.CODERABBIT),
        ("chatgpt-codex-connector", Source.CODEX),
        ("greptile", Source.GREPTILE),
        ("copilot", Source.COPILOT),
    )
    for prefix, source in prefixes:
        if name.startswith(prefix):
            return source
    if name.startswith("cursor") or "bugbot" in name:
        return Source.BUGBOT
    if "claude" in name:
        return Source.CLAUDE
    if name.endswith("[bot]") or user_type == "Bot":
        return Source.BOT
    return Source.HUMAN


def is_serious(body: str) -> bool:
    """True when ``body`` names a concrete serious failure and does not call itself minor."""
    return SERIOUS.search(body) is not None and SOFTENED.search(body) is None


def triage(body: str, *, review_state: str | None = None) -> Triage:
    """The priority of one piece of feedback and what decided it (module docstring)."""
    text = body or ""
    markers = find_markers(text)
    if markers:
        level, name, matched = min(markers, key=lambda m: _ORDER[Priority(m[0])])
        result = Triage(Priority(level), Basis.MARKER, f"{name}: {matched}")
        if (kind := KIND_CAP.match(text)) is not None and level != Priority.P3:
            capped = f"coderabbit-kind: {kind.group(0).strip()} (caps {matched})"
            result = Triage(Priority.P3, Basis.MARKER, capped)
    elif (summary := SUMMARY.search(text)) is not None:
        result = Triage(Priority.P3, Basis.SUMMARY, summary.group(0))
    else:
        found = SERIOUS.search(text)
        if found is not None and SOFTENED.search(text) is None:
            result = Triage(Priority.P2, Basis.HEURISTIC, found.group(0))
        else:
            result = Triage(Priority.P3, Basis.HEURISTIC, None)
    if review_state == "CHANGES_REQUESTED" and result.priority == Priority.P3:
        return Triage(Priority.P2, Basis.REVIEW_STATE, "CHANGES_REQUESTED")
    return result


def classify(body: str, *, review_state: str | None = None) -> Priority:
    """The priority of one piece of feedback (:func:`triage` without the reason)."""
    return triage(body, review_state=review_state).priority
