"""Pull request helpers of :class:`ghsim.sim.GitHubSim` that move git: open, push, sync, merge.

Every helper takes ``self.lock`` and keeps ``updated_at``, ``head.sha`` and
``refs/pull/N/head`` consistent the way GitHub does (a ``synchronize`` also dismisses
stale approvals under branch protection, ``ghsim/protection.py``).
"""

from __future__ import annotations

from ghsim.core import MERGE_METHODS, Author, GhsimError
from ghsim.model import Pull, Repo
from ghsim.protection import ProtectionSim
from ghsim.repos import Files, RepoSim


class PullSim(RepoSim, ProtectionSim):
    """The git side of pull requests (one of the bases of :class:`ghsim.sim.GitHubSim`)."""

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
        self._after_synchronize(pr)

    def _after_synchronize(self, pr: Pull) -> None:
        """What else a push does (line comments moved or outdated: ghsim/outdating.py)."""

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
            message = message or f"Update {pr.head_ref}"
            return self._commit_head(pr, self._head_tip(pr), files, message)

    def force_push(
        self, repo: str, number: int, files: Files, *, message: str | None = None
    ) -> str:
        """Rewrite the head as one new commit on top of the base tip; returns its sha."""
        with self.lock:
            pr = self.pull(repo, number)
            base_sha = self._base_tip(pr)
            if pr.is_cross_repository:
                self._sync_upstream(pr.head_repo, pr.base_ref)
            return self._commit_head(pr, base_sha, files, message or f"Rewrite {pr.head_ref}")

    def _commit_head(self, pr: Pull, parent: str, files: Files, message: str) -> str:
        """One commit of ``files`` on ``parent`` becomes the PR's head (a synchronize)."""
        sha = self.git.commit_files(pr.head_repo.path, parent, files, message, self.now())
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
