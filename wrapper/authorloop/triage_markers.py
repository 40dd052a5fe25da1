"""The explicit severity markers review bots write, and what each one means for the loop.

The table is issue 29's (docs/priorities.md, "The table"): a marker either **blocks**
(``P1``/``P2``: the loop must fix it before it exits), is **optional** (``P3``), or
leaves the decision to the **content** of the comment (:data:`CONTENT`), as Gemini's
``![medium]`` and Claude's ``⚠️`` do. Each vendor's scale is mapped into that table:
its top levels block, its middle level is read by content, its bottom levels are P3.
Codex's P0-P3 are defined by its own review prompt (P2 "Normal", a medium level: content;
D108), and Greptile's badges are read the same way.
A marker is recognised whoever wrote the comment (a human may paste a bot's badge).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

P1, P2, P3 = "P1", "P2", "P3"
CONTENT = "content"  # the content of the comment decides (wrapper.authorloop.triage_content)


@dataclass(frozen=True)
class MarkerRule:
    """``vendor`` and a pattern; the level is ``level`` (fixed) or, when None, group
    ``level`` of the match read through ``levels``."""

    vendor: str
    pattern: re.Pattern[str]
    level: str | None = None
    levels: tuple[tuple[str, str], ...] = ()
    unless: tuple[str, ...] = ()  # keys of rules whose match makes this one irrelevant
    tag: str | None = None  # the name shown for a fixed-level rule

    @property
    def key(self) -> str:
        return f"{self.vendor}-{self.tag or 'level'}"


@dataclass(frozen=True)
class Marker:
    """One marker found: its verdict (``P1``, ``P2``, ``P3`` or :data:`CONTENT`), its
    name (``gemini-high``) and the text it matched."""

    verdict: str
    name: str
    matched: str


def _rule(
    vendor: str,
    pattern: str,
    level: str | None = None,
    *,
    levels: dict[str, str] | None = None,
    unless: tuple[str, ...] = (),
    tag: str | None = None,
) -> MarkerRule:
    compiled = re.compile(pattern, re.IGNORECASE | re.MULTILINE)
    return MarkerRule(vendor, compiled, level, tuple((levels or {}).items()), unless, tag)


# Sources for each vendor's levels are in docs/priorities.md ("The table").
_GEMINI = {"critical": P1, "high": P2, "medium": CONTENT, "low": P3}
_CODERABBIT = {"critical": P1, "major": P2, "minor": P3, "trivial": P3, "info": P3}
_BUGBOT = {"high": P1, "medium": CONTENT, "low": P3}
# Codex's own review prompt defines its scale: P0 "Drop everything to fix", P1 "Urgent",
# P2 "Normal. To be fixed eventually", P3 "Low. Nice to have" (docs/priorities.md, D108).
# So P0/P1 block, P2 is a medium level read by content (as Gemini's medium), P3 is P3.
# Greptile's badges use the same words with no definition of their own (D108).
_P_BADGE = {"p0": P1, "p1": P1, "p2": CONTENT, "p3": P3}

RULES: tuple[MarkerRule, ...] = (
    # CodeRabbit: "_⚠️ Potential issue_ | _🔴 Critical_", "_🟠 Major_", "_🟡 Minor_",
    # "_🔵 Trivial_"; older comments carry only the kind.
    _rule(
        "coderabbit",
        r"_?(?:🔴|🟠|🟡|🔵|⚪)\s*(?P<level>Critical|Major|Minor|Trivial|Info)_?",
        levels=_CODERABBIT,
    ),
    _rule(
        "coderabbit",
        r"_⚠️ Potential issue_",
        CONTENT,
        unless=("coderabbit-level",),
        tag="potential-issue",
    ),
    _rule(
        "coderabbit", r"_?🛠️ Refactor suggestion_?", P3, unless=("coderabbit-level",), tag="refactor"
    ),
    _rule("coderabbit", r"🧹 Nitpick", P3, unless=("coderabbit-level",), tag="nitpick"),
    # Gemini Code Assist: ![critical](...svg), ![high], ![medium], ![low], and the
    # security variants ![security-high] / security-critical.svg.
    _rule("gemini", r"!\[(?:security[-_ ])?(?P<level>critical|high|medium|low)\]", levels=_GEMINI),
    _rule(
        "gemini",
        r"codereviewagent/(?:security[-_])?(?P<level>critical|high|medium|low)"
        r"(?:[-_]priority)?\.svg",
        levels=_GEMINI,
    ),
    # Cursor Bugbot: "**High Severity**" under a "### <title>" heading (visible, or in an
    # HTML comment in older comments), and the older "### Bug: <title>" heading.
    _rule("bugbot", r"\*\*(?P<level>High|Medium|Low) Severity\*\*", levels=_BUGBOT),
    _rule("bugbot", r"^###\s*Bug:", P2, tag="bug-heading"),
    # Codex: ![P1 Badge](https://img.shields.io/badge/P1-orange...).
    _rule("codex", r"!\[(?P<level>P[0-3]) Badge\]", levels=_P_BADGE),
    # Greptile: <img alt="P1" ...> (attributes in any order), and its summary's own merge
    # verdict: "not yet safe to merge", or a confidence score of 3/5 or less.
    _rule("greptile", r"<img\b[^>]*\balt=[\"'](?P<level>P[0-3])[\"']", levels=_P_BADGE),
    _rule(
        "greptile",
        r"\bnot (?:yet )?safe to merge\b|Confidence Score: [0-3]/5",
        P2,
        tag="not-safe-to-merge",
    ),
    # Copilot: inline comments that call themselves a nitpick, and the verdict its
    # reviews open with ("### 🟡 Changes recommended"), which the content decides.
    _rule("copilot", r"^\s*\[nitpick\]", P3, tag="nitpick"),
    _rule("copilot", r"^#{2,4}\s*🟡\s*Changes recommended", CONTENT, tag="changes-recommended"),
    # Claude: a critical section or flag blocks; "⚠️" is read by content. Claude Code
    # Review's managed findings: 🔴 Important blocks, 🟡 Nit and 🟣 Pre-existing do not.
    _rule("claude", r"🚨|\*\*Critical\*\*|^#{1,4}\s*Critical Issues", P1, tag="critical"),
    _rule("claude", r"🔴\s*\**Important\b", P2, tag="important"),
    _rule("claude", r"🟡\s*\**Nit\b", P3, tag="nit"),
    _rule("claude", r"🟣\s*\**Pre-existing\b", P3, tag="pre-existing"),
    _rule(
        "claude",
        r"⚠️",
        CONTENT,
        unless=("coderabbit-level", "coderabbit-potential-issue"),
        tag="warning",
    ),
    # Sourcery: "**issue (bug_risk):**" and "**issue (security):**" are read by content;
    # "**suggestion (...):**", "**nitpick:**", "**praise:**", "**question:**" are P3.
    _rule("sourcery", r"^\s*\*\*issue(?: \((?P<area>[a-z_ ]+)\))?:\*\*", CONTENT, tag="issue"),
    _rule(
        "sourcery",
        r"^\s*\*\*(?:suggestion|nitpick|praise|question|chore|typo)(?: \([a-z_ ]+\))?:\*\*",
        P3,
        tag="suggestion",
    ),
)

# Review summaries, walkthroughs and service notices that carry no finding of their own
# (the findings are inline).
SUMMARY = re.compile(
    r"\*\*Actionable comments posted: \d+\*\*|<!-- walkthrough_start -->|"
    r"^## Summary of Changes|^## Code Review\n+This pull request|^## Pull Request Overview|"
    r"Copilot reviewed \d+ out of \d+|Copilot wasn't able to review|"
    r"^### 💡 Codex Review|^<h3>Greptile Summary</h3>|^## Greptile Summary|"
    r"^<!-- greptile_summary -->|^<!-- greptile-status -->|"
    r"No code suggestions found for the PR|"
    r"<strong>No major issues detected</strong>|"
    r"\*\*Code review skipped\*\*|review (?:was )?skipped|rate limit of|"
    r"reached (?:the|your) [\w -]*(?:limit|quota)|Review: ✅ LGTM|PR Review Complete ✅|"
    r"^Codex Review: Didn't find any major issues|"
    r"^Cursor Bugbot has reviewed your changes and found \d+ potential issues?",
    re.MULTILINE | re.IGNORECASE,
)

# A vendor's fixed wording, which says nothing about the finding: Qodo calls every
# suggestion "optional" and its reviewer guide lists "No security concerns identified".
BOILERPLATE = re.compile(
    r"Explore these optional code suggestions:?|No security concerns identified|"
    r"No major issues detected|Here are some key observations to aid the review process:?|"
    r"PR Reviewer Guide|PR Code Suggestions",
    re.IGNORECASE,
)

# Images are not words: a badge's own URL ("...badge/P2-yellow?style=flat") would read as
# "style" (D108), so images and their markup are removed before the content is read.
IMAGES = re.compile(r"!\[[^\]]*\]\([^)]*\)|<img\b[^>]*>", re.IGNORECASE)

# A CodeRabbit inline comment whose header names a kind that is not a defect caps the
# comment at P3 whatever severity pill rides along ("_🛠️ Refactor suggestion_ |
# _🟠 Major_" is an important refactor, not a bug). Only the header line counts: a review
# summary lists nitpicks next to real findings.
KIND_CAP = re.compile(r"\A\s*_?(?:🛠️ Refactor suggestion|🧹 Nitpick)_?(?=\s*(?:\||$))", re.MULTILINE)


def _name(rule: MarkerRule, match: re.Match[str]) -> str:
    if rule.tag is not None:
        return f"{rule.vendor}-{rule.tag}"
    return f"{rule.vendor}-{match.group('level').lower()}"


def find_markers(text: str) -> list[Marker]:
    """Every marker in ``text``, in rule order."""
    found: list[Marker] = []
    fired: set[str] = set()
    for rule in RULES:
        if fired.intersection(rule.unless):
            continue
        levels = dict(rule.levels)
        for match in rule.pattern.finditer(text):
            verdict = rule.level or levels[match.group("level").lower()]
            found.append(Marker(verdict, _name(rule, match), match.group(0).strip()))
            fired.add(rule.key)
    return found
