"""The simulator's state: plain dataclasses, mutated only under ``GitHubSim.lock``.

Objects returned by the helpers are these live records; read them, but change state
through the ``GitHubSim`` methods so ``updated_at`` and the git refs stay consistent.
"""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def node_id(kind: str, number: int) -> str:
    """GitHub's legacy global node id, e.g. ``MDQ6VXNlcjE=`` for ``04:User1``."""
    return base64.b64encode(f"0{len(kind)}:{kind}{number}".encode()).decode()


def iso(when: datetime | None) -> str | None:
    """Aware UTC to the second, ``YYYY-MM-DDTHH:MM:SSZ`` (``None`` stays ``None``)."""
    if when is None:
        return None
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(text: str) -> datetime:
    """ISO 8601 with ``Z`` or an offset (a naive value is read as UTC)."""
    value = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace(" ", "+"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


@dataclass
class User:
    login: str
    id: int
    type: str = "User"  # "Bot" for logins ending in [bot]

    def as_dict(self) -> dict[str, Any]:
        return {"login": self.login, "id": self.id, "type": self.type}


@dataclass
class Repo:
    full_name: str
    id: int
    owner: User
    default_branch: str
    path: Path
    created_at: datetime
    pushed_at: datetime
    fork: bool = False
    parent: Repo | None = None
    private: bool = False
    description: str = ""
    collaborators: set[int] = field(default_factory=set)
    labels: dict[str, int] = field(default_factory=dict)  # name -> label id

    @property
    def name(self) -> str:
        return self.full_name.split("/", 1)[1]

    @property
    def key(self) -> str:
        return self.full_name.lower()

    def as_dict(self) -> dict[str, Any]:
        return {
            "full_name": self.full_name,
            "id": self.id,
            "default_branch": self.default_branch,
            "path": str(self.path),
            "fork": self.fork,
        }


@dataclass
class Pull:
    repo: Repo  # the base repository
    number: int
    id: int
    title: str
    body: str | None
    user: User
    head_repo: Repo  # == repo for same-repository pull requests
    head_ref: str
    head_sha: str
    base_ref: str
    created_at: datetime
    updated_at: datetime
    state: str = "open"  # open | closed
    draft: bool = False
    locked: bool = False
    labels: list[str] = field(default_factory=list)
    closed_at: datetime | None = None
    merged_at: datetime | None = None
    merge_commit_sha: str | None = None
    merged_by: User | None = None
    auto_merge: dict[str, Any] | None = None  # {"method", "enabled_by": User, "enabled_at"}
    review_decision: str | None = "auto"  # "auto" = computed from reviews
    merge_state: str | None = "auto"  # "auto" = computed with git
    user_null: bool = False  # ghost author: ``user: null``
    head_repo_null: bool = False  # deleted fork: ``head.repo: null``

    @property
    def is_cross_repository(self) -> bool:
        return self.head_repo.id != self.repo.id

    @property
    def merged(self) -> bool:
        return self.merged_at is not None

    @property
    def pull_ref(self) -> str:
        return f"refs/pull/{self.number}/head"

    def as_dict(self) -> dict[str, Any]:
        return {
            "repo": self.repo.full_name,
            "number": self.number,
            "id": self.id,
            "title": self.title,
            "state": self.state,
            "draft": self.draft,
            "head_repo": self.head_repo.full_name,
            "head_ref": self.head_ref,
            "head_sha": self.head_sha,
            "base_ref": self.base_ref,
            "created_at": iso(self.created_at),
            "updated_at": iso(self.updated_at),
            "merged_at": iso(self.merged_at),
            "merge_commit_sha": self.merge_commit_sha,
        }


@dataclass
class Comment:
    """An issue comment (``kind="issue"``) or a review comment (``kind="review"``)."""

    repo: Repo
    pull_number: int
    id: int
    kind: str
    body: str
    user: User
    created_at: datetime
    updated_at: datetime
    path: str | None = None
    line: int | None = None
    commit_id: str | None = None
    review_id: int | None = None
    in_reply_to_id: int | None = None
    user_null: bool = False
    # Where a review comment is anchored (issue 27): the side of ``line``, the first line
    # and side of a multi-line range, its diff position and the hunk text GitHub serves.
    side: str = "RIGHT"
    start_line: int | None = None
    start_side: str | None = None
    position: int | None = None
    diff_hunk: str | None = None
    # A push that changes its line makes it outdated (ghsim/outdating.py): ``line``,
    # ``start_line`` and ``position`` None, the originals kept; ``placed_on`` is the
    # commit its line was last mapped to (None: its ``commit_id``).
    outdated: bool = False
    original_line: int | None = None
    original_start_line: int | None = None
    original_position: int | None = None
    placed_on: str | None = None
    # A conversation comment on a plain issue (issue 29): ``pull_number`` is the issue's
    # number (issues and pulls share one numbering), its page an ``/issues/N`` page.
    on_issue: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "pull_number": self.pull_number,
            "body": self.body,
            "user": self.user.as_dict(),
            "created_at": iso(self.created_at),
            "updated_at": iso(self.updated_at),
        }


