"""A round's findings set against the earlier rounds' (issue 28; docs/decisions.md D91,
D92). Pure: no I/O.

:func:`settle` takes the PR's findings history, the reviewer's parsed answer (its new
findings and its report on the earlier ones, contract version 2) and the head's lines,
and decides:

- an earlier finding reported ``fixed`` or ``wrong`` is closed: its state changes and its
  thread is owed a reply and a resolve (done after the round is posted);
- one reported ``standing``, or not reported, stays open and is not posted again;
- a new finding whose fingerprint is an open (or withdrawn) finding's is that finding
  repeated: dropped, never posted twice; when it repeats one the same answer reported
  fixed, the report is wrong about it and it stays open;
- a new finding whose fingerprint is a closed (fixed or wrong) finding's is that finding
  reintroduced: posted again as a new finding, with a new id, noting the old one;
- every other new finding gets the next id.

The verdict is REQUEST_CHANGES when a P1 or P2 stands: among the findings posted now or
the earlier findings still open. In a ``delta`` round that verdict is *derived* (the
standing findings of the rounds before plus the delta's) and the summary says so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from wrapper.ledger.findings_history import Closing, FindingEntry, History
from wrapper.review.finding_identity import anchored_lines, fingerprint
from wrapper.review.findings_contract import (
    APPROVE,
    BLOCKING,
    REQUEST_CHANGES,
    Finding,
    ParsedReview,
)
from wrapper.review.findings_earlier import EARLIER_UNKNOWN_ID, check_known

HeadText = Callable[[str], Sequence[str] | None]
"""A head file's lines (None: the head has no such file)."""

DERIVED_NOTE = (
    "**Derived verdict (delta round):** this round read only what changed since the last "
    "reviewed diff; its verdict is the earlier rounds' standing findings plus this delta's, "
    "not a full review."
)


@dataclass(frozen=True)
class Settled:
    """What :func:`settle` decided: the answer to post (only new and reintroduced
    findings; the verdict counting standing ones), the history to record, the open
    earlier findings and the ids repeated by the reviewer (not posted)."""

    parsed: ParsedReview
    history: History
    standing: tuple[FindingEntry, ...]
    repeated: tuple[str, ...]
    closed: tuple[FindingEntry, ...]


class SettleRefused(ValueError):
    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def _closed_at(entry: FindingEntry, head_sha: str) -> bool:
    return entry.closing is not None and entry.closing.head_sha == head_sha


def _close(history: History, parsed: ParsedReview, head: str) -> History:
    by_id = {f.id: f for f in history.findings}
    for report in parsed.earlier:
        entry = by_id[report.id]
        if entry.state != "open" or report.status == "standing":
            continue
        closing = Closing(report.status, report.note, head)
        history = history.with_entry(replace(entry, state=report.status, closing=closing))
    return history


def settle(
    history: History,
    parsed: ParsedReview,
    head_text: HeadText,
    *,
    listed: Sequence[str],
    patch_id: str,
    head_sha: str,
    derived: bool,
) -> Settled:
    """See the module doc. ``listed``: the ids the round's prompt showed (a report of
    any other is SettleRefused ``findings_earlier_unknown_id``)."""
    known = frozenset(listed)
    unknown = check_known(parsed.earlier, known)
    if unknown is not None:
        raise SettleRefused(EARLIER_UNKNOWN_ID, unknown)
    reported = {r.id for r in parsed.earlier if r.status != "standing"}
    history = _close(history, parsed, head_sha)
    to_post: list[Finding] = []
    repeated: list[str] = []
    for finding in parsed.findings:
        anchored = anchored_lines(head_text(finding.path), finding.line, finding.start_line)
        print_ = fingerprint(finding.path, finding.title, anchored)
        same = [f for f in history.findings if f.fingerprint == print_]
        live = [f for f in same if f.state in ("open", "withdrawn")]
        # Reported fixed or wrong by this very answer, and found again: it stands.
        contradicted = [f for f in same if f.id in reported and _closed_at(f, head_sha)]
        if contradicted:
            history = history.with_entry(replace(contradicted[0], state="open", closing=None))
            repeated.append(contradicted[0].id)
            continue
        if live:
            repeated.append(live[0].id)
            continue
        entry = FindingEntry(
            id=history.next_id(),
            fingerprint=print_,
            path=finding.path,
            line=finding.line,
            start_line=finding.start_line,
            severity=finding.severity,
            title=finding.title,
            body=finding.body,
            round=patch_id,
            anchored=tuple(anchored),
            reintroduces=same[-1].id if same else None,
        )
        history = history.with_entry(entry)
        to_post.append(finding)
    posted_ids = {f.id for f in history.findings if f.round == patch_id}
    standing = tuple(f for f in history.findings if f.state == "open" and f.id not in posted_ids)
    closed = tuple(f for f in history.findings if _closed_at(f, head_sha))
    severities = [f.severity for f in to_post] + [f.severity for f in standing]
    blocking = any(severity in BLOCKING for severity in severities)
    verdict = REQUEST_CHANGES if blocking else APPROVE
    summary = _summary(parsed.summary, standing, closed, derived)
    answer = replace(parsed, findings=tuple(to_post), verdict=verdict, summary=summary)
    return Settled(answer, history, standing, tuple(repeated), closed)


def _summary(
    summary: str, standing: Sequence[FindingEntry], closed: Sequence[FindingEntry], derived: bool
) -> str:
    """The reviewer's summary, after what the round says about earlier findings."""
    lines: list[str] = [DERIVED_NOTE, ""] if derived else []
    if standing:
        lines.append("Earlier findings still standing (not posted again):")
        lines += [f"- {f.id} [{f.severity}] {f.path}:{f.line}: {f.title}" for f in standing]
        lines.append("")
    if closed:
        lines.append("Earlier findings closed in this round:")
        for f in closed:
            assert f.closing is not None
            lines.append(f"- {f.id} {f.closing.status}: {f.title}")
        lines.append("")
    if not lines:
        return summary
    return "\n".join([*lines, summary]).strip()
