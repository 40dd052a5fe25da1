"""``SimCore``: the simulator's state, clock, users, tokens and the lookups into that state.

The rest of :class:`ghsim.sim.GitHubSim` is built on it, one concern a module: rate limits
and the request log (``ghsim/traffic.py``), injected faults (``ghsim/faults.py``), the
facts the routes derive from state and git (``ghsim/facts.py``), and the scenario helpers
(repositories, pulls, conversation, checks). All state is guarded by ``self.lock`` (an
``RLock``).
"""

from __future__ import annotations

import hashlib
import itertools
import tempfile
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ghsim.gitops import Git
from ghsim.model import (
    CheckRun,
    Comment,
    CommitStatus,
    Fault,
    Pull,
    RateBucket,
    Reaction,
    Repo,
    RequestRecord,
    Review,
    TokenInfo,
    User,
)

Author = tuple[str, int] | list[Any] | str | User | None
AUTO = "auto"
REVIEW_STATES = frozenset({"APPROVED", "CHANGES_REQUESTED", "COMMENTED", "DISMISSED", "PENDING"})
REVIEW_DECISIONS = frozenset({"APPROVED", "CHANGES_REQUESTED", "REVIEW_REQUIRED", None})
MERGE_STATES = frozenset("BEHIND BLOCKED CLEAN DIRTY DRAFT HAS_HOOKS UNKNOWN UNSTABLE".split())
MERGE_METHODS = frozenset({"merge", "squash", "rebase"})


class GhsimError(RuntimeError):
    """A helper was called with something the simulator does not know or cannot do."""


class Unprocessable(GhsimError):
    """GitHub's 422: ``message`` and its ``errors`` (strings, or objects with ``code``), the
    answer a route gives when a helper it calls refuses the request (issue 27)."""

    def __init__(self, message: str, errors: list[Any] | None = None, doc: str = "") -> None:
        super().__init__(message if not errors else f"{message}: {errors}")
        self.message = message
        self.errors = errors
        self.doc = doc


def _real_clock() -> datetime:
    return datetime.now(UTC)


def token_digest(token: str) -> str:
    """Tokens are kept only as this digest, never as text."""
    return hashlib.sha256(token.encode()).hexdigest()


