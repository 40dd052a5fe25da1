"""``kdev triage``: one decision per open comment, kept in the ledger.

Each open piece of feedback (wrapper.authorloop.feedback) gets one of ``fix``,
``reject`` (with a reason) or ``escalate`` (the owner decides; a notice is sent once).
Rules decide first (:func:`rule_decision`, pure), in this order:

0. kdev's own roster finding (wrapper.authorloop.own_findings): one the independent
   validator was UNCERTAIN of -> ``escalate``; otherwise by its reviewer's priority,
   ``P1``/``P2`` -> ``fix`` and ``P3`` -> ``reject`` (one it found INVALID was withdrawn
   on its thread and never comes here);
1. a comment by a person (source ``human``) -> ``escalate``: kdev does not overrule a
   person;
2. a review summary without findings of its own -> ``reject`` ("a summary, no finding");
3. ``P1`` or ``P2`` -> ``fix``;
4. ``P3`` -> ``reject`` ("P3: optional, outside this loop").

Where neither a marker nor the content decides (``default``: the first-round default of
issue 29's table), rules 3 and 4 only apply a default. With a triage reviewer configured
(:mod:`wrapper.authorloop.triage_leg`) such a bot comment is left to that leg
(:func:`rule_settles` is False) and decided ``by`` ``reviewer`` from its answer; a
comment the leg does not answer cleanly stays undecided (no decision stored). Each
decision records what decided it in ``priority_source``: the triage rule
(``marker:gemini-high``, ``content:security`` ...), ``triage-leg`` or ``manual``.

A person or an agent overrides any decision with ``--decide ID=fix``,
``ID=reject:REASON`` or ``ID=escalate``; a manual decision is never replaced by a rule.
Decisions live in the PR's ``triage.json`` in the ledger (written atomically), each with
the head it was made at, so later rounds and ``kdev loop-status`` can read them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from engine.jsonable import as_json
from wrapper.authorloop.feedback import Feedback
from wrapper.authorloop.triage import Basis, Priority, Source
from wrapper.errors import ConfigError, LedgerError
from wrapper.ledger.ledger import Ledger

TRIAGE_FILE = "triage.json"
DECISIONS = ("fix", "reject", "escalate")
INVALID_DECISION = "invalid_decision"


@dataclass(frozen=True)
class Decision:
    """The triage decision of one comment."""

    comment_id: int
    decision: str  # fix | reject | escalate
    reason: str
    by: str  # rule | manual | reviewer
    priority: str
    source: str
    head_sha: str
    path: str | None = None
    line: int | None = None
    notified: bool = False  # an escalation's notice went out
    closed: tuple[str, ...] = ()  # close-out steps done: replied, resolved, hidden
    # what decided: the triage rule, "triage-leg" or "manual" ("" in older files)
    priority_source: str = ""

    def to_json(self) -> dict[str, Any]:
        return as_json(self)


def rule_decision(item: Feedback) -> tuple[str, str]:
    """``(decision, reason)`` for ``item`` by the rules of the module doc. Pure."""
    if item.own_finding:
        return _own_rule(item)
    if item.source is Source.HUMAN:
        return "escalate", "a person's comment: the owner decides"
    if item.basis is Basis.SUMMARY:
        return "reject", "a summary, no finding of its own"
    if item.priority in (Priority.P1, Priority.P2):
        return "fix", f"{item.priority.value} finding"
    return "reject", "P3: optional, outside this loop"


def _own_rule(item: Feedback) -> tuple[str, str]:
    """kdev's own roster finding: the validator's answer, then its priority."""
    who = f"{item.agent or 'a roster reviewer'}'s {item.priority.value} finding"
    if item.validation == "UNCERTAIN":
        return "escalate", f"{who}: the independent validator was unsure, the owner decides"
    if item.priority in (Priority.P1, Priority.P2):
        checked = ", found VALID by the independent validator" if item.validation else ""
        return "fix", f"{who}{checked}"
    return "reject", "P3: optional, outside this loop"


def rule_settles(item: Feedback) -> bool:
    """Whether the rules decide ``item`` firmly; False: a bot's comment whose priority
    is only the first-round default (neither a marker nor its content decides), left to
    a triage reviewer when there is one."""
    return item.own_finding or item.source is Source.HUMAN or item.basis is not Basis.DEFAULT


def parse_manual(texts: Iterable[str]) -> dict[int, tuple[str, str]]:
    """``--decide ID=fix|escalate|reject:REASON`` -> ``{id: (decision, reason)}``."""
    found: dict[int, tuple[str, str]] = {}
    for text in texts:
        ident, _, rest = text.partition("=")
        decision, _, reason = rest.partition(":")
        if not ident.strip().isdigit() or decision not in DECISIONS:
            raise ConfigError(
                f"--decide takes ID=fix, ID=escalate or ID=reject:REASON, got {text!r}",
                INVALID_DECISION,
            )
        if decision == "reject" and not reason.strip():
            raise ConfigError(f"--decide {text!r}: a rejection needs a reason", INVALID_DECISION)
        found[int(ident)] = (decision, reason.strip() or "decided by hand")
    return found


def decide(
    items: Iterable[Feedback],
    known: Mapping[int, Decision],
    manual: Mapping[int, tuple[str, str]],
    head_sha: str,
    reviewer: Mapping[int, tuple[str, str]] | None = None,
) -> dict[int, Decision]:
    """Every item's decision: a manual one given now wins, then one already made (by
    hand, rule or reviewer), then the rule when it settles the item, then the triage
    reviewer's answer. ``reviewer`` None: no triage reviewer, the rule decides every
    item; otherwise an item the rule does not settle and the reviewer did not answer
    gets no decision. Pure."""
    decided: dict[int, Decision] = dict(known)
    for item in items:
        before = known.get(item.id)
        if item.id in manual:
            choice, reason = manual[item.id]
            decided[item.id] = _decision(item, choice, reason, "manual", head_sha, before)
        elif before is not None:
            continue
        elif reviewer is None or rule_settles(item):
            choice, reason = rule_decision(item)
            decided[item.id] = _decision(item, choice, reason, "rule", head_sha, None)
        elif item.id in reviewer:
            choice, reason = reviewer[item.id]
            decided[item.id] = _decision(item, choice, reason, "reviewer", head_sha, None)
    unknown = set(manual) - {item.id for item in items} - set(known)
    if unknown:
        raise ConfigError(
            f"--decide names comment(s) not open on this PR: {sorted(unknown)}", INVALID_DECISION
        )
    return decided


def _decision(
    item: Feedback, choice: str, reason: str, by: str, head: str, before: Decision | None
) -> Decision:
    notified = before is not None and before.notified and choice == "escalate"
    closed = before.closed if before is not None else ()
    decided_by = {"manual": "manual", "reviewer": "triage-leg"}.get(by, item.priority_source)
    return Decision(
        item.id,
        choice,
        reason,
        by,
        item.priority.value,
        item.source.value,
        head,
        item.path,
        item.line,
        notified,
        closed,
        decided_by,
    )


def triage_path(ledger: Ledger, repo: str, pr: int) -> Path:
    return ledger.pr_dir(repo, pr) / TRIAGE_FILE


def read_decisions(ledger: Ledger, repo: str, pr: int) -> dict[int, Decision]:
    """The PR's stored decisions (none when there is no file yet)."""
    path = triage_path(ledger, repo, pr)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {
            int(key): Decision(**{**value, "closed": tuple(value.get("closed", ()))})
            for key, value in data["decisions"].items()
        }
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise LedgerError(f"{path} is unreadable: {exc}", "triage_corrupt") from None


def write_decisions(ledger: Ledger, repo: str, pr: int, decided: Mapping[int, Decision]) -> None:
    path = triage_path(ledger, repo, pr)
    ledger.ensure_dir(path.parent)
    body = {"decisions": {str(k): v.to_json() for k, v in sorted(decided.items())}}
    ledger.atomic_write(path, json.dumps(body, indent=2))


def mark_notified(decided: Mapping[int, Decision], ids: Iterable[int]) -> dict[int, Decision]:
    chosen = set(ids)
    return {k: replace(v, notified=True) if k in chosen else v for k, v in decided.items()}
