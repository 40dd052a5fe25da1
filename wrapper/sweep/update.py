"""(a) update-branch: merge the base into a clean PR that is behind it, push, never force."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from engine.github import GitHubError, PullRequest, is_same_repo
from wrapper.errors import KdevError
from wrapper.gh import compare
from wrapper.git import Git
from wrapper.ledger.leftovers import make_scratch
from wrapper.notify import Notification
from wrapper.review.patch_id import fetch_pr_refs
from wrapper.sweep.config import RepositoryEntry
from wrapper.sweep.context import SweepContext, send_to, targets_for
from wrapper.sweep.decide import is_verdict_clean, wants_update
from wrapper.sweep.report import UpdateOutcome, UpdateResult

log = logging.getLogger("kdev.sweep")


def update_branch(ctx: SweepContext, entry: RepositoryEntry, pr: PullRequest) -> UpdateResult:
    """Merge the base into ``pr.head_sha`` (the clean head, not whatever is there now) in a
    disposable worktree and push it to the head branch without force.

    The push is the compare-and-swap: when the branch moved past ``pr.head_sha`` it is
    not a fast-forward and is rejected. Raises ``KdevError`` when git itself fails.
    """

    def result(outcome: UpdateOutcome, **kw: Any) -> UpdateResult:
        return UpdateResult(entry.repo, pr.number, pr.head_sha, outcome, **kw)

    if ctx.dry_run:
        return result(UpdateOutcome.WOULD_UPDATE, detail=f"would merge {pr.base_ref}")
    git = Git(Path(entry.checkout), env=ctx.environ)
    base_ref, _ = fetch_pr_refs(git, pr.base_ref, pr.number, entry.remote)
    if git.rev_parse(pr.head_sha) is None:
        return result(UpdateOutcome.FAILED, reason="ref_missing", detail="head not fetched")
    scratch = make_scratch("kdev-sweep-")
    worktree = scratch / "worktree"
    try:
        git.worktree_add(worktree, pr.head_sha)
        identity = ctx.config.identity
        merged = Git(worktree, env=ctx.environ).merge_into_detached(
            base_ref, name=identity.name, email=identity.email
        )
        if merged.conflict:
            note = manual_rebase_notification(entry.repo, pr, merged.detail)
            for problem in send_to(ctx, targets_for(ctx, entry, pr.user_login), note):
                log.warning("notification failed: %s", problem)
            return result(UpdateOutcome.NEEDS_MANUAL_REBASE, detail=merged.detail)
        if merged.up_to_date or merged.sha is None:
            return result(UpdateOutcome.UP_TO_DATE, detail="base already merged")
        pushed = git.push_commit(entry.remote, merged.sha, pr.head_ref)
        if not pushed.pushed:
            return result(UpdateOutcome.PUSH_REJECTED, reason="push_rejected", detail=pushed.detail)
        return result(UpdateOutcome.UPDATED, new_head=merged.sha, detail=f"merged {pr.base_ref}")
    finally:
        try:
            git.worktree_remove(worktree)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)


def manual_rebase_notification(repo: str, pr: PullRequest, detail: str) -> Notification:
    """``PR sweep: {repo} #{pr} NEEDS MANUAL REBASE``: the base no longer merges cleanly."""
    body = "\n".join(
        (
            f"NEEDS MANUAL REBASE: {detail}",
            f"BASE: {pr.base_ref}",
            f"PR: {pr.number}",
            f"PR_URL: {pr.html_url}",
            f"HEAD_SHA: {pr.head_sha}",
        )
    )
    return Notification(
        subject=f"PR sweep: {repo} #{pr.number} NEEDS MANUAL REBASE",
        body=body,
        fields={
            "repo": repo,
            "pr": pr.number,
            "head_sha": pr.head_sha,
            "outcome": UpdateOutcome.NEEDS_MANUAL_REBASE.value,
            "pr_url": pr.html_url,
            "artifact": None,
        },
    )


def update_all(
    ctx: SweepContext, entry: RepositoryEntry, pulls: Sequence[PullRequest]
) -> list[UpdateResult]:
    """Update-branch for every clean PR of ``pulls`` that is behind its base; a PR that
    fails is one FAILED result, the others go on."""
    results: list[UpdateResult] = []
    for pr in pulls:
        index = ctx.ledger.read_index(entry.repo, pr.number)
        if not (is_same_repo(pr) and is_verdict_clean(index, pr.head_sha)):
            continue
        try:
            behind = compare(ctx.github, entry.repo, pr.base_ref, pr.head_sha).behind_by
            if not wants_update(pr, index, behind):
                continue
            doing = "would update (dry run)" if ctx.dry_run else "updating"
            log.info(
                "%s #%s is %d behind %s: %s", entry.repo, pr.number, behind, pr.base_ref, doing
            )
            outcome = update_branch(ctx, entry, pr)
        except (GitHubError, KdevError) as exc:
            outcome = UpdateResult(
                entry.repo,
                pr.number,
                pr.head_sha,
                UpdateOutcome.FAILED,
                None,
                exc.reason,
                exc.message,
            )
        log.info("%s #%s: %s %s", entry.repo, pr.number, outcome.outcome.value, outcome.detail)
        results.append(outcome)
    return results
