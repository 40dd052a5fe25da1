"""The outcome log: every ``review-pr`` / ``describe-pr`` invocation's outcome, per PR.

``<reviews_dir>/<owner>__<name>/pr-<N>/outcomes.jsonl``, one JSON object a line, appended
under an flock: ``at``, ``command``, ``outcome`` (a :class:`wrapper.errors.Outcome` value,
or ``failed``), ``reason`` (a reason code: the budget of a deferral, the error's reason of
a failure, the outcome itself otherwise), ``head_sha``, ``patch_id``, ``verdict``,
``artifact``, ``detail`` and ``reopens_at`` (a deferral's, when it reopens).

Compaction is bounded: when the file holds more than ``2 * keep`` lines it is rewritten
atomically with the newest ``keep`` (default 200, ``KDEV_OUTCOMES_KEEP``), so a PR's log
never exceeds ``2 * keep`` lines.
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from wrapper.errors import ConfigError, KdevError, Outcome
from wrapper.jsonform import JsonForm
from wrapper.ledger import jsonl
from wrapper.ledger.ledger import Ledger, parse_timestamp
from wrapper.review.review import ReviewReport, ReviewRequest

log = logging.getLogger("kdev.outcomes")

FAILED = "failed"
DEFAULT_KEEP = 200
OUTCOMES_FILE = "outcomes.jsonl"
# The fields an entry keeps from the ReviewReport as they are (entry_of).
REPORT_FIELDS = ("head_sha", "patch_id", "verdict", "artifact", "detail", "merge_gate")


@dataclass(frozen=True)
class OutcomeEntry(JsonForm):
    """One invocation's outcome."""

    at: datetime
    command: str
    outcome: str
    reason: str
    head_sha: str
    patch_id: str | None = None
    verdict: str | None = None
    artifact: str | None = None
    detail: str = ""
    reopens_at: datetime | None = None
    merge_gate: dict[str, str] | None = None  # what the merge gate set (D85), if it is on

    JSON_TIMESPEC = "auto"

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> OutcomeEntry:
        reopens = data.get("reopens_at")
        return cls(
            at=parse_timestamp(str(data["at"])),
            command=str(data["command"]),
            outcome=str(data["outcome"]),
            reason=str(data["reason"]),
            head_sha=str(data.get("head_sha") or ""),
            patch_id=data.get("patch_id"),
            verdict=data.get("verdict"),
            artifact=data.get("artifact"),
            detail=str(data.get("detail") or ""),
            reopens_at=parse_timestamp(str(reopens)) if reopens else None,
            merge_gate=_gate_of(data.get("merge_gate")),
        )


def keep_from_env(environ: Mapping[str, str] | None = None) -> int:
    """``KDEV_OUTCOMES_KEEP`` (a whole number >= 1), default 200."""
    text = (os.environ if environ is None else environ).get("KDEV_OUTCOMES_KEEP", "").strip()
    if not text:
        return DEFAULT_KEEP
    if not text.isdigit() or int(text) < 1:
        raise ConfigError(
            f"KDEV_OUTCOMES_KEEP must be a whole number >= 1, got {text!r}", "invalid_outcomes_keep"
        )
    return int(text)


class OutcomeLog:
    """Append and read the per-PR outcome logs under a ledger's directory."""

    def __init__(self, ledger: Ledger, keep: int = DEFAULT_KEEP) -> None:
        self.ledger = ledger
        self.keep = keep

    def path(self, repo: str, pr: int) -> Path:
        return self.ledger.pr_dir(repo, pr) / OUTCOMES_FILE

    def append(self, repo: str, pr: int, entry: OutcomeEntry) -> None:
        """Append one line under the PR's lock file; compact past ``2 * keep`` lines."""
        path = self.path(repo, pr)
        self.ledger.ensure_dir(path.parent)
        line = json.dumps(entry.to_json(), sort_keys=True)
        with self.ledger.flock(path.parent / ".outcomes.lock", fcntl.LOCK_EX):
            jsonl.append_line(path, line)
            lines, _stat = jsonl.read_lines(path)
            if len(lines) > 2 * self.keep:
                kept = "".join(f"{text}\n" for _number, text in lines[-self.keep :])
                self.ledger.atomic_write(path, kept)

    def read(self, repo: str, pr: int) -> list[OutcomeEntry]:
        """The PR's outcomes, oldest first; a malformed line is logged and skipped."""
        path = self.path(repo, pr)
        lines, _stat = jsonl.read_lines(path)
        entries = []
        for number, raw in lines:
            try:
                entries.append(OutcomeEntry.from_json(json.loads(raw)))
            except (ValueError, KeyError, TypeError) as exc:
                log.warning("%s:%d: skipped a malformed outcome: %s", path, number, exc)
        return entries


def _gate_of(value: Any) -> dict[str, str] | None:
    """A logged ``merge_gate``: a mapping of strings, else None (an older or odd line)."""
    if not isinstance(value, dict):
        return None
    return {str(k): v for k, v in value.items() if isinstance(v, str)}


def entry_of(command: str, report: ReviewReport, ledger: Ledger, now: datetime) -> OutcomeEntry:
    """The outcome entry of a report; a deferral carries its marker's budget and reopening."""
    reason = report.outcome.value
    reopens_at = None
    if report.outcome is Outcome.DEFERRED_BUDGET:
        reason = report.detail.partition(":")[0] or reason
        for _repo, pr, marker in ledger.list_deferred(report.repo):
            if pr == report.pr and marker.head_sha == report.head_sha:
                reopens_at = marker.reopens_at
    kept = {name: getattr(report, name) for name in REPORT_FIELDS}
    outcome = report.outcome.value
    return OutcomeEntry(
        at=now, command=command, outcome=outcome, reason=reason, reopens_at=reopens_at, **kept
    )


def secret_values(secret_env: Sequence[str], environ: Mapping[str, str]) -> list[str]:
    """The values never written to the log: ``secret_env``'s and ``GITHUB_TOKEN``."""
    names = [*secret_env, "GITHUB_TOKEN"]
    return [value for name in names if len(value := environ.get(name, "")) >= 4]


def redact(text: str, secrets: Sequence[str]) -> str:
    for value in secrets:
        text = text.replace(value, "[redacted]")
    return text


def recorded(
    command: str,
    req: ReviewRequest,
    outcomes: OutcomeLog,
    run: Callable[[], ReviewReport],
    clock: Callable[[], datetime],
    secrets: Sequence[str] = (),
) -> ReviewReport:
    """Run one invocation and append its outcome, a failure included (then re-raised).

    ``secrets`` are replaced by ``[redacted]`` in what is written (a failure's message
    may quote a reviewer's stderr). A failure to append is logged, never turns a
    decision into an error: the outcome log is a record, the ledger stays the source of
    truth for verdicts."""
    try:
        report = run()
    except KdevError as exc:
        failure = OutcomeEntry(
            at=clock(),
            command=command,
            outcome=FAILED,
            reason=exc.reason,
            head_sha=req.head_sha,
            detail=redact(exc.message, secrets)[:500],
        )
        _append(outcomes, req.repo, req.pr, failure)
        raise
    entry = entry_of(command, report, outcomes.ledger, clock())
    entry = dataclasses.replace(entry, detail=redact(entry.detail, secrets))
    _append(outcomes, report.repo, report.pr, entry)
    return report


def _append(outcomes: OutcomeLog, repo: str, pr: int, entry: OutcomeEntry) -> None:
    try:
        outcomes.append(repo, pr, entry)
    except (KdevError, OSError) as exc:
        log.warning("could not record the outcome of %s #%s: %s", repo, pr, exc)
