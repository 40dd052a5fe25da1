"""Roster findings posted on the pull request, and the round's posting-integrity record.

After a roster round's verdict is written and delivered, every finding
(:mod:`wrapper.review.findings`) is posted through the one gate
(:func:`wrapper.post.post_gated`) with its reviewer's hidden signature: a line comment
(a new review thread on the head) when the finding is anchored to ``path:line`` of the
reviewer's files, else a PR-level comment. GitHub refuses a line outside the diff's
hunks (422); such a finding is posted PR-level instead, its text still naming
``path:line``. A finding that cannot be posted (a GitHub failure, a secret in it) is
not retried here; it is counted.

A finding the independent validator withdrew (INVALID, or UNCERTAIN under
``uncertain_action: drop``) is posted too, then withdrawn on its thread: a reply with
the validator's reason, then the thread resolved (a PR-level one: hidden), each step
recorded (:mod:`wrapper.review.findings_withdraw`). :func:`withdraw_pending` finishes,
on the pull request's next run, what a run that failed or died half-way left.

The record ``findings-<patch_id>.json`` beside the verdict (atomic write, rewritten
after every post and withdrawal step) holds how many findings were expected and how
many were posted, the posted comments, the failures and the withdrawn findings;
``kdev pr-status`` reads the newest one (:func:`newest_round`).
"""

from __future__ import annotations

import fcntl
import json
import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

from engine.errors import InvalidInput
from engine.github import GitHubError
from engine.timefmt import iso_utc
from wrapper.errors import KdevError
from wrapper.gh import post_issue_comment, post_line_comment
from wrapper.jsonform import JsonForm
from wrapper.ledger.ledger import Ledger
from wrapper.post import post_gated
from wrapper.review.findings import Finding, finding_body, signature
from wrapper.review.findings_target import PostTarget
from wrapper.review.findings_withdraw import (
    WITHDRAW_INCOMPLETE,
    Step,
    pending,
    withdraw_entries,
    withdraw_step,
)
from wrapper.review.validator import acceptance, withdrawn_json

log = logging.getLogger("kdev.findings")

FINDING_POST_FAILED = "finding_post_failed"
FINDINGS_INCOMPLETE = "findings_post_incomplete"
FINDINGS_PREFIX = "findings-"
FINDINGS_LOCK = ".findings.lock"


@dataclass(frozen=True)
class FindingsRound(JsonForm):
    """What one round was to post and what it posted."""

    head_sha: str
    patch_id: str
    posted_at: str
    expected: int
    posted: int
    comments: list[dict[str, Any]] = field(default_factory=list)
    failures: list[dict[str, str]] = field(default_factory=list)
    # The independent validator: findings posted and then withdrawn on their thread
    # (each with its reason and the withdrawal steps done, wrapper.review.
    # findings_withdraw), and per flagger its checked findings found valid, invalid and
    # uncertain (wrapper.review.validator).
    withdrawn: list[dict[str, Any]] = field(default_factory=list)
    acceptance: dict[str, dict[str, int]] = field(default_factory=dict)


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
    node = created.get("node_id")
    return {
        **finding.to_json(),
        "id": created["id"],
        "node_id": node if isinstance(node, str) else None,
        "anchored": anchored[-1],
        "validation": finding.validation,
    }


def post_findings(
    target: PostTarget,
    patch_id: str,
    findings: Sequence[Finding],
    clock: Callable[[], datetime],
    step: Step = withdraw_step,
) -> FindingsRound:
    """Post every finding (see the module doc), then withdraw on its thread every one the
    validator withdrew; the round's record is rewritten after each post and each
    withdrawal step, so a run that dies half-way leaves what it did. A finding that
    fails is logged and counted; the others are still posted. Holds the PR's findings
    lock throughout, so a concurrent run finishing withdrawals waits for this one."""
    with _findings_lock(target):
        _post_all(target, patch_id, findings, clock)
        _withdraw_all(target, step)
        return _load(_path(target, patch_id))


def _post_all(
    target: PostTarget,
    patch_id: str,
    findings: Sequence[Finding],
    clock: Callable[[], datetime],
) -> None:
    record = FindingsRound(
        head_sha=target.head_sha,
        patch_id=patch_id,
        posted_at=iso_utc(clock(), timespec="microseconds"),
        expected=len(findings),
        posted=0,
        acceptance=acceptance(findings),
    )
    _write(target, record)
    for finding in findings:
        entry: dict[str, Any] | None = None
        try:
            posted = _post_one(target, finding)
            record.comments.append(posted)
            if finding.action == "withdraw":
                entry = {**withdrawn_json(finding), **posted, "done": []}
        except KdevError as exc:
            log.error("finding of %s not posted: %s [%s]", finding.agent, exc.message, exc.reason)
            record.failures.append({"agent": finding.agent, "reason": exc.reason})
            if finding.action == "withdraw":
                entry = {**withdrawn_json(finding), "id": None, "done": []}
        if entry is not None:
            record.withdrawn.append(entry)
        record = replace(record, posted=len(record.comments))
        _write(target, record)


