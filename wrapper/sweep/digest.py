"""(b) the approval digest: every open PR with auto-merge armed, review still required
and a clean verdict at its current head is one row; one message per set of targets."""

from __future__ import annotations

from collections.abc import Sequence

from engine.github import GitHubError, PullRequest
from wrapper.config import NotifyTarget
from wrapper.gh import pull_graph
from wrapper.notify import Notification
from wrapper.review.merge_gate import gate_at, gate_is_check, gate_settings
from wrapper.sweep.config import RepositoryEntry
from wrapper.sweep.context import SweepContext, send_to, targets_for
from wrapper.sweep.decide import is_verdict_clean, wants_digest
from wrapper.sweep.report import DigestRow, SweepReport


def digest_rows(
    ctx: SweepContext, entry: RepositoryEntry, pulls: Sequence[PullRequest]
) -> list[DigestRow]:
    """The digest rows of one repository, each checked at the head GitHub reports now."""
    rows: list[DigestRow] = []
    for pr in pulls:
        index = ctx.ledger.read_index(entry.repo, pr.number)
        # Only a PR clean at its listed head can qualify: spare it the GraphQL call.
        if not is_verdict_clean(index, pr.head_sha):
            continue
        graph = pull_graph(ctx.github, entry.repo, pr.number)
        if not wants_digest(graph, index):
            continue
        verdict = index[graph.head_ref_oid]
        artifact = ctx.ledger.verdict_path(entry.repo, pr.number, verdict.patch_id)
        rows.append(
            DigestRow(
                entry.repo,
                pr.number,
                graph.head_ref_oid,
                f"VERDICT: {verdict.verdict}",
                str(artifact),
                graph.url,
                _gate_column(ctx, entry.repo, graph.head_ref_oid),
            )
        )
    return rows


def _gate_column(ctx: SweepContext, repo: str, head: str) -> str | None:
    """The merge gate's status at ``head`` (D85), or None when the gate is off; a status
    that cannot be read is said so, never left out."""
    settings = gate_settings(ctx.kdev, repo)
    if not settings.enabled:
        return None
    check = gate_is_check(ctx.environ)
    name = f"check run {settings.context}" if check else settings.context
    try:
        shown = gate_at(ctx.github, repo, head, settings.context, check)
    except GitHubError as exc:
        return f"{name} unreadable [{exc.reason}]"
    return f"{name} {shown['state'] or 'not set'}"


def digest_notification(rows: Sequence[DigestRow]) -> Notification:
    """``PR sweep: N PR(s) waiting for approval``: one row per PR."""
    lines = [
        f"{r.repo} #{r.pr} {r.head_sha} | {r.verdict_line} | {r.artifact} | {r.pr_url}"
        + (f" | {r.merge_gate}" if r.merge_gate else "")
        for r in rows
    ]
    count = len(rows)
    return Notification(
        subject=f"PR sweep: {count} PR{'s' if count != 1 else ''} waiting for approval",
        body="\n".join(lines),
        fields={"outcome": "approval_digest", "count": count},
    )


def send_digest(ctx: SweepContext, report: SweepReport) -> None:
    """One approval-request message per distinct set of targets (one message when no
    repository overrides the targets); nothing when there are no rows."""
    groups: dict[str, tuple[list[NotifyTarget], list[DigestRow]]] = {}
    entries = {entry.repo: entry for entry in ctx.config.repositories}
    for row in report.digest:
        targets = targets_for(ctx, entries[row.repo])
        key = repr([t.model_dump() for t in targets])
        groups.setdefault(key, (targets, []))[1].append(row)
    for targets, rows in groups.values():
        report.notify_errors += send_to(ctx, targets, digest_notification(rows))
        report.digest_sent = True
