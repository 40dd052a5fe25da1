"""The ledger's records and names: verdicts, index entries, deferred markers, legs, rows.

Pure: the dataclasses, the names and modes of the ledger's files (layout:
:mod:`wrapper.ledger.ledger`), the SHA / PR checks that keep names from becoming paths,
and the one timestamp format every ledger file uses.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from engine.jsonable import as_json
from engine.timefmt import iso_utc
from wrapper.errors import ConfigError
from wrapper.jsonform import PrHead, json_in_order

VERDICTS = ("APPROVE", "REQUEST_CHANGES")
DEFERRED_BUDGET_STATE = "deferred:budget"
TIMESPEC = "auto"  # ledger timestamps (iso_utc): microseconds only where a moment has them
HEADER_KEYS = (
    "VERDICT",
    "PR",
    "PR_URL",
    "HEAD_SHA",
    "PATCH_ID",
    "BASE",
    "REVIEWED_AT",
    "REVIEWER_MODEL",
)
# Verdict files written before issue 18 had ``PR: <url>`` and no PR_URL line; they parse.
OLD_HEADER_KEYS = ("VERDICT", "PR", "HEAD_SHA", "PATCH_ID", "BASE", "REVIEWED_AT", "REVIEWER_MODEL")
SEPARATOR = "---"
MIN_SECRET_LENGTH = 8  # shorter values would match ordinary text by chance
DIR_MODE = 0o700
FILE_MODE = 0o600
LOCK_FILE = ".lock"
INDEX_FILE = "index.json"
LEGS_FILE = "legs.jsonl"
POSTED_COMMENTS_FILE = "posted-comments.jsonl"
SHA_RE = re.compile(r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$")  # SHA-1 or SHA-256, lowercase hex
PR_DIR_RE = re.compile(r"^pr-([1-9][0-9]*)$")


def utcnow() -> datetime:
    """Now, aware, in UTC, to the second (the precision the ledger files show)."""
    return datetime.now(UTC).replace(microsecond=0)


def format_timestamp(moment: datetime) -> str:
    """``moment`` as ISO 8601 in UTC ending in ``Z``; a naive datetime is a ValueError."""
    return iso_utc(moment, timespec=TIMESPEC)


def parse_timestamp(text: str) -> datetime:
    """The aware UTC datetime of a :func:`format_timestamp` string; else ValueError."""
    if not text.endswith("Z"):
        raise ValueError(f"{text!r} is not a UTC timestamp ending in Z")
    moment = datetime.fromisoformat(text[:-1] + "+00:00")
    if moment.tzinfo is None:
        raise ValueError(f"{text!r} has no time zone")
    return moment.astimezone(UTC)


def check_sha(value: str, what: str = "sha") -> str:
    """``value`` if it is a lowercase hex SHA-1/SHA-256; else ``ConfigError invalid_sha``."""
    if not isinstance(value, str) or not SHA_RE.match(value):
        raise ConfigError(f"{what} {value!r} is not a lowercase hex object name", "invalid_sha")
    return value


def check_pr(pr: int) -> int:
    """``pr`` if it is a positive int (bool refused); else ``ConfigError invalid_pr``."""
    if isinstance(pr, bool) or not isinstance(pr, int) or pr < 1:
        raise ConfigError(f"pull request number {pr!r} is not a positive integer", "invalid_pr")
    return pr


class RowKind(enum.StrEnum):
    """What a row of ``kdev verdicts`` is."""

    REVIEWED = "reviewed"  # a reviewer leg ran for this head
    CARRIED = "carried"  # this head has the verdict of an identical diff
    DEFERRED = "deferred"  # a deferred:budget marker


@dataclass(frozen=True)
class VerdictRecord:
    """The content of one verdict file."""

    verdict: str  # APPROVE | REQUEST_CHANGES (checked when written and parsed)
    pr_url: str
    head_sha: str  # the head that was reviewed
    patch_id: str
    base: str  # the base branch name
    reviewed_at: datetime  # aware
    model: str  # REVIEWER_MODEL
    body: str  # the review, verbatim
    # The PR number (the ``PR:`` line). None until the ledger writes the record under its
    # PR (Ledger.write_verdict fills it in) or when an old-header file is parsed alone.
    pr: int | None = None
    # The round's legs in one line (wrapper.usage.summary, D103): the optional ``USAGE:``
    # header line after REVIEWER_MODEL; "" writes none (and is what older files read as).
    usage: str = ""


@dataclass(frozen=True)
class IndexEntry:
    """What index.json says about one head SHA."""

    patch_id: str
    verdict: str  # APPROVE | REQUEST_CHANGES
    reviewed_at: datetime  # when the verdict was reviewed (for a carried one: originally)
    carried_from: str | None = None  # None: this head was reviewed; else the reviewed head
    carried_at: datetime | None = None  # when it was carried (None: reviewed, or older kdev)

    @property
    def kind(self) -> RowKind:
        """``reviewed`` or ``carried``."""
        return RowKind.REVIEWED if self.carried_from is None else RowKind.CARRIED


@dataclass(frozen=True)
class DeferredMarker:
    """A ``deferred:budget`` marker: a leg that a budget held back, and until when."""

    budget: str  # daily_legs_per_repo | daily_rounds_per_pr
    count: int  # legs counted in the window
    limit: int
    reopens_at: datetime | None  # when to retry; None only in markers of an older kdev
    head_sha: str
    pr_url: str
    created_at: datetime

    def to_json(self) -> dict[str, Any]:
        """The marker file's JSON object (``state`` is always ``deferred:budget``)."""
        return {"state": DEFERRED_BUDGET_STATE, **as_json(self, timespec=TIMESPEC)}


@dataclass(frozen=True)
class LegRecord:
    """One reviewer leg, counted when it *started*."""

    pr: int
    head_sha: str
    started_at: datetime


@dataclass(frozen=True)
class LedgerRow(PrHead):
    """One line of ``kdev verdicts``: an index entry, or a deferred marker."""

    kind: RowKind
    # An index entry's fields (wrapper.ledger.listing.pr_rows copies them all); None for
    # a deferred marker (its time is deferred.created_at).
    patch_id: str | None = None
    verdict: str | None = None
    reviewed_at: datetime | None = None
    carried_from: str | None = None
    carried_at: datetime | None = None
    deferred: DeferredMarker | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON object for ``kdev verdicts --json``; ``deferred`` is the marker or null."""
        return json_in_order(
            self,
            "repo pr head_sha patch_id verdict reviewed_at kind carried_from carried_at deferred",
            timespec=TIMESPEC,
        )
