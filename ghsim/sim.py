"""``GitHubSim``: the simulator's public face: lifecycle and scenario helpers.

Repositories are real bare repositories under ``<state_dir>/repos``; every helper takes
``self.lock`` and keeps ``updated_at``, ``head.sha`` and ``refs/pull/N/head`` consistent
the way GitHub does.
"""

from __future__ import annotations

import itertools
import shutil
import threading
from collections.abc import Mapping
from typing import Self

from ghsim.bots import BotSim
from ghsim.core import (
    AUTO,
    MERGE_METHODS,
    MERGE_STATES,
    REVIEW_DECISIONS,
    REVIEW_STATES,
    Author,
    GhsimError,
)
from ghsim.facts import FactsSim
from ghsim.faults import FaultSim
from ghsim.gitops import GitError, MergeConflict
from ghsim.model import CheckRun, Comment, CommitStatus, Pull, Repo, Review, User
from ghsim.traffic import TrafficSim

Files = Mapping[str, str | bytes | None]


class GitHubSim(BotSim, FactsSim, TrafficSim, FaultSim):
    """A stateful simulated GitHub (REST + a GraphQL subset) on loopback HTTP.

    >>> with GitHubSim() as sim:                     # starts on a free port
    ...     sim.add_token("t0k")
    ...     sim.create_repo("octo/widgets")
    ...     pr = sim.open_pr("octo/widgets", "feature", {"a.txt": "hi\\n"})
    ...     sim.url                                   # http://127.0.0.1:PORT
    """

    # == lifecycle =============================================================================

    def start(self) -> Self:
        """Serve in a daemon thread; returns ``self`` (``sim = GitHubSim().start()``)."""
        from ghsim.server import make_server

        if self._server is not None:
            return self
        self._server = make_server(self, self.host, self.requested_port)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="ghsim",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; a state dir the simulator created itself is removed."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        if self._owns_state_dir:
            shutil.rmtree(self.state_dir, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise GhsimError("the simulator is not started")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (use as ``GITHUB_API_URL``)."""
        return f"http://{self.host}:{self.port}"

    def __repr__(self) -> str:
        where = self.url if self._server is not None else "stopped"
        return f"<GitHubSim {where} repos={sorted(self._repos)}>"

    # == repositories ==========================================================================

    def create_repo(
        self,
        full_name: str,
        default_branch: str = "main",
        *,
        owner_id: int | None = None,
        files: Files | None = None,
        private: bool = False,
        description: str = "",
    ) -> Repo:
        """A bare repository with one initial commit on ``default_branch``.

        A bare repository already at ``<state_dir>/repos/<owner>/<name>.git`` (a restart
        with the same ``--state-dir``) is adopted with its refs; only git state survives a
        restart, pull requests and comments live in memory.
        """
        with self.lock:
            owner_login, name = self._split(full_name)
            if full_name.lower() in self._repos:
                raise GhsimError(f"{full_name} already exists")
            owner = self.user(owner_login, owner_id)
            now = self.now()
            path = self.state_dir / "repos" / owner_login / f"{name}.git"
            if not (path / "HEAD").is_file():
                self.git.init_bare(path, default_branch)
            if self.git.rev_parse(path, f"refs/heads/{default_branch}") is None:
                initial = dict(files) if files else {"README.md": f"# {name}\n"}
                sha = self.git.commit_files(path, None, initial, "Initial commit", now)
                self.git.update_ref(path, f"refs/heads/{default_branch}", sha)
            repo = Repo(
                full_name,
                next(self._ids["repo"]),
                owner,
                default_branch,
                path,
                now,
                now,
                private=private,
                description=description,
            )
            self._register_repo(repo)
            return repo

    def fork_repo(self, repo: str, fork_full_name: str, *, owner_id: int | None = None) -> Repo:
        """A fork: a bare clone with its own id, ``fork: true`` and ``parent``."""
        with self.lock:
            base = self.repo(repo)
            owner_login, _ = self._split(fork_full_name)
            if fork_full_name.lower() in self._repos:
                raise GhsimError(f"{fork_full_name} already exists")
            owner = self.user(owner_login, owner_id)
            now = self.now()
            path = self.state_dir / "repos" / owner_login / f"{fork_full_name.split('/')[1]}.git"
            if not (path / "HEAD").is_file():
                self.git.clone_bare(base.path, path)
            fork = Repo(
                fork_full_name,
                next(self._ids["repo"]),
                owner,
                base.default_branch,
                path,
                now,
                now,
                fork=True,
                parent=base,
            )
            self._register_repo(fork)
            return fork

    def _register_repo(self, repo: Repo) -> None:
        self._repos[repo.key] = repo
        self._pulls[repo.key] = {}
        self._numbers[repo.key] = itertools.count(1)

    @staticmethod
    def _split(full_name: str) -> tuple[str, str]:
        owner, _, name = full_name.partition("/")
        if not owner or not name or "/" in name:
            raise GhsimError(f"repository names look like owner/name, got {full_name!r}")
        return owner, name

    def add_collaborator(self, repo: str, user: Author) -> User:
        """Comments and reviews by ``user`` get ``author_association: COLLABORATOR``."""
        with self.lock:
            target = self.repo(repo)
            account = self._author(user, target.owner)
            target.collaborators.add(account.id)
            return account

    def commit_to_base(
        self, repo: str, files: Files, *, branch: str | None = None, message: str | None = None
    ) -> str:
        """A new commit on ``branch`` (default: the default branch); returns its sha.

        A branch that does not exist yet starts from the default branch.
        """
        with self.lock:
            target = self.repo(repo)
            ref = branch or target.default_branch
            parent = self.git.rev_parse(target.path, f"refs/heads/{ref}")
            if parent is None:  # a new branch starts from the default branch
                parent = self.git.rev_parse(target.path, f"refs/heads/{target.default_branch}")
            now = self.now()
            sha = self.git.commit_files(target.path, parent, files, message or f"Update {ref}", now)
            self.git.update_ref(target.path, f"refs/heads/{ref}", sha)
            target.pushed_at = now
            return sha

    # == pull requests =========================================================================

    def open_pr(
        self,
        repo: str,
        head_branch: str,
        files: Files | None = None,
        *,
        base: str | None = None,
        title: str | None = None,
        body: str | None = "",
        author: Author = None,
        draft: bool = False,
        from_fork: str | None = None,
        message: str | None = None,
    ) -> Pull:
        """Commit ``files`` on ``head_branch`` (in ``from_fork`` for a fork PR) and open a PR.

        Without ``files`` an existing branch is used as it is (or a placeholder commit is
        made). ``refs/pull/N/head`` is written in the base repository either way.
        """
        with self.lock:
            target = self.repo(repo)
            base_ref = base or target.default_branch
            base_sha = self.git.rev_parse(target.path, f"refs/heads/{base_ref}")
            if base_sha is None:
                raise GhsimError(f"{repo} has no branch {base_ref}")
            head_repo = target
            if from_fork is not None:
                found = self._repos.get(from_fork.lower())
                head_repo = found if found is not None else self.fork_repo(repo, from_fork)
                if head_repo.parent is not target:
                    raise GhsimError(f"{from_fork} is not a fork of {repo}")
                self._sync_upstream(head_repo, base_ref)
            now = self.now()
            existing = self.git.rev_parse(head_repo.path, f"refs/heads/{head_branch}")
            if files is None and existing is None:
                files = {f"{head_branch.replace('/', '-')}.txt": f"work on {head_branch}\n"}
            if files is not None:
                parent = existing or base_sha
                head_sha = self.git.commit_files(
                    head_repo.path, parent, files, message or f"Work on {head_branch}", now
                )
                self.git.update_ref(head_repo.path, f"refs/heads/{head_branch}", head_sha)
                head_repo.pushed_at = now
            else:
                assert existing is not None
                head_sha = existing
            number = next(self._numbers[target.key])
            pr = Pull(
                repo=target,
                number=number,
                id=next(self._ids["pull"]),
                title=title or f"Change {head_branch}",
                body=body,
                user=self._author(author, head_repo.owner),
                head_repo=head_repo,
                head_ref=head_branch,
                head_sha=head_sha,
                base_ref=base_ref,
                created_at=now,
                updated_at=now,
                draft=draft,
            )
            self._pulls[target.key][number] = pr
            self._write_pull_ref(pr)
            return pr

    def _sync_upstream(self, fork: Repo, branch: str) -> None:
        """Make the base branch's objects available in the fork (a private ref)."""
        assert fork.parent is not None
        self.git.fetch_ref(
            fork.path, fork.parent.path, f"refs/heads/{branch}", f"refs/ghsim/upstream/{branch}"
        )

    def _write_pull_ref(self, pr: Pull) -> None:
        if pr.is_cross_repository:
            self.git.fetch_ref(pr.repo.path, pr.head_repo.path, pr.head_sha, pr.pull_ref)
        else:
            self.git.update_ref(pr.repo.path, pr.pull_ref, pr.head_sha)

    def _synchronize(self, pr: Pull, sha: str) -> None:
        """What GitHub does on ``synchronize``: new head sha, pull ref and updated_at."""
        pr.head_sha = sha
        self._write_pull_ref(pr)
        now = self.now()
        pr.updated_at = now
        pr.head_repo.pushed_at = now
        self._dismiss_stale_approvals(pr)

    def sync(self, repo: str | None = None) -> list[Pull]:
        """Notice pushes made directly to the bare repos; returns the pulls that moved."""
        with self.lock:
            targets = [self.repo(repo)] if repo else list(self._repos.values())
            moved: list[Pull] = []
            for target in targets:
                moved += self._notice_pushes(target)
            return moved

    def _notice_pushes(self, repo: Repo, only: Pull | None = None) -> list[Pull]:
        open_pulls = [
            pr
            for pr in self._pulls.get(repo.key, {}).values()
            if pr.state == "open" and (only is None or pr is only)
        ]
        heads_by_repo: dict[str, dict[str, str]] = {}
        moved = []
        for pr in open_pulls:
            key = pr.head_repo.key
            if key not in heads_by_repo:
                heads_by_repo[key] = self.git.branch_heads(pr.head_repo.path)
            tip = heads_by_repo[key].get(pr.head_ref)
            if tip is not None and tip != pr.head_sha:
                self._synchronize(pr, tip)
                moved.append(pr)
        return moved

    def push(
        self,
        repo: str,
        number: int,
        files: Files,
        *,
        message: str | None = None,
    ) -> str:
        """A new commit on the PR head (a ``synchronize``); returns the new head sha."""
        with self.lock:
            pr = self.pull(repo, number)
            parent = self._head_tip(pr)
            now = self.now()
            sha = self.git.commit_files(
                pr.head_repo.path, parent, files, message or f"Update {pr.head_ref}", now
            )
            self.git.update_ref(pr.head_repo.path, f"refs/heads/{pr.head_ref}", sha)
            self._synchronize(pr, sha)
            return sha

    def force_push(
        self, repo: str, number: int, files: Files, *, message: str | None = None
    ) -> str:
        """Rewrite the head as one new commit on top of the base tip; returns its sha."""
        with self.lock:
            pr = self.pull(repo, number)
            base_sha = self._base_tip(pr)
            if pr.is_cross_repository:
                self._sync_upstream(pr.head_repo, pr.base_ref)
            now = self.now()
            sha = self.git.commit_files(
                pr.head_repo.path, base_sha, files, message or f"Rewrite {pr.head_ref}", now
            )
            self.git.update_ref(pr.head_repo.path, f"refs/heads/{pr.head_ref}", sha)
            self._synchronize(pr, sha)
            return sha

    def merge_base_into_head(self, repo: str, number: int) -> str:
        """A real merge commit of the base branch into the head branch; returns its sha.

        Raises :class:`~ghsim.gitops.MergeConflict` when the trees conflict.
        """
        with self.lock:
            pr = self.pull(repo, number)
            base_sha = self._base_tip(pr)
            if pr.is_cross_repository:
                self._sync_upstream(pr.head_repo, pr.base_ref)
            head = self._head_tip(pr)
            message = f"Merge branch '{pr.base_ref}' into {pr.head_ref}"
            sha = self.git.merge_commit(pr.head_repo.path, head, base_sha, message, self.now())
            self.git.update_ref(pr.head_repo.path, f"refs/heads/{pr.head_ref}", sha)
            self._synchronize(pr, sha)
            return sha

    def edit_pr(
        self, repo: str, number: int, *, title: str | None = None, body: str | None = None
    ) -> Pull:
        with self.lock:
            pr = self.pull(repo, number)
            if title is not None:
                pr.title = title
            if body is not None:
                pr.body = body
            pr.updated_at = self.now()
            return pr

    def label(self, repo: str, number: int, name: str) -> Pull:
        with self.lock:
            pr = self.pull(repo, number)
            if name not in pr.repo.labels:
                pr.repo.labels[name] = next(self._ids["label"])
            if name not in pr.labels:
                pr.labels.append(name)
            pr.updated_at = self.now()
            return pr

    def unlabel(self, repo: str, number: int, name: str) -> Pull:
        with self.lock:
            pr = self.pull(repo, number)
            if name in pr.labels:
                pr.labels.remove(name)
            pr.updated_at = self.now()
            return pr

    def set_draft(self, repo: str, number: int, draft: bool = True) -> Pull:
        with self.lock:
            pr = self.pull(repo, number)
            pr.draft = draft
            if draft:  # as on GitHub: converting to draft disables auto-merge
                pr.auto_merge = None
            pr.updated_at = self.now()
            return pr

    def set_auto_merge(
        self, repo: str, number: int, method: str | None = "squash", by: Author = None
    ) -> Pull:
        """Arm auto-merge with ``method`` (merge|squash|rebase) or disarm it with ``None``.
        A draft cannot be armed (GitHub refuses it)."""
        with self.lock:
            pr = self.pull(repo, number)
            if method is None:
                pr.auto_merge = None
            else:
                if pr.draft:
                    raise GhsimError(f"{repo}#{number} is a draft: auto-merge cannot be armed")
                if method not in MERGE_METHODS:
                    raise GhsimError(f"merge method must be one of {sorted(MERGE_METHODS)}")
                pr.auto_merge = {
                    "method": method,
                    "enabled_by": self._author(by, pr.repo.owner),
                    "enabled_at": self.now(),
                }
            pr.updated_at = self.now()
            return pr

    def set_review_decision(self, repo: str, number: int, decision: str | None) -> Pull:
        """Override GraphQL ``reviewDecision`` (``"auto"`` computes it from reviews again)."""
        with self.lock:
            if decision != AUTO and decision not in REVIEW_DECISIONS:
                raise GhsimError(f"review decision must be one of {REVIEW_DECISIONS} or 'auto'")
            pr = self.pull(repo, number)
            pr.review_decision = decision
            return pr

    def set_merge_state(self, repo: str, number: int, status: str | None) -> Pull:
        """Override ``mergeStateStatus`` / ``mergeable_state`` (``"auto"``: computed)."""
        with self.lock:
            if status != AUTO and status not in MERGE_STATES:
                raise GhsimError(f"merge state must be one of {sorted(MERGE_STATES)} or 'auto'")
            pr = self.pull(repo, number)
            pr.merge_state = status
            return pr

    def close(self, repo: str, number: int) -> Pull:
        with self.lock:
            pr = self.pull(repo, number)
            now = self.now()
            pr.state, pr.closed_at, pr.updated_at = "closed", now, now
            return pr

    def reopen(self, repo: str, number: int) -> Pull:
        with self.lock:
            pr = self.pull(repo, number)
            if pr.merged:
                raise GhsimError("a merged pull request cannot be reopened")
            pr.state, pr.closed_at, pr.updated_at = "open", None, self.now()
            return pr

    def merge(self, repo: str, number: int, *, method: str = "merge", by: Author = None) -> str:
        """Merge into the base branch (a real merge, or a squash commit); returns its sha."""
        with self.lock:
            pr = self.pull(repo, number)
            if pr.state != "open":
                raise GhsimError(f"{repo}#{number} is not open")
            if method not in MERGE_METHODS:
                raise GhsimError(f"merge method must be one of {sorted(MERGE_METHODS)}")
            self._notice_pushes(pr.repo, only=pr)
            base_sha = self._base_tip(pr)
            now = self.now()
            message = f"Merge pull request #{number} from {pr.head_repo.owner.login}/{pr.head_ref}"
            if method != "merge":
                message = f"{pr.title} (#{number})"
            sha = self.git.merge_commit(
                pr.repo.path, base_sha, pr.head_sha, message, now, squash=method != "merge"
            )
            self.git.update_ref(pr.repo.path, f"refs/heads/{pr.base_ref}", sha)
            pr.repo.pushed_at = now
            pr.state, pr.closed_at, pr.merged_at, pr.updated_at = "closed", now, now, now
            pr.merge_commit_sha = sha
            pr.merged_by = self._author(by, pr.repo.owner)
            pr.auto_merge = None
            return sha

    # == conversation ==========================================================================

    def comment(
        self,
        repo: str,
        number: int,
        body: str,
        author: Author = None,
        kind: str = "issue",
        path: str | None = None,
        line: int | None = None,
        in_reply_to: int | None = None,
    ) -> Comment:
        """An issue comment, or a review comment (``kind="review"``) on ``path``/``line``.

        A review comment comes with a COMMENTED review, as on GitHub.
        """
        with self.lock:
            if kind not in ("issue", "review"):
                raise GhsimError("kind is 'issue' or 'review'")
            pr = self.pull(repo, number)
            user = self._author(author, pr.repo.owner)
            now = self.now()
            review_id = None
            if kind == "review":
                review_id = self.review(repo, number, "COMMENTED", author=user, body="").id
            created = Comment(
                repo=pr.repo,
                pull_number=number,
                id=next(self._ids["comment"]),
                kind=kind,
                body=body,
                user=user,
                created_at=now,
                updated_at=now,
                path=(path or "README.md") if kind == "review" else None,
                line=(line or 1) if kind == "review" else None,
                commit_id=pr.head_sha if kind == "review" else None,
                review_id=review_id,
                in_reply_to_id=in_reply_to,
            )
            self._comments.append(created)
            pr.updated_at = now
            self._answer_triggers(created)  # scripted review bots (ghsim/bots.py)
            return created

    def edit_comment(self, repo: str, comment_id: int, body: str) -> Comment:
        """Change a comment's body; its ``updated_at`` moves (the PR's does not)."""
        with self.lock:
            c = self.get_comment(repo, comment_id)
            c.body = body
            c.updated_at = self.now()
            return c

    def review(
        self,
        repo: str,
        number: int,
        state: str,
        author: Author = None,
        body: str = "",
        commit_id: str | None = None,
    ) -> Review:
        """Submit a review (APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED)."""
        with self.lock:
            state = state.upper()
            if state not in REVIEW_STATES:
                raise GhsimError(f"review state must be one of {sorted(REVIEW_STATES)}")
            pr = self.pull(repo, number)
            now = self.now()
            created = Review(
                repo=pr.repo,
                pull_number=number,
                id=next(self._ids["review"]),
                state=state,
                body=body,
                user=self._author(author, pr.repo.owner),
                commit_id=commit_id or pr.head_sha,
                submitted_at=now,
            )
            self._reviews.append(created)
            pr.updated_at = now
            return created

    # == checks and statuses ===================================================================

    def set_check_run(
        self,
        repo: str,
        sha: str,
        name: str,
        status: str = "completed",
        conclusion: str | None = "success",
    ) -> CheckRun:
        """Create or update the check run ``name`` on ``sha`` (a ref resolves to a sha)."""
        with self.lock:
            target = self.repo(repo)
            sha = self.resolve(repo, sha)
            now = self.now()
            conclusion = conclusion if status == "completed" else None
            for run in reversed(self._check_runs):
                if run.repo is target and run.head_sha == sha and run.name == name:
                    run.status, run.conclusion = status, conclusion
                    run.completed_at = now if status == "completed" else None
                    return run
            run = CheckRun(
                target,
                next(self._ids["check"]),
                sha,
                name,
                status,
                conclusion,
                now,
                now if status == "completed" else None,
            )
            self._check_runs.append(run)
            return run

    def set_status(
        self,
        repo: str,
        sha: str,
        context: str,
        state: str = "success",
        description: str | None = None,
        target_url: str | None = None,
    ) -> CommitStatus:
        """Add a commit status (error|failure|pending|success); the latest per context wins."""
        with self.lock:
            target = self.repo(repo)
            sha = self.resolve(repo, sha)
            now = self.now()
            created = CommitStatus(
                target,
                next(self._ids["status"]),
                sha,
                context,
                state,
                description,
                target_url,
                now,
                now,
            )
            self._statuses.append(created)
            return created


__all__ = ["AUTO", "GhsimError", "GitError", "GitHubSim", "MergeConflict"]
