"""kdev's own roster findings in the author's loop (issue 18, docs/decisions.md D63).

Roster mode posts each reviewer's findings on the pull request (D56). They are review
feedback like a bot's, so ``kdev triage`` decides them too, with the validator's answer
as a rule (:func:`wrapper.authorloop.decisions.rule_decision`), and ``kdev close-out``
closes them. Which comments are ours comes from the findings records in the ledger (the
comment ids kdev posted), never from the ``<!-- kdev-agent: NAME -->`` signature, which
anyone can type. A finding the validator withdrew is left out: its withdrawal on its
thread already closed it (D57). Every other comment kdev posted (notices, replies,
withdrawal notes, review-bot triggers) stays out of triage, as before.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from wrapper.authorloop.feedback import Feedback
from wrapper.authorloop.triage import Basis, Priority
from wrapper.ledger.ledger import Ledger
from wrapper.review.findings_post import all_rounds

OWN_MARKER = "kdev finding"


@dataclass(frozen=True)
class OwnFinding:
    """One posted roster finding as its round recorded it."""

    comment_id: int
    agent: str
    priority: Priority
    validation: str | None  # VALID | UNCERTAIN | None (not checked); INVALID is withdrawn


def own_findings(ledger: Ledger, repo: str, pr: int) -> dict[int, OwnFinding]:
    """Comment id -> the posted, not withdrawn, roster findings of ``repo`` #``pr``."""
    found: dict[int, OwnFinding] = {}
    withdrawn: set[int] = set()
    for record in all_rounds(ledger, repo, pr):
        withdrawn.update(int(w["id"]) for w in record.withdrawn if w.get("id") is not None)
        for entry in record.comments:
            try:
                priority = Priority(str(entry.get("priority")))
                ident = int(entry["id"])
            except (KeyError, TypeError, ValueError):
                continue  # not a finding entry this version can read: left out of triage
            validation = entry.get("validation")
            found[ident] = OwnFinding(
                ident,
                str(entry.get("agent") or ""),
                priority,
                validation if isinstance(validation, str) else None,
            )
    return {ident: own for ident, own in found.items() if ident not in withdrawn}


def as_own(item: Feedback, own: OwnFinding) -> Feedback:
    """``item`` read as kdev's own finding: the priority its reviewer gave it (an explicit
    marker), not what the classifier makes of the posted text."""
    return replace(
        item,
        priority=own.priority,
        basis=Basis.MARKER,
        marker=OWN_MARKER,
        rule="marker:kdev-finding",
        own_finding=True,
        validation=own.validation,
    )