def record_once(target: PostTarget, record: FindingsRound, review_id: int) -> None:
    """Writes ``record`` (a roster round posted as review ``review_id``, wrapper.review.
    roster_round) under the PR's findings lock, unless the round's record already names
    that review: a rerun that adopted it must not undo the withdrawal steps recorded
    since. A record of another round of the same diff (``--force``) is replaced."""
    with _findings_lock(target):
        path = _path(target, record.patch_id)
        if path.exists() and any(c.get("review_id") == review_id for c in _load(path).comments):
            return
        _write(target, record)


def withdraw_pending(target: PostTarget, step: Step = withdraw_step) -> int:
    """Finish the withdrawals every findings record of ``target``'s pull request still
    owes (a run that failed or died after posting); returns how many stay pending.
    Records are read under the PR's findings lock, so two runs never do a step twice."""
    with _findings_lock(target):
        return _withdraw_all(target, step)


@contextmanager
def _findings_lock(target: PostTarget) -> Iterator[None]:
    directory = target.ledger.pr_dir(target.repo, target.pr)
    target.ledger.ensure_dir(directory)
    with target.ledger.flock(directory / FINDINGS_LOCK, fcntl.LOCK_EX):
        yield


def _withdraw_all(target: PostTarget, step: Step) -> int:
    directory = target.ledger.pr_dir(target.repo, target.pr)
    left = 0
    for path in sorted(directory.glob(f"{FINDINGS_PREFIX}*.json")):
        record = _load(path)
        if not any(pending(entry) for entry in record.withdrawn):
            continue
        round_target = replace(target, head_sha=record.head_sha)
        save = partial(_write, target, record)
        left += withdraw_entries(round_target, record.withdrawn, save, step)
    return left


def check_withdrawn(target: PostTarget, verdict_path: Path | str) -> None:
    """KdevError ``findings_withdraw_incomplete`` when a findings record of the pull
    request still owes a withdrawal step (the next run finishes it)."""
    directory = target.ledger.pr_dir(target.repo, target.pr)
    left = [
        f"{entry.get('id')} ({entry.get('error') or 'not done'})"
        for path in sorted(directory.glob(f"{FINDINGS_PREFIX}*.json"))
        for entry in _load(path).withdrawn
        if pending(entry)
    ]
    if left:
        raise KdevError(
            f"{len(left)} withdrawn finding(s) not yet withdrawn on {target.repo} "
            f"#{target.pr}: {', '.join(left)}; the next run finishes them; the verdict is "
            f"{verdict_path}",
            WITHDRAW_INCOMPLETE,
        )


def _path(target: PostTarget, patch_id: str) -> Path:
    return target.ledger.pr_dir(target.repo, target.pr) / f"{FINDINGS_PREFIX}{patch_id}.json"


def _write(target: PostTarget, record: FindingsRound) -> None:
    target.ledger.ensure_dir(target.ledger.pr_dir(target.repo, target.pr))
    path = _path(target, record.patch_id)
    target.ledger.atomic_write(path, json.dumps(record.to_json(), indent=2))


def round_record(ledger: Ledger, repo: str, pr: int, patch_id: str) -> FindingsRound | None:
    """The findings record of the round that reviewed ``patch_id``, or None (a round of
    one backend, or one whose verdict was refused, has none)."""
    path = ledger.pr_dir(repo, pr) / f"{FINDINGS_PREFIX}{patch_id}.json"
    return _load(path) if path.exists() else None


def newest_round(ledger: Ledger, repo: str, pr: int) -> FindingsRound | None:
    """The most recently posted round's record of ``repo`` #``pr``, or None. A record
    that does not parse is KdevError ``invalid_record`` (never read as clean)."""
    return max(all_rounds(ledger, repo, pr), key=lambda r: r.posted_at, default=None)


def all_rounds(ledger: Ledger, repo: str, pr: int) -> list[FindingsRound]:
    """Every findings record of ``repo`` #``pr`` (KdevError ``invalid_record`` when one
    does not parse)."""
    directory = ledger.pr_dir(repo, pr)
    return [_load(path) for path in sorted(directory.glob(f"{FINDINGS_PREFIX}*.json"))]


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
