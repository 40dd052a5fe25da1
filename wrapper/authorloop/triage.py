"""Priority triage of PR feedback: pure functions from (author, body) to priority and rule.

Issue 29's table (docs/priorities.md, "The table"), in this order:

* A **decisive marker** (:mod:`wrapper.authorloop.triage_markers`) decides: Gemini
  ``![critical]``/``![high]``, Cursor ``**High Severity**``/``### Bug:``, Claude ``🚨``,
  ``### Critical Issues``, ``**Critical**`` and the other vendors' top levels block
  (``P1``/``P2``); their bottom levels (``![low]``, ``[nitpick]`` ...) are ``P3``. The most
  severe decisive marker of a body wins.
* A review summary, walkthrough or service notice without a finding of its own is ``P3``.
* Otherwise the **content** decides (:mod:`wrapper.authorloop.triage_content`): a
  correctness, security, breaking-change, data-loss or error-handling problem blocks,
  anything else is ``P3``; a content marker (Gemini ``![medium]``, Claude ``⚠️``, Codex
  and Greptile P2, Bugbot Medium) only says the content is to be read.
* Content that names neither is **ambiguous**: ``P2`` on the first round (``first_round``),
  ``P3`` after it. Such a comment is what the optional triage reviewer leg decides.
* A review summary that requests changes is at least ``P2``.

Every result says which rule decided in ``rule`` (shown as ``priority_source``):
``marker:gemini-high``, ``content:security``, ``summary``,
``default:first-round-ambiguous``, ``review-state:changes-requested``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from wrapper.authorloop.triage_content import read_content
from wrapper.authorloop.triage_markers import (
    BOILERPLATE,
    CONTENT,
    IMAGES,
    KIND_CAP,
    SUMMARY,
    Marker,
    find_markers,
)


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
    QODO = "qodo"  # qodo-merge-pro[bot], qodo-merge[bot], codium-pr-agent[bot]
    SOURCERY = "sourcery"  # sourcery-ai[bot]
    BOT = "bot"  # any other bot account
    HUMAN = "human"  # everyone else


class Basis(enum.StrEnum):
    """What decided a priority."""

    MARKER = "marker"  # a decisive severity marker
    SUMMARY = "summary"  # a review summary without findings of its own
    CONTENT = "content"  # the content rubric
    DEFAULT = "default"  # ambiguous content: the first-round default
    REVIEW_STATE = "review_state"  # a review that requests changes


@dataclass(frozen=True)
class Triage:
    """A priority and what decided it: ``basis``, ``marker`` (the deciding or content
    marker's name and the text it matched, or None) and ``rule`` (the
    ``priority_source``: ``marker:gemini-high``, ``content:security`` ...)."""

    priority: Priority
    basis: Basis
    marker: str | None = None
    rule: str = ""

    @property
    def blocking(self) -> bool:
        """Whether the finding blocks the loop's exit (P1 or P2)."""
        return self.priority is not Priority.P3


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
        ("qodo", Source.QODO),
        ("codium-pr-agent", Source.QODO),
        ("sourcery", Source.SOURCERY),
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


def triage(body: str, *, review_state: str | None = None, first_round: bool = True) -> Triage:
    """The priority of one piece of feedback and the rule that decided it (module doc)."""
    text = body or ""
    markers = find_markers(text)
    decisive = [m for m in markers if m.verdict != CONTENT]
    if decisive:
        result = _by_marker(text, decisive)
    elif (summary := SUMMARY.search(text)) is not None:
        result = Triage(Priority.P3, Basis.SUMMARY, summary.group(0), "summary")
    else:
        result = _by_content(text, markers, first_round)
    if review_state == "CHANGES_REQUESTED" and result.priority == Priority.P3:
        return Triage(
            Priority.P2, Basis.REVIEW_STATE, "CHANGES_REQUESTED", "review-state:changes-requested"
        )
    if review_state == "APPROVED" and result.basis is Basis.DEFAULT:
        # An approving review whose words decide nothing does not block.
        return Triage(Priority.P3, Basis.REVIEW_STATE, "APPROVED", "review-state:approved")
    return result


def _by_marker(text: str, decisive: list[Marker]) -> Triage:
    """The most severe decisive marker; a CodeRabbit kind header caps it at P3."""
    top = min(decisive, key=lambda m: _ORDER[Priority(m.verdict)])
    shown = f"{top.name}: {top.matched}"
    if (kind := KIND_CAP.match(text)) is not None and top.verdict != Priority.P3:
        capped = f"coderabbit-kind: {kind.group(0).strip()} (caps {top.matched})"
        return Triage(Priority.P3, Basis.MARKER, capped, "marker:coderabbit-kind")
    return Triage(Priority(top.verdict), Basis.MARKER, shown, f"marker:{top.name}")


def _by_content(text: str, markers: list[Marker], first_round: bool) -> Triage:
    """The content rubric; ambiguous content gets the first-round default."""
    hint = f"{markers[0].name}: {markers[0].matched}" if markers else None
    verdict = read_content(IMAGES.sub(" ", BOILERPLATE.sub(" ", text)))
    if verdict.priority is not None:
        return Triage(
            Priority(verdict.priority), Basis.CONTENT, hint, f"content:{verdict.category}"
        )
    if first_round:
        return Triage(Priority.P2, Basis.DEFAULT, hint, "default:first-round-ambiguous")
    return Triage(Priority.P3, Basis.DEFAULT, hint, "default:later-round-ambiguous")


def classify(body: str, *, review_state: str | None = None) -> Priority:
    """The priority of one piece of feedback (:func:`triage` without the reason)."""
    return triage(body, review_state=review_state).priority
