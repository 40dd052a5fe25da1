"""The usage log: ``<owner>__<name>/usage.jsonl``, one line per reviewer leg *ended*, with
what it spent (issue 31, D103), appended under ``.usage.lock``.

A line: ``at`` (when the leg's round recorded it), ``pr``, ``head_sha``, ``patch_id``,
``command`` (``review-pr``, ``describe-pr`` ...), and the leg's
:class:`~wrapper.usage.LegUsage` fields: ``model``, ``tokens_in``, ``tokens_out``,
``cached``, ``cost`` (a decimal string, or null), ``source`` (``reported``, ``computed``,
``unknown``) and ``reason``. It is the one record of money spent: ``kdev costs``, the
metrics and the money budgets (D106) sum these lines, never the leg log (which counts legs
*started* and is pruned at 7 days). This log is kept whole; a line that does not parse
(a writer killed mid-append) is skipped with a warning.
"""

from __future__ import annotations

import fcntl
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from wrapper.ledger import jsonl
from wrapper.ledger.files import LedgerFiles
from wrapper.ledger.records import check_pr, check_sha, format_timestamp, parse_timestamp
from wrapper.usage import LegUsage

log = logging.getLogger("kdev.usage")

USAGE_FILE = "usage.jsonl"
USAGE_LOCK = ".usage.lock"


@dataclass(frozen=True)
class UsageRecord:
    """One ended leg and what it spent."""

    at: datetime
    repo: str
    pr: int
    head_sha: str
    patch_id: str | None
    command: str
    usage: LegUsage

    def to_line(self) -> str:
        """The record's ``usage.jsonl`` line (the repository is the directory's)."""
        data: dict[str, Any] = {
            "at": format_timestamp(self.at),
            "pr": check_pr(self.pr),
            "head_sha": check_sha(self.head_sha, "head_sha"),
            "patch_id": None if self.patch_id is None else check_sha(self.patch_id, "patch_id"),
            "command": self.command,
            **self.usage.to_json(),
        }
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_line(cls, repo: str, line: str) -> UsageRecord:
        """The record of one line; ValueError (or KeyError/TypeError) for a bad one."""
        data = json.loads(line)
        if not isinstance(data, dict):
            raise ValueError("not an object")
        pr = data["pr"]
        if type(pr) is not int or pr < 1:
            raise ValueError(f"pr {pr!r}")
        patch_id = data.get("patch_id")
        return cls(
            at=parse_timestamp(str(data["at"])),
            repo=repo,
            pr=pr,
            head_sha=str(data["head_sha"]),
            patch_id=None if patch_id is None else str(patch_id),
            command=str(data["command"]),
            usage=LegUsage.from_json(data),
        )


def append_usage(ledger: LedgerFiles, record: UsageRecord) -> None:
    """Appends ``record`` to its repository's usage log, fsync'd, under its lock."""
    directory = ledger.repo_dir(record.repo)
    ledger.ensure_dir(directory)
    line = record.to_line()
    with ledger.flock(directory / USAGE_LOCK, fcntl.LOCK_EX):
        jsonl.append_line(directory / USAGE_FILE, line)


def read_usage(
    ledger: LedgerFiles, repo: str | None = None, since: datetime | None = None
) -> Iterator[UsageRecord]:
    """The usage records of ``repo`` (None: every repository), at or after ``since``,
    in log order, repository by repository."""
    for name, directory in ledger.iter_repos(repo):
        path = directory / USAGE_FILE
        with ledger.flock(directory / USAGE_LOCK, fcntl.LOCK_SH):
            lines, _stat = jsonl.read_lines(path)
        for number, line in lines:
            try:
                record = UsageRecord.from_line(name, line)
            except (ValueError, KeyError, TypeError) as exc:
                log.warning("ignoring line %d of %s: %s", number, path, exc)
                continue
            if since is None or record.at >= since:
                yield record
