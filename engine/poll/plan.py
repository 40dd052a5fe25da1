"""One github_poll pass, the pure part: pull requests in, ordered events and decisions out.

Why it is built this way: docs/decisions.md D10.

Nothing here does I/O. :mod:`engine.poll.pollpass` and :mod:`engine.poll.mentions` fetch,
claim and launch around it.

Vocabulary:

- **event**: a pull request seen at one moment, ``(pr_number, at, head_sha)`` where ``at``
  is ``updated_at`` (mode ``pr_updated``) or ``merged_at`` (mode ``pr_merged``). Its
  occurrence key is unique per schedule in the database, so an event fires at most once.
- **cursor**: the newest ``at`` already handled. An event is new unless its ``at`` is
  strictly older than the cursor: the boundary second is always re-offered (GitHub stamps
  to the second and lists eventually-consistently), and re-offers cost nothing because
  claims are unique.
- **excluded**: filtered out (draft, base, fork...). It moves the cursor like a fire.
- **held**: dispatchable but over the per-pass fire cap; persisted and fired first on
  later passes. A held event stops the cursor, so nothing after it is ever skipped.

Exclusion reason codes: ``state`` (not open), ``draft``, ``not_draft``, ``base_mismatch``,
``head_repo_missing`` (deleted fork, fail closed), ``not_same_repo`` (a fork or any other
head repository).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from engine.github.types import PullRequest, is_same_repo
from engine.poll.config import GithubPollConfig
from engine.timefmt import iso_utc_or_none

DEFAULT_OPEN_PAGE_LIMIT = 3
DEFAULT_MERGED_PAGE_LIMIT = 5
MAX_REFUSALS = 3


def iso(moment: datetime | None) -> str | None:
    """``2026-01-01T12:00:00Z`` (the form GitHub uses), or None."""
    return iso_utc_or_none(moment)


def exclusion_reason(pr: PullRequest, config: GithubPollConfig) -> str | None:
    """Why ``pr`` must not fire under ``config``'s filters, or None if it may."""
    filters = config.filters
    if config.event == "pr_updated" and pr.state != "open":
        return "state"
    if filters.draft is not None and pr.draft != filters.draft:
        return "draft" if pr.draft else "not_draft"
    if filters.base is not None and pr.base_ref != filters.base:
        return "base_mismatch"
    if filters.same_repo_only and not is_same_repo(pr):
        return "head_repo_missing" if pr.head_repo_full_name is None else "not_same_repo"
    return None


def event_context(pr: PullRequest, repo: str, config: GithubPollConfig) -> dict[str, Any]:
    """The template variables of one event (``schedule_name`` and ``fired_at`` are added
    when it fires)."""
    context: dict[str, Any] = {
        "repo": repo,
        "pr_number": pr.number,
        "pr_title": pr.title,
        "pr_url": pr.html_url,
        "pr_author": pr.user_login,
        "pr_author_id": pr.user_id,
        "created_at": iso(pr.created_at),
        "updated_at": iso(pr.updated_at),
        "head_sha": pr.head_sha,
        "head_ref": pr.head_ref,
        "base_ref": pr.base_ref,
        "draft": pr.draft,
        "head_repo": pr.head_repo_full_name,
        "head_repo_is_fork": bool(pr.head_repo_fork),
        "is_same_repo": is_same_repo(pr),
    }
    if config.event == "pr_merged":
        context["merged_at"] = iso(pr.merged_at)
        context["merge_commit_sha"] = pr.merge_commit_sha
    return context


@dataclass(frozen=True)
class PollEvent:
    """One event of a pass; ``exclusion`` is None when it may fire."""

    pr_number: int
    at: datetime
    context: dict[str, Any]
    exclusion: str | None = None

    @property
    def head_sha(self) -> str:
        """The pull request's head SHA when the event was seen (``""`` if unknown)."""
        value = self.context.get("head_sha")
        return value if isinstance(value, str) else ""

    @property
    def key(self) -> str:
        """The occurrence key, unique per schedule: ``{pr_number}@{at}#{head_sha}``.

        The head SHA is part of it: ``at`` is to the second, so a push in the same second
        as an earlier event of the same pull request is still a new event.
        """
        return f"{self.pr_number}@{iso(self.at)}#{self.head_sha}"

    def to_json(self) -> dict[str, Any]:
        """A JSON-safe form for the persisted held batch."""
        return {"pr_number": self.pr_number, "at": iso(self.at), "context": self.context}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PollEvent:
        """Inverse of :meth:`to_json`."""
        at = datetime.fromisoformat(str(data["at"]).replace("Z", "+00:00"))
        return cls(pr_number=int(data["pr_number"]), at=at, context=dict(data["context"]))


