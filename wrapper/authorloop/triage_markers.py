"""The explicit severity markers review bots write, and the priority each one means.

Each vendor's own level is mapped by its name (docs/priorities.md): a level called
critical, high, P0 or P1 is ``P1``; major, medium or P2 is ``P2``; minor, low, trivial,
info, P3, a nitpick or a refactor suggestion is ``P3``. A marker is recognised whoever
wrote the comment (a human may paste a bot's badge).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

P1, P2, P3 = "P1", "P2", "P3"

_LEVELS = {
    "critical": P1,
    "high": P1,
    "p0": P1,
    "p1": P1,
    "major": P2,
    "medium": P2,
    "p2": P2,
    "minor": P3,
    "low": P3,
    "trivial": P3,
    "info": P3,
    "p3": P3,
}


@dataclass(frozen=True)
class MarkerRule:
    """``name`` (shown as the deciding marker), a pattern and how to read its level:
    ``level`` fixed, or None to read group ``level`` of the match through the level map."""

    name: str
    pattern: re.Pattern[str]
    level: str | None = None
    unless: str | None = None  # a rule whose match makes this one irrelevant


def _rule(
    name: str, pattern: str, level: str | None = None, unless: str | None = None
) -> MarkerRule:
    return MarkerRule(name, re.compile(pattern, re.IGNORECASE | re.MULTILINE), level, unless)


# Order matters only for the name shown when two markers give the same priority.
RULES: tuple[MarkerRule, ...] = (
    # CodeRabbit: "_⚠️ Potential issue_ | _🔴 Critical_", "_🟠 Major_", "_🟡 Minor_",
    # "_🔵 Trivial_"; older comments carry only the kind, which the severity overrides.
    _rule(
        "coderabbit-severity",
        r"_?(?:🔴|🟠|🟡|🔵|⚪)\s*(?P<level>Critical|Major|Minor|Trivial|Info)_?",
    ),
    _rule("coderabbit-potential-issue", r"_⚠️ Potential issue_", P2, "coderabbit-severity"),
    _rule("coderabbit-refactor", r"_?🛠️ Refactor suggestion_?", P3, "coderabbit-severity"),
    _rule("coderabbit-nitpick", r"🧹 Nitpick", P3, "coderabbit-severity"),
    # Gemini Code Assist: ![critical](...svg), ![high], ![medium], ![low], and the
    # security variants ![security-high] / security-critical.svg.
    _rule(
        "gemini-badge",
        r"!\[(?:security[-_ ])?(?P<level>critical|high|medium|low)\]",
    ),
    _rule(
        "gemini-badge",
        r"codereviewagent/(?:security[-_])?(?P<level>critical|high|medium|low)"
        r"(?:[-_]priority)?\.svg",
    ),
    # Cursor Bugbot: "**High Severity**" (visible, or inside an HTML comment in older
    # comments), under a "### <title>" heading.
    _rule("bugbot-severity", r"\*\*(?P<level>High|Medium|Low) Severity\*\*"),
    # Codex: ![P1 Badge](https://img.shields.io/badge/P1-orange...).
    _rule("codex-badge", r"!\[(?P<level>P[0-3]) Badge\]"),
    # Greptile: <img alt="P1" ...> (attributes in any order).
    _rule("greptile-badge", r"<img\b[^>]*\balt=[\"'](?P<level>P[0-3])[\"']"),
    # Copilot: inline comments that call themselves a nitpick, and the verdict line its
    # reviews open with ("### 🟡 Changes recommended"; the only verdict seen in the
    # corpus, so the only one read).
    _rule("copilot-nitpick", r"^\s*\[nitpick\]", P3),
    _rule("copilot-verdict", r"^#{2,4}\s*🟡\s*Changes recommended", P2),
    # Claude: a critical section or flag.
    _rule("claude-critical", r"🚨|\*\*Critical\*\*|^#{2,4}\s*Critical Issues", P1),
)

# Review summaries that carry no finding of their own (the findings are inline).
SUMMARY = re.compile(
    r"\*\*Actionable comments posted: \d+\*\*|<!-- walkthrough_start -->|"
    r"^## Summary of Changes|^## Code Review\n+This pull request|^## Pull Request Overview|"
    r"Copilot reviewed \d+ out of \d+|"
    r"^### 💡 Codex Review|^<h3>Greptile Summary</h3>|^## Greptile Summary|"
    r"^<!-- greptile_summary -->",
    re.MULTILINE,
)

# A CodeRabbit inline comment whose header names a kind that is not a defect caps the
# comment at P3 whatever severity pill rides along ("_🛠️ Refactor suggestion_ |
# _🟠 Major_" is an important refactor, not a bug). Only the header line counts: a review
# summary lists nitpicks next to real findings.
KIND_CAP = re.compile(r"\A\s*_?(?:🛠️ Refactor suggestion|🧹 Nitpick)_?(?=\s*(?:\||$))", re.MULTILINE)


def find_markers(text: str) -> list[tuple[str, str, str]]:
    """Every marker in ``text`` as ``(priority, name, matched text)``, in rule order."""
    found: list[tuple[str, str, str]] = []
    for rule in RULES:
        if rule.unless is not None and any(name == rule.unless for _, name, _ in found):
            continue
        for match in rule.pattern.finditer(text):
            level = rule.level or _LEVELS[match.group("level").lower()]
            found.append((level, rule.name, match.group(0).strip()))
    return found
