"""``kdev close-out --repo R --pr N``: close every comment whose triage is settled.

Settled: ``reject`` (with its reason), or ``fix`` once the PR's head has moved past the
head the decision was made at (the fix was pushed). ``escalate`` is never settled: the
owner decides first (``kdev triage --decide``). For each settled comment, in this order:

1. **reply**: ``Fixed in <head>.`` or ``Won't fix: <reason>``, through the one posting
   gate (a review summary takes no reply: the step is skipped);
2. **resolve** its review thread (inline comments only);
3. **hide** it (minimized as outdated).

Each step is recorded in ``triage.json`` right after it (a step that does not apply, as
resolving an issue-level comment, is recorded as passed), so a second run, or a run
after a failure half-way, does only what is left: close-out is idempotent. The report
lists, per comment, the steps it acted on now and the steps passed before.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from wrapper.authorloop.decisions import Decision, read_decisions, write_decisions
from wrapper.authorloop.feedback import Feedback, collect_feedback
from wrapper.authorloop.threads import hide, reply, resolve
from wrapper.gh import get_pull
from wrapper.jsonform import JsonForm
from wrapper.post import PostingContext

STEPS = ("replied", "resolved", "hidden")


@dataclass(frozen=True)
class Closed(JsonForm):
    """What close-out did for one comment."""

    comment_id: int
    decision: str
    done_now: tuple[str, ...]
    done_before: tuple[str, ...]


def settled(decision: Decision, head_sha: str) -> bool:
    """Whether ``decision`` can be closed out at ``head_sha``. Pure."""
    if decision.decision == "reject":
        return True
    return decision.decision == "fix" and head_sha != decision.head_sha


def reply_text(decision: Decision, head_sha: str) -> str:
    if decision.decision == "fix":
        return f"Fixed in {head_sha[:12]}."
    return f"Won't fix: {decision.reason}"


def close_out(ctx: PostingContext) -> list[Closed]:
    """Close every settled comment of ``ctx.repo`` #``ctx.pr`` (see the module doc)."""
    github, ledger, repo, pr = ctx.github, ctx.ledger, ctx.repo, ctx.pr
    head = get_pull(github, repo, pr).head_sha
    feedback = {item.id: item for item in collect_feedback(github, repo, pr).items}
    decided = read_decisions(ledger, repo, pr)
    report: list[Closed] = []
    for comment_id, decision in sorted(decided.items()):
        item = feedback.get(comment_id)
        if item is None or not settled(decision, head):
            continue
        before = decision.closed
        acted: list[str] = []
        for step in STEPS:
            if step in decision.closed:
                continue
            if _do(step, ctx, item, decision, head):
                acted.append(step)
            decision = replace(decision, closed=(*decision.closed, step))
            decided = {**decided, comment_id: decision}
            write_decisions(ledger, repo, pr, decided)
        report.append(Closed(comment_id, decision.decision, tuple(acted), before))
    return report


def _do(step: str, ctx: PostingContext, item: Feedback, decision: Decision, head: str) -> bool:
    """Do one step; False when it does not apply (no reply to a review summary, no
    thread to resolve outside inline comments)."""
    if step == "replied" and item.kind != "review":
        reply(ctx, item.id, reply_text(decision, head))
        return True
    if step == "resolved" and item.kind == "inline":
        resolve(ctx.github, ctx.repo, ctx.pr, item.node_id)
        return True
    if step == "hidden":
        hide(ctx.github, item.node_id)
        return True
    return False
