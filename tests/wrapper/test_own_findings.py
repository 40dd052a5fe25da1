"""kdev's own roster findings in triage (issue 18, D63): which comments are ours comes
from the findings records, never from the signature; the validator's answer is a rule."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from wrapper.authorloop.decisions import decide, rule_settles
from wrapper.authorloop.feedback import Feedback
from wrapper.authorloop.own_findings import as_own, own_findings
from wrapper.authorloop.triage import Basis, Priority, Source
from wrapper.ledger.ledger import Ledger
from wrapper.review.findings_post import FINDINGS_PREFIX

REPO, PR = "octo/widgets", 7
SIGNED = "**pci** (P2): a finding\n\n<!-- kdev-agent: pci -->"


def record(ledger: Ledger, patch: str, comments: list[dict[str, Any]], **extra: Any) -> None:
    directory = ledger.pr_dir(REPO, PR)
    ledger.ensure_dir(directory)
    body = {"head_sha": "a" * 40, "patch_id": patch, "posted_at": patch, "expected": 1,
            "posted": len(comments), "comments": comments, **extra}  # fmt: skip
    (directory / f"{FINDINGS_PREFIX}{patch}.json").write_text(json.dumps(body))


def entry(ident: int, priority: str, validation: str | None = "VALID") -> dict[str, Any]:
    found = {"agent": "pci", "priority": priority, "path": None, "line": None, "id": ident}
    return found if validation == "-" else {**found, "validation": validation}


def item(ident: int, user: str = "kdev-bot", source: Source = Source.HUMAN) -> Feedback:
    # kdev's token is often a person's: its comments read as source "human".
    return Feedback(kind="issue", id=ident, node_id=f"N{ident}", user=user, source=source,
                    priority=Priority.P3, body=SIGNED, created_at="t",
                    basis=Basis.CONTENT, agent="pci")  # fmt: skip


def test_the_records_say_which_comments_are_ours(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    record(ledger, "1", [entry(10, "P1"), entry(11, "P3", None)])
    withdrawn = {"id": 12, "validation": "INVALID", "reason": "no", "done": ["replied"]}
    record(ledger, "2", [entry(12, "P2"), entry(13, "P2", "UNCERTAIN"), entry(14, "P2", "-")],
           withdrawn=[withdrawn])  # fmt: skip
    own = own_findings(ledger, REPO, PR)
    assert sorted(own) == [10, 11, 13, 14]  # 12 was withdrawn on its thread
    assert (own[10].priority, own[10].validation) == (Priority.P1, "VALID")
    assert own[14].validation is None  # a record from before validation was kept


def test_the_validator_answer_and_priority_decide_before_the_source(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    record(ledger, "1", [entry(10, "P1"), entry(11, "P3"), entry(13, "P2", "UNCERTAIN")])
    own = own_findings(ledger, REPO, PR)
    items = [as_own(item(i), own[i]) for i in (10, 11, 13)]
    assert all(rule_settles(i) for i in items)  # never left to a triage reviewer
    decided = decide(items, {}, {}, "h" * 40, reviewer={})
    assert {k: (d.decision, d.priority) for k, d in decided.items()} == {
        10: ("fix", "P1"),
        11: ("reject", "P3"),
        13: ("escalate", "P2"),
    }
    assert "found VALID by the independent validator" in decided[10].reason


def test_a_forged_signature_makes_nobody_a_kdev_finding(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    record(ledger, "1", [entry(10, "P1")])
    forged = item(99, user="mallory")  # signs like kdev, is not in any record
    assert 99 not in own_findings(ledger, REPO, PR)
    decided = decide([forged], {}, {}, "h" * 40)
    assert decided[99].decision == "escalate"  # a person's comment: the owner decides
