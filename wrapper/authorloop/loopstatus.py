"""``kdev loop-status``: the author loop's stopping rules, in one place.

From the review rounds in the ledger (wrapper.authorloop.pr_status.review_rounds: a
round is a reviewed head; it "has P1/P2" when its verdict asks for changes or names a
P1/P2 finding) and the triage decisions (wrapper.authorloop.decisions), the first rule
that matches gives the state:

1. ``escalate``: a comment's triage is ``escalate`` (the owner decides it).
2. ``escalate``: a contradiction: a finding to ``fix`` at a later head lies within
   :data:`NEAR_LINES` lines of a finding already accepted (``fix``) at an earlier head in
   the same file, so the loop may be undoing its own earlier fix. A heuristic on
   location, said as such in the reason.
3. ``escalate``: the reviewers are mostly noise: of at least :data:`RATIO_MIN` decisions
   at the newest head, :data:`REJECT_SHARE` or more were rejected.
4. ``stop_ceiling``: :data:`CEILING` rounds were run.
5. ``stop_clean``: the last three rounds had no P1/P2: two clean rounds, then the final
   verification round, also clean.
6. ``one_more_round``: the last two rounds had no P1/P2: one final verification round.
7. ``continue``.

Pure: :func:`loop_status` takes the rounds and decisions and returns the state with its
reason, the round count, the clean streak and the fix/reject counts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from wrapper.authorloop.decisions import Decision
from wrapper.authorloop.rounds import Round
from wrapper.jsonform import JsonForm

CEILING = 7
NEAR_LINES = 3
RATIO_MIN = 5
REJECT_SHARE = 0.8


@dataclass(frozen=True)
class LoopStatus(JsonForm):
    """The loop's state, why, and the counts behind it."""

    state: str  # continue | one_more_round | stop_clean | stop_ceiling | escalate
    reason: str
    rounds: int
    clean_streak: int
    fixes: int
    rejects: int
    escalations: int


def _clean_streak(rounds: Sequence[Round]) -> int:
    streak = 0
    for one in reversed(rounds):
        if one.severe_findings:
            break
        streak += 1
    return streak


def contradictions(decisions: Sequence[Decision], rounds: Sequence[Round]) -> list[str]:
    """Every possible reversal (rule 2 of the module doc), one line each; decisions made at
    a head that is no reviewed round are left out (their order is unknown). Pure."""
    order = {one.head_sha: number for number, one in enumerate(rounds)}
    fixes = [d for d in decisions if d.decision == "fix" and d.path and d.line is not None]
    return [
        f"comment {later.comment_id} asks to change {later.path}:{later.line}, near what "
        f"comment {earlier.comment_id} had fixed in an earlier round (a possible reversal)"
        for later in fixes
        for earlier in fixes
        if earlier.path == later.path
        and earlier.head_sha in order
        and later.head_sha in order
        and order[earlier.head_sha] < order[later.head_sha]
        and abs((earlier.line or 0) - (later.line or 0)) <= NEAR_LINES
    ]


def dispositions(decisions: Sequence[Decision], head_sha: str) -> dict[str, int]:
    """How the triaged comments ended, for the merge-readiness summary. Pure:
    ``fixed`` (a fix pushed since), ``fix_pending``, ``wont_fix`` (rejected with a reason),
    ``out_of_scope`` (rejected by the P3 rule), ``escalated``."""
    counts = dict.fromkeys(("fixed", "fix_pending", "wont_fix", "out_of_scope", "escalated"), 0)
    for d in decisions:
        if d.decision == "fix":
            counts["fixed" if d.head_sha != head_sha else "fix_pending"] += 1
        elif d.decision == "escalate":
            counts["escalated"] += 1
        elif d.by == "rule" and d.priority == "P3":
            counts["out_of_scope"] += 1
        else:
            counts["wont_fix"] += 1
    return counts


def loop_status(rounds: Sequence[Round], decisions: Mapping[int, Decision]) -> LoopStatus:
    """The loop's state by the rules of the module doc. Pure."""
    listed = list(decisions.values())
    newest = rounds[-1].head_sha if rounds else None
    at_newest = [d for d in listed if d.head_sha == newest]
    fixes = sum(d.decision == "fix" for d in at_newest)
    rejects = sum(d.decision == "reject" for d in at_newest)
    escalated = [d for d in listed if d.decision == "escalate"]
    streak = _clean_streak(rounds)

    def status(state: str, reason: str) -> LoopStatus:
        return LoopStatus(state, reason, len(rounds), streak, fixes, rejects, len(escalated))

    if escalated:
        first = escalated[0]
        return status("escalate", f"comment {first.comment_id} is escalated: {first.reason}")
    reversals = contradictions(listed, rounds)
    if reversals:
        return status("escalate", reversals[0])
    decided = fixes + rejects
    if decided >= RATIO_MIN and rejects >= REJECT_SHARE * decided:
        return status(
            "escalate",
            f"{rejects} of {decided} findings at the newest head were rejected: the "
            "reviewers are mostly noise",
        )
    if len(rounds) >= CEILING:
        return status("stop_ceiling", f"{len(rounds)} rounds: the ceiling is {CEILING}")
    if streak >= 3:
        return status("stop_clean", "two rounds without P1/P2 and a clean verification round")
    if streak == 2:
        return status("one_more_round", "two rounds without P1/P2: one final verification round")
    if not rounds:
        return status("continue", "no review round yet")
    return status("continue", "the last round had P1/P2 findings" if streak == 0 else
                  "one round without P1/P2; two are needed")  # fmt: skip