@dataclass
class Review:
    repo: Repo
    pull_number: int
    id: int
    state: str  # APPROVED | CHANGES_REQUESTED | COMMENTED | DISMISSED | PENDING
    body: str
    user: User
    commit_id: str
    submitted_at: datetime | None  # None while PENDING (not submitted)
    # A PENDING review's comments: drafts only its author sees, kept out of the feeds.
    drafts: list[Comment] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "state": self.state,
            "user": self.user.as_dict(),
            "commit_id": self.commit_id,
            "submitted_at": iso(self.submitted_at),
        }


@dataclass
class Reaction:
    """One reaction of ``user`` to a comment (``kind`` ``issue`` or ``review``, as the
    comment's)."""

    repo: Repo
    comment_id: int
    kind: str
    id: int
    user: User
    content: str
    created_at: datetime


@dataclass
class CheckRun:
    repo: Repo
    id: int
    head_sha: str
    name: str
    status: str  # queued | in_progress | completed
    conclusion: str | None
    started_at: datetime
    completed_at: datetime | None
    # What the Checks API sets (ghsim/checkruns.py): the App that made it (None: a test's
    # set_check_run), its external_id, output title/summary/text and every annotation.
    app_id: int | None = None
    external_id: str = ""
    output: dict[str, str] = field(default_factory=dict)
    annotations: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "head_sha": self.head_sha,
            "name": self.name,
            "status": self.status,
            "conclusion": self.conclusion,
        }


@dataclass
class CommitStatus:
    repo: Repo
    id: int
    sha: str
    context: str
    state: str  # error | failure | pending | success
    description: str | None
    target_url: str | None
    created_at: datetime
    updated_at: datetime
    creator: User | None = None  # the token's user for statuses posted over REST

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "sha": self.sha, "context": self.context, "state": self.state}


@dataclass
class Fault:
    """One injected fault; ``times=None`` keeps it until :meth:`GitHubSim.clear_faults`."""

    method: str
    path_regex: str
    status: int | None = None
    delay: float | None = None
    truncate: bool = False
    malformed: bool = False
    times: int | None = 1
    retry_after: int | None = None
    secondary: bool = False
    body: dict[str, Any] | None = None
    hits: int = 0
    # The answer-bound faults (issue 24): a body kind (``gzip_bomb``, ``huge``, ``drip``)
    # with its decoded ``size`` or ``drip_seconds`` a byte, or a redirect to ``location``.
    body_kind: str | None = None
    size: int | None = None
    drip_seconds: float = 1.0
    location: str | None = None

    def matches(self, method: str, path: str) -> bool:
        if self.times is not None and self.times <= 0:
            return False
        if self.method not in ("*", method.upper()):
            return False
        return re.search(self.path_regex, path) is not None


@dataclass
class RateBucket:
    limit: int
    remaining: int
    reset_at: int  # epoch seconds

    @property
    def used(self) -> int:
        return self.limit - self.remaining


@dataclass
class TokenInfo:
    digest: str  # sha256 of the token; the token itself is never kept
    user: User
    buckets: dict[str, RateBucket] = field(default_factory=dict)
    # An App's installation token (ghsim/apps.py): its installation, when it stops
    # working (sim clock) and the repositories it reaches (None: any).
    installation_id: int | None = None
    expires_at: datetime | None = None
    repo_keys: frozenset[str] | None = None


@dataclass(frozen=True)
class RequestRecord:
    """One served request. ``headers`` never include Authorization (or cookies)."""

    method: str
    path: str
    query: dict[str, str]
    status: int
    headers: dict[str, str]
    response_headers: dict[str, str]
    body: Any  # parsed JSON request body for writes, else None
    user: str | None  # login of the token's user, None when anonymous or rejected
    resource: str | None  # core | graphql | None (not counted: /rate_limit, 304, 401, ...)
    counted: bool
    at: datetime
