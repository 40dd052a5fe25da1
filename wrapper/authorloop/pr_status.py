"""``kdev pr-status``: how close a pull request is to merge-ready.

It joins what kdev knows (the ledger: reviewed heads and their verdict files, carried
heads) with what GitHub says (feedback by priority and source, open threads, check runs
at the head). A round is one *reviewed* head (carried heads reuse a round's verdict). A
round "has P1/P2 findings" when its verdict is REQUEST_CHANGES or its verdict body names
a ``P1``/``P2`` finding; ``last_two_rounds_clean`` needs two rounds, both without.
Posting integrity is the newest round's findings record (roster mode,
:mod:`wrapper.review.findings_post`): findings expected against posted. Branch protection
(required approvals and checks of the base branch, met or not at the head) is
:mod:`wrapper.authorloop.protection`. With the merge gate on (D85), its status at the
head is shown too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from engine.github import GitHubClient, GitHubError
from wrapper.authorloop.feedback import FeedbackReport, collect_feedback
from wrapper.authorloop.protection import ProtectionStatus, read_protection
from wrapper.authorloop.rounds import Round
from wrapper.authorloop.watch import check_bucket
from wrapper.errors import KdevError
from wrapper.gh import get_pull
from wrapper.jsonform import PrHead
from wrapper.ledger.ledger import Ledger, format_timestamp
from wrapper.review.findings import without_withdrawn
from wrapper.review.findings_post import FindingsRound, round_record
from wrapper.review.merge_gate import gate_at

_SEVERE = re.compile(r"\bP[12]\b")


@dataclass(frozen=True)
class PrStatus(PrHead):
    rounds: list[Round]
    feedback: FeedbackReport
    ci: dict[str, str]  # check name -> bucket at the head
    ci_state: str  # passing | failing | pending | none | unknown
    # From kdev triage (triage.json): how the comments ended, and possible reversals.
    dispositions: dict[str, int] = field(default_factory=dict)
    contradictions: list[str] = field(default_factory=list)
    posting: FindingsRound | None = None  # the newest round's findings record, if any
    protection: ProtectionStatus | None = None  # the base branch's protection at the head
    # kdev's merge gate at the head (D85): context, state, description; None when off.
    merge_gate: dict[str, str | None] | None = None

    def posting_json(self) -> dict[str, Any] | None:
        """Posting integrity of the newest round: expected against posted findings."""
        p = self.posting
        if p is None:
            return None
        return {
            "patch_id": p.patch_id,
            "expected": p.expected,
            "posted": p.posted,
            "complete": p.posted == p.expected,
            "failures": p.failures,
            "withdrawn": len(p.withdrawn),
            "validator_acceptance": p.acceptance,
        }

    @property
    def last_two_rounds_clean(self) -> bool:
        return len(self.rounds) >= 2 and not any(r.severe_findings for r in self.rounds[-2:])

    def to_json(self) -> dict[str, Any]:
        return {
            "repo": self.repo,
            "pr": self.pr,
            "head_sha": self.head_sha,
            "rounds": [r.to_json() for r in self.rounds],
            "last_two_rounds_clean": self.last_two_rounds_clean,
            "feedback_by_priority": self.feedback.by_priority,
            "feedback_by_source": self.feedback.by_source,
            "open_threads": self.feedback.open_threads,
            "ci_state": self.ci_state,
            "ci": self.ci,
            "dispositions": self.dispositions,
            "contradictions": self.contradictions,
            "posting": self.posting_json(),
            "protection": None if self.protection is None else self.protection.to_json(),
            "merge_gate": self.merge_gate,
        }

    def lines(self) -> list[str]:
        """The human summary, one fact per line."""
        out = [f"{self.repo} #{self.pr} head {self.head_sha[:12]}"]
        out.append(f"review rounds: {len(self.rounds)}")
        for r in self.rounds:
            carried = f" (carried to {', '.join(h[:12] for h in r.carried_heads)})"
            severe = " P1/P2" if r.severe_findings else ""
            out.append(
                f"  {r.reviewed_at} {r.head_sha[:12]} {r.verdict}{severe}"
                f"{carried if r.carried_heads else ''}"
            )
        clean = "yes" if self.last_two_rounds_clean else "no"
        out.append(f"last two rounds without P1/P2: {clean}")
        prio = ", ".join(f"{k} {v}" for k, v in self.feedback.by_priority.items())
        source = ", ".join(f"{k} {v}" for k, v in sorted(self.feedback.by_source.items()))
        out.append(f"feedback: {prio}" + (f" ({source})" if source else ""))
        out.append(f"open threads: {self.feedback.open_threads}")
        checks = ", ".join(f"{k}: {v}" for k, v in sorted(self.ci.items()))
        out.append(f"ci: {self.ci_state}" + (f" ({checks})" if checks else ""))
        shown = ", ".join(f"{k} {v}" for k, v in self.dispositions.items() if v)
        out.append(f"dispositions: {shown or 'none triaged'}")
        out += [f"contradiction: {line}" for line in self.contradictions]
        out.append(f"posting integrity: {self._posting_line()}")
        if self.protection is not None:
            out += self.protection.lines()
        if self.merge_gate is not None:
            gate = self.merge_gate
            said = f" ({gate['description']})" if gate["description"] else ""
            kind = "check run " if gate.get("kind") == "check run" else ""
            out.append(f"merge gate {kind}{gate['context']}: {gate['state'] or 'not set'}{said}")
        return out

    def _posting_line(self) -> str:
        p = self.posting
        if p is None:
            return "no findings record for the newest round"
        state = "complete" if p.posted == p.expected else "INCOMPLETE"
        reasons = sorted({f.get("reason", "?") for f in p.failures})
        why = f" ({', '.join(reasons)})" if reasons else ""
        checked = {a: f"{c['valid']}/{sum(c.values())}" for a, c in sorted(p.acceptance.items())}
        validator = (
            f"; validator withdrew {len(p.withdrawn)}, accepted "
            + ", ".join(f"{a} {n}" for a, n in checked.items())
            if checked
            else ""
        )
        return f"{p.posted} of {p.expected} findings posted, {state}{why}{validator}"


def review_rounds(ledger: Ledger, repo: str, pr: int) -> list[Round]:
    """The reviewed heads of ``repo`` #``pr``, oldest first, with their carried heads."""
    index = ledger.read_index(repo, pr)
    rounds = []
    for head, entry in sorted(index.items(), key=lambda kv: kv[1].reviewed_at):
        if entry.carried_from is not None:
            continue
        record = ledger.find_verdict(repo, pr, entry.patch_id)
        body = record.body if record else ""
        rounds.append(
            Round(
                head_sha=head,
                patch_id=entry.patch_id,
                verdict=entry.verdict,
                reviewed_at=format_timestamp(entry.reviewed_at),
                severe_findings=entry.verdict == "REQUEST_CHANGES"
                or bool(_SEVERE.search(without_withdrawn(body))),
                carried_heads=sorted(h for h, e in index.items() if e.carried_from == head),
            )
        )
    return rounds


