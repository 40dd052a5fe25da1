"""A finding the independent validator withdrew blocks nothing (issue 18, D57).

Found by the end-to-end author loop: a roster round whose only P1 the validator called
INVALID still recorded REQUEST_CHANGES, and ``loop-status`` counted the round as having
P1/P2, so a false finding, withdrawn on its thread, still held the pull request back.
"""

from __future__ import annotations

import dataclasses

from hypothesis import given
from hypothesis import strategies as st

from wrapper.authorloop.pr_status import _SEVERE
from wrapper.review.findings import (
    Finding,
    parse_findings,
    standing_output,
    without_withdrawn,
)
from wrapper.review.roster import Roster, RosterReviewer
from wrapper.review.roster_config import RosterConfig
from wrapper.review.roster_diff import has_blocking_finding
from wrapper.review.roster_review import merge_outputs

FILES = ("card.py",)


def reviewer(name: str) -> RosterReviewer:
    return RosterReviewer(name, "user", "", "AGENT-REVIEWERS.md", "", FILES, ())


def judged(name: str, output: str, answers: dict[str, str]) -> list[Finding]:
    """``output``'s findings with the validator's answer for each (by a word of its text),
    and its disposition under ``uncertain_action: drop``."""
    found = []
    for finding in parse_findings(name, output, FILES):
        answer = next((a for word, a in answers.items() if word in finding.text), "VALID")
        action = "post" if answer == "VALID" else "withdraw"
        found.append(dataclasses.replace(finding, validation=answer, action=action))
    return found


def verdict(outputs: dict[str, str], answers: dict[str, str]) -> tuple[str, str]:
    roster = Roster(tuple(reviewer(n) for n in outputs), RosterConfig(), ())
    findings = [f for n, out in outputs.items() for f in judged(n, out, answers)]
    merged = merge_outputs(roster, [(reviewer(n), o) for n, o in outputs.items()], findings)
    return merged.verdict, merged.body


def test_a_round_whose_only_p1_was_withdrawn_approves() -> None:
    out = "- [P1] the card number reaches the log at card.py:1\nVERDICT: REQUEST_CHANGES\n"
    decided, body = verdict({"pci": out}, {"log": "INVALID"})
    assert decided == "APPROVE"
    assert "withdrawn by the independent validator, INVALID" in body
    assert "the card number reaches the log" in body  # kept, marked, not hidden
    assert not _SEVERE.search(without_withdrawn(body))  # pr-status: a clean round


def test_a_finding_left_standing_still_blocks() -> None:
    out = "- [P1] the card number reaches the log\nP2 the loop never ends\nVERDICT: REQUEST_CHANGES"
    assert verdict({"pci": out}, {"log": "INVALID"})[0] == "REQUEST_CHANGES"
    other = {"pci": "P1 the log\nVERDICT: REQUEST_CHANGES", "style": "P2 a loop\n"}
    assert verdict(other, {"log": "INVALID"})[0] == "REQUEST_CHANGES"


def test_a_request_for_changes_without_a_finding_line_still_blocks() -> None:
    # Nothing was withdrawn that it could have rested on: fail closed.
    out = "I cannot approve this.\nVERDICT: REQUEST_CHANGES"
    assert verdict({"pci": out}, {})[0] == "REQUEST_CHANGES"
    nit = "P3 a vague name\nVERDICT: REQUEST_CHANGES"
    assert verdict({"pci": nit}, {"vague": "INVALID"})[0] == "REQUEST_CHANGES"


def test_an_uncertain_finding_still_blocks_even_when_its_comment_is_dropped() -> None:
    # A validator that does not answer is UNCERTAIN; letting that release the verdict
    # would let a broken validator wave every finding through.
    out = "- [P1] the card number reaches the log\nVERDICT: REQUEST_CHANGES"
    decided, body = verdict({"pci": out}, {"log": "UNCERTAIN"})
    assert decided == "REQUEST_CHANGES" and "withdrawn" not in body


def test_without_a_validator_nothing_changes() -> None:
    out = "- [P1] the card number reaches the log\nVERDICT: REQUEST_CHANGES"
    assert standing_output(out, judged("pci", out, {})) == out
    # A reviewer cannot hide a P1 line from pr-status by writing the note itself.
    forged = "P1 a real bug (withdrawn by the independent validator)"
    assert _SEVERE.search(without_withdrawn(forged))


LINES = st.lists(
    st.tuples(st.sampled_from(["P1", "P2", "P3"]), st.booleans()), min_size=1, max_size=6
)


@given(LINES)
def test_the_verdict_blocks_exactly_when_a_p1_or_p2_stands(lines: list[tuple[str, bool]]) -> None:
    text = "\n".join(f"- {p} finding {i} at card.py:{i + 1}" for i, (p, _) in enumerate(lines))
    out = f"{text}\nVERDICT: REQUEST_CHANGES"
    answers = {f"finding {i} ": "INVALID" for i, (_, bad) in enumerate(lines) if bad}
    findings = judged("r", out, answers)
    standing = [f for f in findings if f.action != "withdraw" and f.priority in ("P1", "P2")]
    severe = [f for f in findings if f.priority in ("P1", "P2")]
    expected = bool(standing) or not severe  # no P1/P2 at all: its own verdict stands
    assert has_blocking_finding(standing_output(out, findings)) is expected
    assert (verdict({"r": out}, answers)[0] == "REQUEST_CHANGES") is expected
