"""The merge gate as a check run (issue 30, D109): when kdev is a GitHub App, the gate of
:mod:`wrapper.review.merge_gate` is a ``kdev/review`` check run per decided head instead
of a commit status (only an App may create check runs).

    gate state   check run
    pending      status in_progress      (a leg runs; a deferral waits: its reason)
    success      completed, success      (APPROVE)
    failure      completed, failure      (REQUEST_CHANGES; every path excluded)
    error        completed, failure      (kdev failed: REASON; GitHub has no ``error``
                                          conclusion, and ``neutral`` would pass a
                                          required check, D109)

The gate's description is the output's ``title``; its ``summary`` is the round's (the
verdict, its findings), cut to fit GitHub's 65535 characters. Each anchored finding is an
annotation (P1/P2 ``failure``, P3 ``notice``), at most 50 per request: the first 50 go
with the request that sets the title, the rest in further PATCHes (GitHub appends
them), and only the last request sets the conclusion, so a run killed in between is
still ``in_progress``. Everything shown passes the posting gate's preparation
(:class:`wrapper.post.BodyGate`: neutralised, the secret canary).

A rerun never makes a second check run for a head: the run is found again by its
``external_id`` (``kdev:<head sha>``) among the head's runs of the gate's name, and only
what it lacks is sent (nothing when its status, conclusion and title already match and
it has every annotation; the annotations it has are not sent again).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.github import GitHubClient, GitHubError
from wrapper.errors import KdevError
from wrapper.gh_checks import (
    MAX_ANNOTATIONS_PER_REQUEST,
    CheckRunSeen,
    create_check_run,
    list_check_runs,
    update_check_run,
)
from wrapper.post import BodyGate
from wrapper.review.findings import Finding

READ_FAILED = "merge_gate_read_failed"
POST_FAILED = "merge_gate_post_failed"
# The gate's states as a check run: (status, conclusion); see the module doc.
AS_CHECK: dict[str, tuple[str, str | None]] = {
    "pending": ("in_progress", None),
    "success": ("completed", "success"),
    "failure": ("completed", "failure"),
    "error": ("completed", "failure"),
}
LEVELS = {"P1": "failure", "P2": "failure", "P3": "notice"}


@dataclass(frozen=True)
class GateDetail:
    """What a check run shows beyond the gate's state: the round's summary and the
    findings (those with a path and a line become annotations)."""

    summary: str
    findings: Sequence[Finding] = field(default_factory=tuple)


def external_id(head_sha: str) -> str:
    return f"kdev:{head_sha}"


class CheckRunGate:
    """:class:`wrapper.review.merge_gate.MergeGate` as check runs named ``name`` on
    ``repo``, with an App's installation token (module doc)."""

    kind = "check run"

    def __init__(self, github: GitHubClient, repo: str, name: str, body: BodyGate) -> None:
        self.github = github
        self.repo = repo
        self.name = name
        self.body = body

    def set(
        self, head_sha: str, state: str, description: str, detail: GateDetail | None = None
    ) -> bool:
        status, conclusion = AS_CHECK[state]
        title = self.body.prepare(description)
        summary = self.body.prepare(detail.summary if detail is not None else description)
        notes = self._annotations(detail.findings if detail is not None else ())
        where = f"the {self.name} check run of {head_sha[:12]} in {self.repo}"
        found = self._existing(head_sha, where)
        have = found.annotations_count if found is not None else 0
        if found is not None and (found.status, found.conclusion, found.title) == (
            status, conclusion, title
        ) and have >= len(notes):  # fmt: skip
            return False
        rest = notes[have:]
        batches = [
            rest[i : i + MAX_ANNOTATIONS_PER_REQUEST]
            for i in range(0, len(rest), MAX_ANNOTATIONS_PER_REQUEST)
        ] or [[]]
        for index, batch in enumerate(batches):
            last = index == len(batches) - 1
            payload: dict[str, Any] = {
                "name": self.name,
                "external_id": external_id(head_sha),
                "status": status if last else "in_progress",
                "output": {"title": title, "summary": summary, "annotations": batch},
            }
            if last and conclusion is not None:
                payload["conclusion"] = conclusion
            found = self._send(found, head_sha, payload, where)
        return True

    def _annotations(self, findings: Sequence[Finding]) -> list[dict[str, Any]]:
        notes = []
        for finding in findings:
            if finding.path is None or finding.line is None:
                continue  # a PR-level finding: in the summary only
            notes.append(
                {
                    "path": finding.path,
                    "start_line": finding.line,
                    "end_line": finding.line,
                    "annotation_level": LEVELS.get(finding.priority, "failure"),
                    "title": f"{finding.priority} ({finding.agent})"[:255],
                    "message": self.body.prepare(finding.text),
                }
            )
        return notes

    def _existing(self, head_sha: str, where: str) -> CheckRunSeen | None:
        try:
            runs = list_check_runs(self.github, self.repo, head_sha, self.name)
        except GitHubError as exc:
            raise KdevError(
                f"cannot read {where}: {exc.message} [{exc.reason}]", READ_FAILED
            ) from None
        mine = [run for run in runs if run.external_id == external_id(head_sha)]
        return mine[0] if mine else None

    def _send(
        self, found: CheckRunSeen | None, head_sha: str, payload: dict[str, Any], where: str
    ) -> CheckRunSeen:
        try:
            if found is None:
                return create_check_run(self.github, self.repo, {**payload, "head_sha": head_sha})
            return update_check_run(self.github, self.repo, found.id, payload)
        except GitHubError as exc:
            raise KdevError(
                f"cannot set {where}: {exc.message} [{exc.reason}]", POST_FAILED
            ) from None