def event_time(pr: PullRequest, config: GithubPollConfig) -> datetime | None:
    """``updated_at`` in open mode, ``merged_at`` in merged mode (None: not merged)."""
    return pr.merged_at if config.event == "pr_merged" else pr.updated_at


def scan_reached_cursor(
    pulls: Sequence[PullRequest], complete: bool, cursor: datetime | None
) -> bool:
    """Whether a scan read everything at or after the cursor.

    Listings are sorted by ``updated_at`` descending, so once any item strictly older than
    the cursor was read, every newer item was read too. In merged mode ``merged_at <=
    updated_at``, so the same test on ``updated_at`` is safe for ``merged_at``.
    """
    if complete:
        return True
    if cursor is None:
        return False
    return any(pr.updated_at < cursor for pr in pulls)


def new_events(
    pulls: Iterable[PullRequest], *, repo: str, config: GithubPollConfig, cursor: datetime | None
) -> list[PollEvent]:
    """Events at or after the cursor (strict ``<`` excludes), oldest first, ties by number."""
    events = []
    for pr in pulls:
        at = event_time(pr, config)
        if at is None or (cursor is not None and at < cursor):
            continue
        events.append(
            PollEvent(
                pr_number=pr.number,
                at=at,
                context=event_context(pr, repo, config),
                exclusion=exclusion_reason(pr, config),
            )
        )
    events.sort(key=lambda e: (e.at, e.pr_number))
    return events


def still_matching(
    held: Sequence[PollEvent], pulls: Sequence[PullRequest] | None, config: GithubPollConfig
) -> tuple[list[PollEvent], list[PollEvent]]:
    """Split a held batch into (still matching, superseded) against a fresh listing.

    A held event is superseded when the listing shows its pull request at a newer time
    (the newer event replaces it) or no longer dispatchable. A pull request absent from
    the listing (closed, or beyond the pages read) stays held: absence proves nothing.
    ``pulls`` None (a 304 or no fresh listing) keeps everything.
    """
    if pulls is None:
        return list(held), []
    by_number = {pr.number: pr for pr in pulls}
    keep, dropped = [], []
    for event in held:
        pr = by_number.get(event.pr_number)
        if pr is None:
            keep.append(event)
            continue
        at = event_time(pr, config)
        if at is not None and at > event.at or exclusion_reason(pr, config) is not None:
            dropped.append(event)
        else:
            keep.append(event)
    return keep, dropped


@dataclass
class PassPlan:
    """What a pass will do, in order. ``work`` mixes held and fresh events, oldest held
    first; ``excluded`` move the cursor without firing."""

    work: list[PollEvent] = field(default_factory=list)
    superseded: list[PollEvent] = field(default_factory=list)
    released: bool = True  # False: an incomplete scan released no fresh events


def plan_pass(
    *,
    held: Sequence[PollEvent],
    fresh: Sequence[PollEvent] | None,
    pulls_for_held: Sequence[PullRequest] | None,
    config: GithubPollConfig,
    scan_complete: bool,
) -> PassPlan:
    """Order a pass's work: still-matching held events first, then fresh events.

    ``fresh`` None means there is no fresh listing to act on (a 304). An incomplete scan
    releases no fresh event: the unread items are older than everything read, and firing
    newer ones first would move the cursor past them.
    """
    keep, superseded = still_matching(held, pulls_for_held, config)
    plan = PassPlan(work=sorted(keep, key=lambda e: (e.at, e.pr_number)), superseded=superseded)
    if fresh is None:
        return plan
    if not scan_complete:
        plan.released = False
        return plan
    held_keys = {event.key for event in plan.work}
    plan.work.extend(event for event in fresh if event.key not in held_keys)
    return plan
