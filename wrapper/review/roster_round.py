"""A roster round as one GitHub review (issue 27; docs/reviewers.md "Roster mode";
docs/decisions.md D90).

With ``review_post`` on for the repository, a roster round is not posted one comment a
finding (:mod:`wrapper.review.findings_post`) but recorded and posted by
:mod:`wrapper.review.round_post`, like a one-reviewer round:

- :func:`roster_payload` renders the round: every roster finding (the roster grammar,
  :mod:`wrapper.review.findings`) that names ``path:line`` of its reviewer's files on a
  line GitHub accepts (checked by :mod:`wrapper.review.anchoring`, as GitHub will) is a
  line comment, its text as roster comments read (``**NAME** (P1): ...``) and signed
  ``<!-- kdev-agent: NAME -->`` by :mod:`wrapper.review.round_post` after the gate; the
  summary holds the merged verdict, the counts by severity, the roster line, the files
  reviewed and not reviewed, and one section per reviewer with its verdict, its files
  and each of its findings not on a line (with ``path:line`` and why). The fallback
  summary (for GitHub's 422) lists every finding. Each finding is kept in the payload
  with its validator answer and the index of its line comment, not its words.
- :func:`record_posted` writes the round's findings record (``findings-<patch_id>.json``,
  the form :mod:`wrapper.review.findings_post` writes) from the ids GitHub gave the line
  comments, before the ``review`` part is crossed off. The validator's withdrawals then
  run on those comments as on any posted finding (a reply on the thread, then resolved).
  A withdrawn finding that stands in the summary has no comment of its own: its summary
  item says it was withdrawn and why, and it is recorded done (``in_summary``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from engine.timefmt import iso_utc
from wrapper.post import PostingContext
from wrapper.review.anchoring import FileDiff, Placement, place
from wrapper.review.exclusions import Decision
from wrapper.review.findings import WITHDRAWN_NOTE, Finding, agent_name, finding_body
from wrapper.review.findings_contract import SEVERITIES
from wrapper.review.findings_contract import Finding as Located
from wrapper.review.findings_post import FindingsRound, record_once
from wrapper.review.findings_target import PostTarget
from wrapper.review.review_body import BODY_BUDGET, NotReviewed, code_span, files_section
from wrapper.review.reviewer import ReviewResult
from wrapper.review.roster import Roster
from wrapper.review.round_post import FALLBACK_NOTE, PostedRound, RoundPayload
from wrapper.review.round_review import diff_files
from wrapper.review.validator import acceptance, withdrawn_json

IN_SUMMARY = "in_summary"  # the withdrawal step of a withdrawn finding in the summary
MAX_TEXT = 1000
MIN_TEXT = 80
REFUSED = "GitHub refused the review's line comments"
NO_PLACE = "names no path:line of its reviewer's files"


def roster_payload(
    roster: Roster,
    merged: ReviewResult,
    diff: str,
    patch_id: str,
    head_sha: str,
    excluded: Sequence[Decision] = (),
) -> RoundPayload:
    """The round of a merged roster review on ``diff`` (see the module doc)."""
    files, reviewed, not_reviewed = diff_files(diff, excluded)
    findings = merged.findings or ()
    placed = [_placement(f, files) for f in findings]
    comments: list[dict[str, Any]] = []
    entries: list[dict[str, Any]] = []
    for finding, where in zip(findings, placed, strict=True):
        entry = {**withdrawn_json(finding), "action": finding.action, "comment": None}
        if where is not None and where.inline:
            entry["comment"] = len(comments)
            comments.append(_line_comment(finding))
        entries.append(entry)
    page = _Page(roster, merged, reviewed, not_reviewed)
    return RoundPayload(
        patch_id=patch_id,
        head_sha=head_sha,
        body=page.render(placed),
        comments=tuple(comments),
        fallback=f"{page.render([None] * len(findings), refused=True)}\n\n{FALLBACK_NOTE}",
        findings=tuple(entries),
        roster=True,
    )


def _placement(finding: Finding, files: dict[str, FileDiff]) -> Placement | None:
    """Where GitHub takes ``finding`` (None: it names no place of its reviewer's)."""
    if finding.path is None or finding.line is None:
        return None
    located = Located(finding.path, finding.line, finding.priority, finding.text, "")
    return place(located, files)


def _line_comment(finding: Finding) -> dict[str, Any]:
    assert finding.path is not None and finding.line is not None
    return {
        "path": finding.path,
        "line": finding.line,
        "side": "RIGHT",
        "body": finding_body(finding),
        "agent": agent_name(finding.agent),
    }


class _Page:
    """The summary of one roster round, with or without its line comments."""

    def __init__(
        self,
        roster: Roster,
        merged: ReviewResult,
        reviewed: Sequence[str],
        not_reviewed: Sequence[NotReviewed],
    ) -> None:
        self.roster, self.merged = roster, merged
        self.findings = merged.findings or ()
        self.files = files_section(reviewed, not_reviewed)

    def render(self, placed: Sequence[Placement | None], refused: bool = False) -> str:
        head = "\n\n".join([self._verdict_line(), self.roster.summary, self.files])
        listed = sum(1 for p in placed if p is None or not p.inline)
        room = BODY_BUDGET - len(head) - 200 * (len(self.roster.reviewers) + 1)
        limit = max(MIN_TEXT, min(MAX_TEXT, room // max(1, listed) - 120))
        parts = [head, *self._sections(placed, limit, refused)]
        body = "\n\n".join(parts)
        if len(body) > BODY_BUDGET:  # very many findings: the texts go, places stay
            body = "\n\n".join([head, *self._sections(placed, 0, refused)])
        return _within_budget(body)

    def _verdict_line(self) -> str:
        counts = ", ".join(
            f"{sum(1 for f in self.findings if f.priority == s)} {s}" for s in SEVERITIES
        )
        withdrawn = sum(1 for f in self.findings if f.action == "withdraw")
        extra = f"; {withdrawn} {WITHDRAWN_NOTE}" if withdrawn else ""
        return f"**Review: {self.merged.verdict}** ({counts}{extra})"

    def _sections(self, placed: Sequence[Placement | None], limit: int, refused: bool) -> list[str]:
        sections: list[str] = []
        verdicts = self.merged.verdicts or ("",) * len(self.roster.reviewers)
        seen: set[str] = set()
        for reviewer, verdict in zip(self.roster.reviewers, verdicts, strict=True):
            title = f"### {code_span(reviewer.name)}: {verdict or 'reviewed'}"
            files = ", ".join(code_span(p) for p in reviewer.changed_files[:20])
            more = len(reviewer.changed_files) - 20
            files += f" and {more} more" if more > 0 else ""
            own = [] if reviewer.name in seen else [
                (f, p) for f, p in zip(self.findings, placed, strict=True)
                if f.agent == reviewer.name
            ]  # fmt: skip
            seen.add(reviewer.name)
            on_lines = sum(1 for _, p in own if p is not None and p.inline)
            lines = [
                title,
                "",
                f"Scope {code_span(reviewer.scope or '.')}, files: {files}. "
                f"{len(own)} finding(s), {on_lines} on their line.",
            ]
            items = [_item(f, p, limit, refused) for f, p in own if p is None or not p.inline]
            if items:
                lines += ["", *items]
            sections.append("\n".join(lines))
        return sections


def _within_budget(body: str) -> str:
    """``body`` cut at a line to :data:`BODY_BUDGET`, saying how many finding items the
    cut left out (a roster's findings have no cap; the verdict file keeps them all)."""
    if len(body) <= BODY_BUDGET:
        return body
    room = BODY_BUDGET - 200
    cut = body.rfind("\n", 0, room)
    kept, rest = body[: max(cut, 0)], body[max(cut, 0) :]
    left = sum(1 for line in rest.split("\n") if line.startswith("- **P"))
    return f"{kept}\n\n… and {left} more finding(s) not listed here (the verdict file has them)"


def _item(finding: Finding, where: Placement | None, limit: int, refused: bool) -> str:
    """One finding not on a line: severity, ``path:line``, why, the validator's word,
    then its text (cut to ``limit``)."""
    if where is not None:
        place_text = f"{code_span(where.finding.location)} (not on a line: {where.detail})"
    elif refused and finding.path is not None:
        place_text = f"{code_span(f'{finding.path}:{finding.line}')} ({REFUSED})"
    else:
        place_text = f"({NO_PLACE})"
    notes = ""
    if finding.action == "withdraw":
        notes = f" ({WITHDRAWN_NOTE}, {finding.validation}: {_flat(finding.validation_reason)})"
    elif finding.action == "annotate":
        notes = f" (independent validator: uncertain: {_flat(finding.validation_reason)})"
    text = _flat(finding.text)
    if len(text) > limit:
        text = text[: max(0, limit - 1)].rstrip() + "…" if limit else ""
    tail = f": {text}" if text else ""
    return f"- **{finding.priority}** {place_text}{notes}{tail}"


def _flat(text: str) -> str:
    return " ".join(text.split())


def record_posted(posting: PostingContext, posted: PostedRound, now: datetime) -> None:
    """The findings record of a roster round posted as one review (see the module doc);
    written once a review: a rerun that adopted it keeps the record already written."""
    payload = posted.payload
    comments: list[dict[str, Any]] = []
    withdrawn: list[dict[str, Any]] = []
    for entry in payload.findings:
        index = entry.get("comment")
        ids = posted.comment_ids[index] if isinstance(index, int) else None
        row = {
            "agent": entry.get("agent"),
            "priority": entry.get("priority"),
            "path": entry.get("path"),
            "line": entry.get("line"),
            "id": ids[0] if ids else None,
            "node_id": ids[1] if ids else None,
            "anchored": ids is not None,
            "validation": entry.get("validation"),
            "review_id": posted.review_id,
        }
        comments.append(row)
        if entry.get("action") == "withdraw":
            done = [] if ids else [IN_SUMMARY]
            withdrawn.append({**row, "reason": entry.get("reason"), "done": done})
    checked = [
        Finding(str(e.get("agent")), str(e.get("priority")), "", validation=e.get("validation"))
        for e in payload.findings
    ]
    record = FindingsRound(
        head_sha=payload.head_sha,
        patch_id=payload.patch_id,
        posted_at=iso_utc(now, timespec="microseconds"),
        expected=len(payload.findings),
        posted=len(payload.findings),
        comments=comments,
        withdrawn=withdrawn,
        acceptance=acceptance(checked),
    )
    target = PostTarget(
        posting.github, posting.ledger, posting.config, posting.environ, posting.repo,
        posting.pr, payload.head_sha,
    )  # fmt: skip
    record_once(target, record, posted.review_id)