def ci_summary(runs: list[Any]) -> tuple[dict[str, str], str]:
    """Pure: check runs as name -> bucket (the newest run of a name wins) and one state."""
    buckets: dict[str, str] = {}
    for run in sorted((r for r in runs if isinstance(r, dict)), key=lambda r: r.get("id", 0)):
        buckets[str(run.get("name"))] = check_bucket(run.get("status"), run.get("conclusion"))
    values = set(buckets.values())
    if not values:
        return buckets, "none"
    if values & {"fail", "cancel"}:
        return buckets, "failing"
    if "pending" in values:
        return buckets, "pending"
    return buckets, "passing"


def pr_status(
    github: GitHubClient,
    ledger: Ledger,
    repo: str,
    pr: int,
    gate_context: str | None = None,
    gate_check: bool = False,
) -> PrStatus:
    """Read everything :class:`PrStatus` reports (GitHub errors propagate as KdevError);
    ``gate_context``: the merge gate's status context (or, with ``gate_check``, its
    check run's name: kdev is a GitHub App, D109), when the gate is on."""
    gate = None
    try:
        pull = get_pull(github, repo, pr)
        head = pull.head_sha
        runs = github.get_rest(
            f"repos/{repo}/commits/{head}/check-runs",
            {"per_page": 100},
            paginate=True,
            items_key="check_runs",
        ).body
        if gate_context is not None:
            gate = gate_at(github, repo, head, gate_context, gate_check)
    except GitHubError as exc:
        raise KdevError(
            f"cannot read {repo} #{pr}: {exc.message} [{exc.reason}]", "github_read_failed"
        ) from None
    from wrapper.authorloop.decisions import read_decisions
    from wrapper.authorloop.loopstatus import contradictions, dispositions

    ci, state = ci_summary(runs)
    feedback = collect_feedback(github, repo, pr)
    rounds = review_rounds(ledger, repo, pr)
    decided = list(read_decisions(ledger, repo, pr).values())
    posting = round_record(ledger, repo, pr, rounds[-1].patch_id) if rounds else None
    protection = read_protection(github, repo, pull, ci)
    return PrStatus(
        repo,
        pr,
        head,
        rounds,
        feedback,
        ci,
        state,
        dispositions(decided, head),
        contradictions(decided, rounds),
        posting,
        protection,
        gate,
    )
