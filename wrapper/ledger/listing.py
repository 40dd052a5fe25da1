"""The rows of ``kdev verdicts``: filtered and paged without reading every PR (issue 19).

Rows are ordered by repository, PR, time (``reviewed_at``, or a marker's ``created_at``)
and head SHA. ``--pr`` opens that one PR directory. A page (``--limit``, ``--cursor``) lists
the PR directories and reads them in order from the cursor's PR until it is full.
``--since`` keeps a row by the time it was recorded: a carried head's ``carried_at``, else
the time above. It asks the repository's PR index (:mod:`wrapper.ledger.prindex`) which PRs have
rows that recent and reads only those. A cursor is the position of the last row of a page,
opaque to the user.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from wrapper.errors import ConfigError, LedgerError
from wrapper.ledger import prindex
from wrapper.ledger.files import log
from wrapper.ledger.records import (
    DeferredMarker,
    IndexEntry,
    LedgerRow,
    RowKind,
    check_pr,
    format_timestamp,
    parse_timestamp,
)


class LedgerView(Protocol):
    """What the listing reads of a :class:`~wrapper.ledger.ledger.Ledger` (a protocol, so
    the listing does not import the ledger that offers it as ``Ledger.page_ledger``)."""

    def read_index(self, repo: str, pr: int) -> dict[str, IndexEntry]: ...

    def pr_summaries(
        self, repo: str, *, with_index: bool = True
    ) -> dict[int, prindex.PrSummary]: ...

    def iter_repos(self, repo: str | None) -> Iterator[tuple[str, Path]]: ...

    def markers_of(self, pr_path: Path) -> list[DeferredMarker]: ...


Key = tuple[str, int, datetime, str]
_EPOCH = datetime.min.replace(tzinfo=UTC)


def row_key(row: LedgerRow) -> Key:
    """The listing order: repo, pr, time, head."""
    moment = row.reviewed_at or (row.deferred.created_at if row.deferred else None)
    return (row.repo, row.pr, moment or _EPOCH, row.head_sha)


def row_moment(row: LedgerRow) -> datetime:
    return row_key(row)[2]


def recorded_at(row: LedgerRow) -> datetime:
    """When the row was written: a carried head's carry, else :func:`row_moment`."""
    return row.carried_at or row_moment(row)


def encode_cursor(key: Key) -> str:
    repo, pr, moment, head = key
    raw = json.dumps([repo, pr, format_timestamp(moment), head], separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(token: str) -> Key:
    """The position a :func:`encode_cursor` token names; ConfigError ``invalid_cursor``."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        repo, pr, moment, head = json.loads(raw)
        if not isinstance(repo, str) or not isinstance(head, str) or type(pr) is not int:
            raise ValueError("wrong types")
        return (repo, pr, parse_timestamp(moment), head)
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError):
        raise ConfigError(
            f"--cursor {token!r} is not a cursor printed by kdev verdicts", "invalid_cursor"
        ) from None


@dataclass(frozen=True)
class LedgerPage:
    """One page of rows and the cursor of the next page (None: this is the last)."""

    rows: list[LedgerRow]
    next_cursor: str | None


def pr_rows(
    repo: str, pr: int, index: dict[str, IndexEntry], markers: Iterable[DeferredMarker]
) -> list[LedgerRow]:
    """The rows of one PR, in listing order: an index entry's row has all its fields."""
    rows = [
        LedgerRow(repo=repo, pr=pr, head_sha=head, kind=entry.kind, **asdict(entry))
        for head, entry in index.items()
    ]
    deferred = RowKind.DEFERRED
    rows.extend(
        LedgerRow(repo=repo, pr=pr, head_sha=marker.head_sha, kind=deferred, deferred=marker)
        for marker in markers
    )
    rows.sort(key=row_key)
    return rows


@dataclass(frozen=True)
class Query:
    """What ``kdev verdicts`` asks for; None is no filter."""

    repo: str | None = None
    pr: int | None = None
    since: datetime | None = None
    limit: int | None = None
    after: Key | None = None

    def keeps(self, row: LedgerRow) -> bool:
        if self.since is not None and recorded_at(row) < self.since:
            return False
        return self.after is None or row_key(row) > self.after


def _index_or_empty(ledger: LedgerView, repo: str, pr: int) -> dict[str, IndexEntry]:
    try:
        return ledger.read_index(repo, pr)
    except LedgerError as exc:
        log.warning("skipping %s#%d: %s", repo, pr, exc)
        return {}


def _candidates(
    ledger: LedgerView, repo: str, repo_path: Path, query: Query
) -> Iterable[tuple[int, Iterable[DeferredMarker] | None]]:
    """The PRs of ``repo`` that may hold rows the query keeps, by number, each with its
    markers when the PR index already has them (None: read the directory)."""
    after = query.after
    if query.pr is not None:
        if (repo_path / f"pr-{query.pr}").is_dir():
            yield query.pr, None
        return
    if query.since is None:
        # A page in listing order needs no summary: the PR directories are listed (one
        # scandir) and read in order until the page is full.
        for pr, _ in prindex.pr_dirs(repo_path):
            if after is None or (repo, pr) >= after[:2]:
                yield pr, None
        return
    for pr, summary in sorted(ledger.pr_summaries(repo).items()):
        if after is not None and (repo, pr) < after[:2]:
            continue
        if summary.rows == 0 and not summary.markers:
            continue
        if query.since is not None and summary.trusted:
            newest = summary.newest  # None: unknown, so the PR is read
            if newest is not None and newest < query.since:
                continue
        yield pr, summary.markers


def page_ledger(ledger: LedgerView, query: Query) -> LedgerPage:
    """The rows ``query`` selects, at most ``query.limit`` of them, in listing order."""
    if query.pr is not None:
        check_pr(query.pr)
    if query.limit is not None and query.limit < 1:
        raise ConfigError(f"--limit must be at least 1, got {query.limit}", "invalid_limit")
    rows: list[LedgerRow] = []
    repos = sorted(ledger.iter_repos(query.repo))
    for name, repo_path in repos:
        if query.after is not None and name < query.after[0]:
            continue
        for pr, markers in _candidates(ledger, name, repo_path, query):
            found = markers if markers is not None else ledger.markers_of(repo_path / f"pr-{pr}")
            kept = [
                row
                for row in pr_rows(name, pr, _index_or_empty(ledger, name, pr), found)
                if query.keeps(row)
            ]
            rows.extend(kept)
            if query.limit is not None and len(rows) > query.limit:
                page = rows[: query.limit]
                return LedgerPage(page, encode_cursor(row_key(page[-1])))
    return LedgerPage(rows, None)