class SimCore:
    """State and bookkeeping; see :class:`ghsim.sim.GitHubSim` for the full API."""

    def __init__(
        self,
        state_dir: str | Path | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        anonymous: bool = False,
        core_limit: int = 5000,
        graphql_limit: int = 5000,
        anonymous_limit: int = 60,
        clock: Callable[[], datetime] | None = None,
        admin_rpc: bool = True,
    ) -> None:
        self.lock = threading.RLock()
        self._owns_state_dir = state_dir is None
        self.state_dir = Path(tempfile.mkdtemp(prefix="ghsim-") if state_dir is None else state_dir)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.git = Git(self.state_dir / "home")
        self.host = host
        self.requested_port = port
        self.anonymous = anonymous
        self.core_limit = core_limit
        self.graphql_limit = graphql_limit
        self.anonymous_limit = anonymous_limit
        self.admin_rpc = admin_rpc
        self.clock: Callable[[], datetime] = clock or _real_clock
        self._offset = timedelta(0)

        self._users: dict[int, User] = {}
        self._repos: dict[str, Repo] = {}
        self._pulls: dict[str, dict[int, Pull]] = {}
        self._issues: dict[str, set[int]] = {}  # plain issues' numbers, per repository
        self._numbers: dict[str, Iterator[int]] = {}
        self._comments: list[Comment] = []
        self._reviews: list[Review] = []
        self._check_runs: list[CheckRun] = []
        self._statuses: list[CommitStatus] = []
        self._reactions: list[Reaction] = []
        self._resolved_threads: set[int] = set()  # root review comment ids
        self._minimized: dict[int, str] = {}  # comment id -> classifier
        self._tokens: dict[str, TokenInfo] = {}
        self._anonymous_buckets: dict[str, RateBucket] = {}
        self._faults: list[Fault] = []
        self._requests: list[RequestRecord] = []
        self._ids = {
            "user": itertools.count(1001),
            "repo": itertools.count(100001),
            "pull": itertools.count(2000001),
            "comment": itertools.count(3000001),
            "review": itertools.count(4000001),
            "check": itertools.count(5000001),
            "status": itertools.count(6000001),
            "label": itertools.count(7000001),
            "reaction": itertools.count(8000001),
        }
        self._server: Any = None
        self._thread: threading.Thread | None = None

    # == clock =================================================================================

    def now(self) -> datetime:
        """The simulator time: aware UTC, whole seconds."""
        value = self.clock() + self._offset
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value.astimezone(UTC).replace(microsecond=0)

    def set_time(self, when: datetime) -> None:
        """Freeze the clock at ``when`` (naive means UTC); :meth:`advance` moves it."""
        fixed = when if when.tzinfo else when.replace(tzinfo=UTC)
        self.clock = lambda: fixed
        self._offset = timedelta(0)

    def advance(self, seconds: float) -> datetime:
        """Move the clock forward (frozen or real); returns the new :meth:`now`."""
        self._offset += timedelta(seconds=seconds)
        return self.now()

    def use_real_time(self) -> None:
        self.clock = _real_clock
        self._offset = timedelta(0)

    # == users and tokens ======================================================================

    def user(self, login: str, id: int | None = None, type: str | None = None) -> User:
        """Find or register a user. With ``id``, an existing user of that id is renamed."""
        with self.lock:
            kind = type or ("Bot" if login.endswith("[bot]") else "User")
            if id is not None:
                existing = self._users.get(id)
                if existing is not None:
                    existing.login = login
                    if type:
                        existing.type = type
                    return existing
                user = User(login, id, kind)
                self._users[id] = user
                return user
            for candidate in reversed(list(self._users.values())):
                if candidate.login.lower() == login.lower():
                    return candidate
            user = User(login, next(self._ids["user"]), kind)
            self._users[user.id] = user
            return user

    def _author(self, author: Author, default: User) -> User:
        if author is None:
            return default
        if isinstance(author, User):
            return author
        if isinstance(author, str):
            return self.user(author)
        login, user_id = author[0], author[1]
        return self.user(str(login), int(user_id))

    def add_token(self, token: str, user: Author = None) -> User:
        """Register a token (kept only as a sha256 digest) acting as ``user``.

        ``user`` is ``("login", id)``, a login or a :class:`User`; default ``ghsim-user``.
        """
        with self.lock:
            account = self._author(user, self.user("ghsim-user"))
            self._tokens[token_digest(token)] = TokenInfo(token_digest(token), account)
            return account

    def remove_token(self, token: str) -> None:
        with self.lock:
            self._tokens.pop(token_digest(token), None)

    # == lookups ===============================================================================

    def repo(self, full_name: str) -> Repo:
        with self.lock:
            found = self._repos.get(full_name.lower())
            if found is None:
                raise GhsimError(f"unknown repository {full_name}")
            return found

    def find_repo(self, owner: str, name: str) -> Repo | None:
        with self.lock:
            return self._repos.get(f"{owner}/{name}".lower())

    def repo_path(self, full_name: str) -> Path:
        """The bare repository, usable as a git remote (``git clone <path>``)."""
        return self.repo(full_name).path

    def forks_of(self, repo: Repo) -> list[Repo]:
        return [r for r in self._repos.values() if r.parent is repo]

    def branch_sha(self, repo: str, branch: str) -> str | None:
        with self.lock:
            return self.git.rev_parse(self.repo(repo).path, f"refs/heads/{branch}")

    def pull(self, repo: str, number: int) -> Pull:
        """The live record of a pull request (read it; change it through the helpers)."""
        with self.lock:
            found = self._pulls.get(repo.lower(), {}).get(number)
            if found is None:
                raise GhsimError(f"unknown pull request {repo}#{number}")
            return found

    def pulls(self, repo: str) -> list[Pull]:
        with self.lock:
            return list(self._pulls[self.repo(repo).key].values())

    def get_comment(self, repo: str, comment_id: int) -> Comment:
        with self.lock:
            target = self.repo(repo)
            for c in self._comments:
                if c.id == comment_id and c.repo is target:
                    return c
            raise GhsimError(f"unknown comment {comment_id} in {repo}")

    def comments(self, repo: str, kind: str | None = None) -> list[Comment]:
        with self.lock:
            target = self.repo(repo)
            return [
                c for c in self._comments if c.repo is target and (kind is None or c.kind == kind)
            ]

    def reviews(self, repo: str, number: int) -> list[Review]:
        with self.lock:
            pr = self.pull(repo, number)
            return [r for r in self._reviews if r.repo is pr.repo and r.pull_number == number]

    def resolve(self, repo: str, ref: str) -> str:
        """A sha, branch, tag or ``refs/pull/N/head`` of ``repo`` as a commit sha."""
        with self.lock:
            sha = self.git.rev_parse(self.repo(repo).path, ref)
            if sha is None:
                raise GhsimError(f"{repo} has no commit {ref}")
            return sha

    def thread_resolved(self, repo: str, comment_id: int) -> bool:
        """Whether the review thread rooted at (or containing) ``comment_id`` is resolved."""
        with self.lock:
            c = self.get_comment(repo, comment_id)
            return (c.in_reply_to_id or c.id) in self._resolved_threads

    def minimized(self, repo: str, comment_id: int) -> str | None:
        """The ``minimizeComment`` classifier of a comment (None: not minimized)."""
        with self.lock:
            return self._minimized.get(self.get_comment(repo, comment_id).id)

    def check_runs_for(self, repo: Repo, sha: str) -> list[CheckRun]:
        return [r for r in self._check_runs if r.repo is repo and r.head_sha == sha]

    def statuses_for(self, repo: Repo, sha: str) -> list[CommitStatus]:
        latest: dict[str, CommitStatus] = {}
        for s in self._statuses:
            if s.repo is repo and s.sha == sha:
                latest[s.context.lower()] = s  # GitHub: the context is case-insensitive
        return sorted(latest.values(), key=lambda s: s.id, reverse=True)

    def _head_tip(self, pr: Pull) -> str:
        tip = self.git.rev_parse(pr.head_repo.path, f"refs/heads/{pr.head_ref}")
        return tip or pr.head_sha

    def _base_tip(self, pr: Pull) -> str:
        tip = self.git.rev_parse(pr.repo.path, f"refs/heads/{pr.base_ref}")
        if tip is None:
            raise GhsimError(f"{pr.repo.full_name} has no branch {pr.base_ref}")
        return tip
