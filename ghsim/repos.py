"""Repository helpers of :class:`ghsim.sim.GitHubSim`: create, fork, collaborators, commits.

Repositories are real bare repositories under ``<state_dir>/repos``.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

from ghsim.core import Author, GhsimError, SimCore
from ghsim.model import Repo, User

Files = Mapping[str, str | bytes | None]


class RepoSim(SimCore):
    """The repository helpers (one of the bases of :class:`ghsim.sim.GitHubSim`)."""

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
