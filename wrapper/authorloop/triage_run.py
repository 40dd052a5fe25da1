"""One ``kdev triage`` pass with its I/O: read the open feedback (not a resolved thread,
not the PR author's own, not a comment kdev posted) and the head, decide
(wrapper.authorloop.decisions), store, and notify the owner of new escalations once."""

from __future__ import annotations

from collections.abc import Mapping

from engine.github import GitHubClient
from wrapper.authorloop.decisions import (
    Decision,
    decide,
    mark_notified,
    read_decisions,
    write_decisions,
)
from wrapper.authorloop.feedback import collect_feedback
from wrapper.config import KdevConfig
from wrapper.gh import get_pull
from wrapper.leakscan import known_secrets
from wrapper.ledger.ledger import Ledger
from wrapper.notify import Notification, route, send


def run_triage(
    github: GitHubClient,
    ledger: Ledger,
    config: KdevConfig,
    environ: Mapping[str, str],
    repo: str,
    pr: int,
    manual: Mapping[int, tuple[str, str]],
) -> dict[int, Decision]:
    """Decide every open comment of ``repo`` #``pr``; returns all stored decisions."""
    pull = get_pull(github, repo, pr)
    mine = ledger.posted_comment_ids(repo)
    items = [
        item
        for item in collect_feedback(github, repo, pr).items
        if item.resolved is not True and item.user != pull.user_login and item.id not in mine
    ]
    decided = decide(items, read_decisions(ledger, repo, pr), manual, pull.head_sha)
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
    write_decisions(ledger, repo, pr, decided)
    return decided
