"""A roster reviewer's findings, parsed from its output (pure: no I/O).

A finding is a line the roster grammar counts (docs/reviewers.md, "Roster mode"): after
optional whitespace and a list marker (``-``, ``*``, ``+``, ``1.``, ``1)``), ``P1``/``P2``/
``P3`` as a word, ``[P1]`` or ``**P1**``. When the line names ``path:line`` and ``path`` is
one of the reviewer's changed files, the finding is anchored there (a line comment);
otherwise it is a PR-level comment. Each posted finding carries the hidden signature
``<!-- kdev-agent: NAME -->`` that ``kdev comments --agent NAME`` filters on.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from wrapper.jsonform import json_in_order

_FINDING = re.compile(
    r"^\s*(?:[-*+]\s+|\d+[.)]\s+)?(?:\[(P[123])\]|\*\*(P[123])\*\*|(P[123])\b)(.*)$",
    re.MULTILINE,
)
# ``path:line`` in a finding's text, optionally in backticks; the path has no spaces.
_LOCATION = re.compile(r"`?([A-Za-z0-9_.][A-Za-z0-9_./-]*):([1-9][0-9]{0,8})\b`?")
# The signature kdev appends: the body's last line (earlier text is escaped by the gate).
_SIGNATURE = re.compile(r"<!-- kdev-agent: ([A-Za-z0-9._-]{1,100}) -->\s*\Z")
AGENT_NAME = re.compile(r"[A-Za-z0-9._-]{1,100}")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


@dataclass(frozen=True)
class Finding:
    """One finding of one roster reviewer; ``path``/``line`` set when it is anchored."""

    agent: str
    priority: str  # "P1" | "P2" | "P3"
    text: str  # the whole finding line, stripped
    path: str | None = None
    line: int | None = None
    # The independent validator's answer (wrapper.review.validator); None: not checked.
    validation: str | None = None
    validation_reason: str = ""
    action: str = "post"  # post | annotate | withdraw (the validator's policy applied)

    def to_json(self) -> dict[str, Any]:
        return json_in_order(self, "agent priority path line")


def agent_name(name: str) -> str:
    """``name`` as it appears in a signature: characters outside ``[A-Za-z0-9._-]``
    become ``-``, cut to 100 characters (a roster name is free text from the base
    branch; the signature must stay one HTML comment)."""
    cleaned = _UNSAFE.sub("-", name)[:100]
    return cleaned or "-"


def signature(name: str) -> str:
    """The hidden signature of a finding posted for reviewer ``name``."""
    return f"<!-- kdev-agent: {agent_name(name)} -->"


def signed_by(body: str) -> str | None:
    """The agent name of the signature ending ``body``, or None when it has none."""
    found = _SIGNATURE.search(body)
    return found.group(1) if found else None


def named_paths(output: str) -> set[str]:
    """Every ``path`` that a ``path:line`` of ``output`` names (a check run's annotations
    may sit on any path of the repository, changed or not)."""
    return {loc.group(1) for loc in _LOCATION.finditer(output)}


def parse_findings(agent: str, output: str, changed_files: Iterable[str]) -> list[Finding]:
    """Every finding line of ``output`` in order (see the module doc)."""
    changed = set(changed_files)
    found: list[Finding] = []
    for match in _FINDING.finditer(output):
        priority = match.group(1) or match.group(2) or match.group(3)
        text = match.group(0).strip()
        path: str | None = None
        line: int | None = None
        for loc in _LOCATION.finditer(match.group(4)):
            if loc.group(1) in changed:
                path, line = loc.group(1), int(loc.group(2))
                break
        found.append(Finding(agent, priority, text, path, line))
    return found


def finding_body(finding: Finding) -> str:
    """The text posted for ``finding`` (the signature is added by the posting gate); an
    annotated finding carries the validator's doubt on a second line."""
    body = f"**{finding.agent}** ({finding.priority}): {finding.text}"
    if finding.action == "annotate":
        body += f"\n\n_Independent validator: uncertain: {finding.validation_reason}_"
    return body


# How a withdrawn finding's line reads in the merged verdict body: the note goes first,
# so the line no longer starts with its priority and reads as a finding to nobody
# (roster mode's blocking rule, pr-status's severity); ``WITHDRAWN_VERDICT`` replaces the
# reviewer's own REQUEST_CHANGES when every P1/P2 finding it rested on was withdrawn.
WITHDRAWN_NOTE = "withdrawn by the independent validator"
WITHDRAWN_VERDICT = f"(its request for changes was {WITHDRAWN_NOTE} with its findings)"
_WITHDRAWN_PREFIX = f"- ({WITHDRAWN_NOTE}, "
_REQUEST_CHANGES_LINE = re.compile(r"^\s*VERDICT:\s*REQUEST_CHANGES\s*$")


def standing_output(output: str, findings: Sequence[Finding]) -> str:
    """A reviewer's ``output`` with each of its ``findings`` the validator found INVALID
    marked (see WITHDRAWN_NOTE); unchanged when there is none. Only a positive INVALID
    releases a finding: an UNCERTAIN one (a validator that did not answer among them)
    still blocks, whatever ``uncertain_action`` does with its comment. Pure."""
    withdrawn = {f.text: f for f in findings if f.validation == "INVALID"}
    if not withdrawn:
        return output
    lines = output.split("\n")
    for number, line in enumerate(lines):
        finding = withdrawn.get(line.strip())
        if finding is not None:
            why = f"INVALID: {finding.validation_reason}".strip()
            lines[number] = f"{_WITHDRAWN_PREFIX}{why}) {finding.text}"
    severe = [f for f in findings if f.priority in ("P1", "P2")]
    if severe and all(f.validation == "INVALID" for f in severe):
        lines = [WITHDRAWN_VERDICT if _REQUEST_CHANGES_LINE.match(x) else x for x in lines]
    return "\n".join(lines)


def without_withdrawn(body: str) -> str:
    """``body`` without the lines :func:`standing_output` marked withdrawn. Pure."""
    kept = [line for line in body.split("\n") if not line.startswith(_WITHDRAWN_PREFIX)]
    return "\n".join(kept)
