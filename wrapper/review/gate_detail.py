"""What a check-run merge gate shows of a decided round (issue 30, D109): its summary and
its findings, read from the ledger.

- ``reviewed``: the round's findings are its recorded line comments (a round posted as
  one review, :mod:`wrapper.review.round_post`: path, line, the severity its body starts
  with) when there is a round record, else the finding lines of the verdict
  (:func:`wrapper.review.findings.parse_findings`, any ``path:line`` they name); the
  summary is the round's summary (or the verdict), after a line of counts.
- ``carried_forward`` to a new head: the verdict, said to be carried from the reviewed
  head with 0 legs, and no annotations: the lines they would point at are the reviewed
  head's. A rerun of the reviewed head itself (after a kill, say) shows it as reviewed.
- anything else: the report's detail (a deferral's reason, say).
"""

from __future__ import annotations

import re
from typing import Any

from wrapper.errors import LedgerError, Outcome
from wrapper.review.check_gate import GateDetail
from wrapper.review.context import ReviewContext, ReviewReport, ReviewRequest
from wrapper.review.findings import Finding, named_paths, parse_findings
from wrapper.review.round_post import load_round, round_path

_SEVERITY = re.compile(r"\A\s*\*\*(P[123])\b")


def _from_comment(comment: dict[str, Any]) -> Finding | None:
    path, line, body = comment.get("path"), comment.get("line"), comment.get("body")
    if not isinstance(path, str) or not isinstance(line, int) or not isinstance(body, str):
        return None
    found = _SEVERITY.match(body)
    return Finding("kdev", found.group(1) if found else "P2", body, path, line)


def round_detail(ctx: ReviewContext, req: ReviewRequest, report: ReviewReport) -> GateDetail:
    """The summary and findings of a decided ``report`` (module doc)."""
    record = None
    if report.patch_id is not None:
        record = ctx.ledger.find_verdict(req.repo, req.pr, report.patch_id)
    body = record.body if record is not None else ""
    verdict = report.verdict or "none"
    same_head = record is not None and record.head_sha == req.head_sha
    if report.outcome is Outcome.CARRIED_FORWARD and not same_head:
        head = record.head_sha if record is not None else "an earlier head"
        return GateDetail(
            f"Verdict {verdict}, carried forward from {head} ({report.detail}): "
            f"0 review legs ran for this head.\n\n{body}"
        )
    decided = (Outcome.REVIEWED, Outcome.CARRIED_FORWARD)  # carried: to its own head
    if report.outcome not in decided or report.patch_id is None:
        return GateDetail(report.detail or verdict)
    findings: list[Finding] = []
    if round_path(ctx.ledger, req.repo, req.pr, report.patch_id).exists():
        try:
            payload = load_round(ctx.ledger, req.repo, req.pr, report.patch_id)
        except LedgerError:
            payload = None
        if payload is not None:
            body = payload.body
            made = (_from_comment(c) for c in payload.comments)
            findings = [f for f in made if f is not None]
    else:
        findings = parse_findings("kdev", body, named_paths(body))
    anchored = sum(1 for f in findings if f.path is not None)
    counts = f"Verdict {verdict}: {len(findings)} findings, {anchored} on a line."
    return GateDetail(f"{counts}\n\n{body}", findings)
