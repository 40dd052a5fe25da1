"""Roster findings posted on the pull request, and the round's posting-integrity record.

After a roster round's verdict is written and delivered, every finding
(:mod:`wrapper.review.findings`) is posted through the one gate
(:func:`wrapper.post.post_gated`) with its reviewer's hidden signature: a line comment
(a new review thread on the head) when the finding is anchored to ``path:line`` of the
reviewer's files, else a PR-level comment. GitHub refuses a line outside the diff's
hunks (422); such a finding is posted PR-level instead, its text still naming
``path:line``. A finding that cannot be posted (a GitHub failure, a secret in it) is
not retried here; it is counted.

The record ``findings-<patch_id>.json`` beside the verdict (atomic write) holds how
many findings were expected and how many were posted, the posted comments and the
failures; ``kdev pr-status`` reads the newest one (:func:`newest_round`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from engine.errors import InvalidInput
from engine.github import GitHubClient, GitHubError
from engine.timefmt import iso_utc
from wrapper.config import KdevConfig
from wrapper.errors import KdevError
from wrapper.gh import post_issue_comment, post_line_comment
from wrapper.ledger.ledger import Ledger
from wrapper.post import post_gated
from wrapper.review.findings import Finding, finding_body, signature
from wrapper.review.validator import acceptance, withdrawn_json

log = logging.getLogger("kdev.findings")

FINDING_POST_FAILED = "finding_post_failed"
FINDINGS_INCOMPLETE = "findings_post_incomplete"
FINDINGS_PREFIX = "findings-"


@dataclass(frozen=True)
class FindingsRound:
    """What one round was to post and what it posted."""

    head_sha: str
    patch_id: str
    posted_at: str
    expected: int
    posted: int
    comments: list[dict[str, Any]] = field(default_factory=list)
    failures: list[dict[str, str]] = field(default_factory=list)
    # The independent validator: findings withdrawn (not posted), and per flagger its
    # checked findings found valid, invalid and uncertain (wrapper.review.validator).
    withdrawn: list[dict[str, Any]] = field(default_factory=list)
    acceptance: dict[str, dict[str, int]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "head_sha": self.head_sha,
            "patch_id": self.patch_id,
            "posted_at": self.posted_at,
            "expected": self.expected,
            "posted": self.posted,
            "comments": self.comments,
            "failures": self.failures,
            "withdrawn": self.withdrawn,
            "acceptance": self.acceptance,
        }


@dataclass(frozen=True)
class PostTarget:
    """Where findings go: the client, ledger, config and environment of the round."""

    github: GitHubClient
    ledger: Ledger
    config: KdevConfig
    environ: Mapping[str, str]
    repo: str
    pr: int
    head_sha: str


def _post_one(target: PostTarget, finding: Finding) -> dict[str, Any]:
    """Post ``finding`` through the gate; returns its ledger entry."""
    repo, pr = target.repo, target.pr
    anchored: list[bool] = []

    def send(body: str) -> dict[str, Any]:
        try:
            if finding.path is not None and finding.line is not None:
                try:
                    created = post_line_comment(
                        target.github,
                        repo,
                        pr,
                        body,
                        commit_id=target.head_sha,
                        path=finding.path,
                        line=finding.line,
                    )
                    anchored.append(True)
                    return created
                except GitHubError as exc:
                    if exc.status != 422:
                        raise
            anchored.append(False)
            return post_issue_comment(target.github, repo, pr, body)
        except (GitHubError, InvalidInput) as exc:
            raise KdevError(
                f"cannot post a finding of {finding.agent} on {repo} #{pr}: "
                f"{exc.message} [{exc.reason}]",
                FINDING_POST_FAILED,
            ) from None

    created = post_gated(
        target.ledger,
        target.config,
        target.environ,
        repo,
        pr,
        finding_body(finding),
        "finding",
        send,
        FINDING_POST_FAILED,
        signature(finding.agent),
    )
    return {**finding.to_json(), "id": created["id"], "anchored": anchored[-1]}


def post_findings(
    target: PostTarget,
    patch_id: str,
    findings: Sequence[Finding],
    clock: Callable[[], datetime],
) -> FindingsRound:
    """Post every finding (see the module doc), write the round's record, return it.
    A finding that fails is logged and counted; the others are still posted."""
    comments: list[dict[str, Any]] = []
    failures: list[dict[str, str]] = []
    withdrawn = [withdrawn_json(f) for f in findings if f.action == "withdraw"]
    kept = [f for f in findings if f.action != "withdraw"]
    for finding in kept:
        try:
            comments.append(_post_one(target, finding))
        except KdevError as exc:
            log.error("finding of %s not posted: %s [%s]", finding.agent, exc.message, exc.reason)
            failures.append({"agent": finding.agent, "reason": exc.reason})
    record = FindingsRound(
        head_sha=target.head_sha,
        patch_id=patch_id,
        posted_at=iso_utc(clock(), timespec="microseconds"),
        expected=len(kept),
        posted=len(comments),
        comments=comments,
        failures=failures,
        withdrawn=withdrawn,
        acceptance=acceptance(findings),
    )
    ledger = target.ledger
    directory = ledger.pr_dir(target.repo, target.pr)
    ledger.ensure_dir(directory)
    path = directory / f"{FINDINGS_PREFIX}{patch_id}.json"
    ledger.atomic_write(path, json.dumps(record.to_json(), indent=2))
    return record


def round_record(ledger: Ledger, repo: str, pr: int, patch_id: str) -> FindingsRound | None:
    """The findings record of the round that reviewed ``patch_id``, or None (a round of
    one backend, or one whose verdict was refused, has none)."""
    path = ledger.pr_dir(repo, pr) / f"{FINDINGS_PREFIX}{patch_id}.json"
    return _load(path) if path.exists() else None


def newest_round(ledger: Ledger, repo: str, pr: int) -> FindingsRound | None:
    """The most recently posted round's record of ``repo`` #``pr``, or None. A record
    that does not parse is KdevError ``invalid_record`` (never read as clean)."""
    directory = ledger.pr_dir(repo, pr)
    rounds = [_load(path) for path in sorted(directory.glob(f"{FINDINGS_PREFIX}*.json"))]
    return max(rounds, key=lambda r: r.posted_at, default=None)


def _load(path: Path) -> FindingsRound:
    try:
        data = json.loads(path.read_text())
        return FindingsRound(
            head_sha=str(data["head_sha"]),
            patch_id=str(data["patch_id"]),
            posted_at=str(data["posted_at"]),
            expected=int(data["expected"]),
            posted=int(data["posted"]),
            comments=list(data.get("comments", [])),
            failures=list(data.get("failures", [])),
            withdrawn=list(data.get("withdrawn", [])),
            acceptance=dict(data.get("acceptance", {})),
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise KdevError(f"{path}: not a findings record ({exc})", "invalid_record") from None
