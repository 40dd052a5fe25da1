"""One ``kdev triage`` pass with its I/O: read the open feedback (not a resolved thread,
not the PR author's own, not a comment kdev posted unless it is one of kdev's own roster
findings, wrapper.authorloop.own_findings) and the head, ask the triage
reviewer about what the rules leave undecided (wrapper.authorloop.triage_leg, when
configured), decide (wrapper.authorloop.decisions), store, and notify the owner of new
escalations once. Past the PR's first review round, a comment whose content decides
nothing is P3 (issue 29's first-round default no longer applies)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from engine.github import PullRequest
from wrapper.authorloop.decisions import (
    Decision,
    decide,
    mark_notified,
    read_decisions,
    rule_settles,
    write_decisions,
)
from wrapper.authorloop.feedback import after_first_round, collect_feedback
from wrapper.authorloop.own_findings import as_own, own_findings
from wrapper.authorloop.pr_status import review_rounds
from wrapper.authorloop.triage_leg import TRIAGE_REVIEWER_FAILED, ask_triage_reviewer, backend_of
from wrapper.errors import KdevError
from wrapper.gh import get_pull
from wrapper.leakscan import known_secrets
from wrapper.notify import Notification, route, send
from wrapper.post import PostingContext


@dataclass(frozen=True)
class TriageReport:
    """Every stored decision; the comments left undecided (the triage reviewer gave no
    clean line, or was over budget) with why; its lines about comments not asked."""

    decided: dict[int, Decision]
    undecided: dict[int, str] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)


def run_triage(ctx: PostingContext, manual: Mapping[int, tuple[str, str]]) -> TriageReport:
    """Decide every open comment of ``ctx.repo`` #``ctx.pr``; returns all stored
    decisions and the undecided ones. A failed triage reviewer leg is KdevError
    ``triage_reviewer_failed``, raised after the other decisions are stored."""
    github, ledger, config, repo, pr = ctx.github, ctx.ledger, ctx.config, ctx.repo, ctx.pr
    pull = get_pull(github, repo, pr)
    mine = ledger.posted_comment_ids(repo)
    own = own_findings(ledger, repo, pr)
    items = [
        as_own(item, own[item.id]) if item.id in own else item
        for item in collect_feedback(github, repo, pr).items
        if item.resolved is not True
        and item.user != pull.user_login
        and (item.id not in mine or item.id in own)
    ]
    if len(review_rounds(ledger, repo, pr)) > 1:  # past the first round (issue 29)
        items = [after_first_round(item) for item in items]
    known = read_decisions(ledger, repo, pr)
    backend = backend_of(config)
    answers: dict[int, tuple[str, str]] | None = None if backend is None else {}
    undecided: dict[int, str] = {}
    ignored: list[str] = []
    failure: KdevError | None = None
    asked = [
        item
        for item in items
        if item.id not in manual and item.id not in known and not rule_settles(item)
    ]
    if backend is not None and asked:
        try:
            answer = ask_triage_reviewer(
                backend, asked, ledger=ledger, config=config, environ=ctx.environ,
                repo=repo, pr=pr, head_sha=pull.head_sha,
            )  # fmt: skip
            answers, undecided, ignored = answer.decided, answer.undecided, answer.ignored
        except KdevError as exc:
            failure = exc
            undecided = {item.id: exc.reason for item in asked}
    decided = decide(items, known, manual, pull.head_sha, answers)
    decided = _notify_and_store(decided, ctx, pull)
    if failure is not None:
        raise KdevError(failure.message, TRIAGE_REVIEWER_FAILED) from None
    return TriageReport(decided, undecided, ignored)


def _notify_and_store(
    decided: dict[int, Decision], ctx: PostingContext, pull: PullRequest
) -> dict[int, Decision]:
    """Store ``decided`` (returned), after one notice to the owner for the new
    escalations."""
    config, environ, repo, pr = ctx.config, ctx.environ, ctx.repo, ctx.pr
    fresh = [d for d in decided.values() if d.decision == "escalate" and not d.notified]
    if fresh:
        note = Notification(
            subject=f"PR triage: {repo} #{pr} ESCALATED ({len(fresh)})",
            body="\n".join(f"comment {d.comment_id}: {d.reason}" for d in fresh)
            + f"\nPR_URL: {pull.html_url}",
            fields={"repo": repo, "pr": pr, "head_sha": pull.head_sha, "outcome": "escalated"},
        )
        targets = route(config, repo, pull.user_login)
        send(targets, note, environ=environ, secrets=known_secrets(config, environ))
        decided = mark_notified(decided, [d.comment_id for d in fresh])
    write_decisions(ctx.ledger, repo, pr, decided)
    return decided
