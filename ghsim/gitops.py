"""Git plumbing for the simulator: bare repositories, commits without a worktree, merges.

Every git process runs with ``GIT_CONFIG_NOSYSTEM=1``, ``HOME`` pointing at a private
directory and explicit ``user.name``/``user.email``, so the host's git configuration never
leaks in. Commit dates come from the simulator clock.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

ZERO_SHA = "0" * 40
BOT_NAME = "ghsim"
BOT_EMAIL = "ghsim@example.invalid"


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", re.MULTILINE)


@dataclass(frozen=True)
class FileChange:
    filename: str
    status: str  # added | modified | removed | changed
    additions: int
    deletions: int
    sha: str | None = None  # the blob on the head side (the base side for a removed file)

    @property
    def changes(self) -> int:
        return self.additions + self.deletions


class GitError(RuntimeError):
    """A git command failed; the message carries argv (never a token) and stderr."""


class MergeConflict(GitError):
    """A real merge of the two trees had conflicts."""


class Git:
    """Runs git against bare repositories with a hermetic environment."""

    def __init__(self, home: Path) -> None:
        home.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env.update(
            {
                "HOME": str(home),
                "XDG_CONFIG_HOME": str(home / ".config"),
                "GIT_CONFIG_NOSYSTEM": "1",
                "GIT_TERMINAL_PROMPT": "0",
                "LC_ALL": "C",
            }
        )
        self.env = env

    # -- low level -------------------------------------------------------------------------

    def run(
        self,
        repo: Path | None,
        *args: str,
        input: str | None = None,
        env: Mapping[str, str] | None = None,
        check: bool = True,
    ) -> subprocess.CompletedProcess[str]:
        argv = ["git", "-c", f"user.name={BOT_NAME}", "-c", f"user.email={BOT_EMAIL}"]
        if repo is not None:
            argv += ["-C", str(repo)]
        argv += list(args)
        full_env = dict(self.env)
        if env:
            full_env.update(env)
        proc = subprocess.run(
            argv,
            input=input,
            capture_output=True,
            text=True,
            env=full_env,
            check=False,
        )
        if check and proc.returncode != 0:
            raise GitError(
                f"{' '.join(argv[5:])} failed ({proc.returncode}): {proc.stderr.strip()}"
            )
        return proc

    def out(
        self,
        repo: Path | None,
        *args: str,
        input: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> str:
        return self.run(repo, *args, input=input, env=env).stdout.strip()

    # -- repositories ----------------------------------------------------------------------

    def init_bare(self, path: Path, default_branch: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.run(None, "init", "--quiet", "--bare", f"--initial-branch={default_branch}", str(path))

    def clone_bare(self, source: Path, dest: Path) -> None:
        dest.parent.mkdir(parents=True, exist_ok=True)
        self.run(None, "clone", "--quiet", "--bare", "--no-hardlinks", str(source), str(dest))

    def rev_parse(self, repo: Path, ref: str) -> str | None:
        proc = self.run(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
        return proc.stdout.strip() if proc.returncode == 0 else None

    def branch_heads(self, repo: Path) -> dict[str, str]:
        """``{branch: sha}`` for every ``refs/heads/*`` in one process."""
        text = self.out(repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/")
        heads: dict[str, str] = {}
        for line in text.splitlines():
            ref, _, sha = line.partition(" ")
            heads[ref.removeprefix("refs/heads/")] = sha
        return heads

    def update_ref(self, repo: Path, ref: str, sha: str) -> None:
        self.run(repo, "update-ref", ref, sha)

    def fetch_ref(self, repo: Path, source: Path, src_ref: str, dst_ref: str) -> None:
        """Copy ``src_ref`` of ``source`` to ``dst_ref`` in ``repo`` (forced)."""
        self.run(repo, "fetch", "--quiet", "--no-tags", str(source), f"+{src_ref}:{dst_ref}")

    # -- commits ---------------------------------------------------------------------------

    def _date_env(self, when: datetime) -> dict[str, str]:
        stamp = f"{int(when.timestamp())} +0000"
        return {"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}

    def _identity_env(self, name: str, email: str) -> dict[str, str]:
        return {
            "GIT_AUTHOR_NAME": name,
            "GIT_AUTHOR_EMAIL": email,
            "GIT_COMMITTER_NAME": name,
            "GIT_COMMITTER_EMAIL": email,
        }

    def tree_with_files(
        self, repo: Path, parent: str | None, files: Mapping[str, str | bytes | None]
    ) -> str:
        """The tree of ``parent`` with ``files`` written (``None`` deletes a path)."""
        index = repo / f"ghsim-index-{os.getpid()}-{id(files)}"
        env = {"GIT_INDEX_FILE": str(index)}
        try:
            if parent:
                self.run(repo, "read-tree", parent, env=env)
            else:
                self.run(repo, "read-tree", "--empty", env=env)
            lines = []
            for path, content in files.items():
                if content is None:
                    lines.append(f"0 {ZERO_SHA}\t{path}")
                    continue
                data = content.encode() if isinstance(content, str) else content
                blob = (
                    subprocess.run(
                        ["git", "-C", str(repo), "hash-object", "-w", "--stdin"],
                        input=data,
                        capture_output=True,
                        env=self.env,
                        check=True,
                    )
                    .stdout.decode()
                    .strip()
                )
                lines.append(f"100644 {blob}\t{path}")
            if lines:
                self.run(
                    repo, "update-index", "--index-info", input="\n".join(lines) + "\n", env=env
                )
            return self.out(repo, "write-tree", env=env)
        finally:
            index.unlink(missing_ok=True)

    def commit_tree(
        self,
        repo: Path,
        tree: str,
        parents: Sequence[str],
        message: str,
        when: datetime,
        author: tuple[str, str] = (BOT_NAME, BOT_EMAIL),
    ) -> str:
        args = ["commit-tree", tree]
        for parent in parents:
            args += ["-p", parent]
        env = {**self._date_env(when), **self._identity_env(*author)}
        return self.out(repo, *args, input=message + "\n", env=env)

    def commit_files(
        self,
        repo: Path,
        parent: str | None,
        files: Mapping[str, str | bytes | None],
        message: str,
        when: datetime,
        author: tuple[str, str] = (BOT_NAME, BOT_EMAIL),
    ) -> str:
        tree = self.tree_with_files(repo, parent, files)
        return self.commit_tree(repo, tree, [parent] if parent else [], message, when, author)

    def merge_commit(
        self,
        repo: Path,
        ours: str,
        theirs: str,
        message: str,
        when: datetime,
        squash: bool = False,
        author: tuple[str, str] = (BOT_NAME, BOT_EMAIL),
    ) -> str:
        """A real merge of ``theirs`` into ``ours`` (``git merge-tree --write-tree``)."""
        tree = self.merge_tree(repo, ours, theirs)
        if tree is None:
            raise MergeConflict(f"merging {theirs[:12]} into {ours[:12]} conflicts")
        parents = [ours] if squash else [ours, theirs]
        return self.commit_tree(repo, tree, parents, message, when, author)

    def merge_tree(self, repo: Path, ours: str, theirs: str) -> str | None:
        """The merged tree, or ``None`` when the merge conflicts."""
        proc = self.run(repo, "merge-tree", "--write-tree", ours, theirs, check=False)
        if proc.returncode == 0:
            return proc.stdout.split()[0]
        if proc.returncode == 1:
            return None
        raise GitError(f"merge-tree failed: {proc.stderr.strip()}")

    # -- comparisons -----------------------------------------------------------------------

    def left_right(self, repo: Path, base: str, head: str) -> tuple[int, int]:
        """``(behind_by, ahead_by)`` of ``head`` relative to ``base``."""
        text = self.out(repo, "rev-list", "--left-right", "--count", f"{base}...{head}")
        left, right = text.split()
        return int(left), int(right)

    def merge_base(self, repo: Path, a: str, b: str) -> str | None:
        proc = self.run(repo, "merge-base", a, b, check=False)
        return proc.stdout.strip() if proc.returncode == 0 else None

    def log(self, repo: Path, spec: str, limit: int = 250) -> list[dict[str, str]]:
        fmt = "%H%x00%P%x00%T%x00%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%cI%x00%B%x1e"
        text = self.run(
            repo, "log", "--reverse", f"--max-count={limit}", f"--format={fmt}", spec
        ).stdout
        keys = ["sha", "parents", "tree", "an", "ae", "ad", "cn", "ce", "cd", "message"]
        entries = []
        for record in text.split("\x1e"):
            record = record.strip("\n")
            if not record:
                continue
            entries.append(dict(zip(keys, record.split("\x00"), strict=True)))
        return entries

    def hunk_lines(self, repo: Path, base: str, head: str, path: str, side: str) -> set[int]:
        """The line numbers of ``path`` that the ``base..head`` diff shows (its hunks with
        GitHub's three lines of context) on ``side``: RIGHT the head's, LEFT the base's."""
        text = self.out(repo, "diff", "--no-renames", "-U3", base, head, "--", path)
        shown: set[int] = set()
        for match in _HUNK.finditer(text):
            start, count = (match[3], match[4]) if side == "RIGHT" else (match[1], match[2])
            first = int(start)
            shown.update(range(first, first + (1 if count is None else int(count))))
        return shown

    def file_diff(self, repo: Path, base: str, head: str, path: str) -> str:
        """``git diff -U3 base head -- path`` (GitHub's three lines of context; no renames)."""
        return self.run(repo, "diff", "--no-renames", "-U3", base, head, "--", path).stdout

    def commits_between(self, repo: Path, base: str, head: str) -> list[str]:
        """The shas reachable from ``head`` and not from ``base`` (a pull's commits)."""
        return self.out(repo, "rev-list", f"{base}..{head}").split()

    def file_at(self, repo: Path, sha: str, path: str) -> bytes | None:
        """The content of ``path`` at commit ``sha``, or None when it has no such file."""
        proc = subprocess.run(
            ["git", "-C", str(repo), "show", f"{sha}:{path}"],
            capture_output=True,
            env=self.env,
            check=False,
        )
        return proc.stdout if proc.returncode == 0 else None

    def diff_files(self, repo: Path, base: str, head: str) -> list[FileChange]:
        """Per-file status, blob, additions and deletions of ``base..head`` (no renames)."""
        raw = self.out(repo, "diff", "--no-renames", "--raw", "--no-abbrev", base, head)
        numstat = self.out(repo, "diff", "--no-renames", "--numstat", base, head)
        counts: dict[str, tuple[int, int]] = {}
        for line in numstat.splitlines():
            added, deleted, path = line.split("\t", 2)
            counts[path] = (
                0 if added == "-" else int(added),
                0 if deleted == "-" else int(deleted),
            )
        names = {"A": "added", "M": "modified", "D": "removed", "T": "changed"}
        files = []
        for line in raw.splitlines():  # ":100644 100644 <old blob> <new blob> M\tpath"
            meta, path = line.split("\t", 1)
            _, _, old_blob, new_blob, code = meta.split(" ")
            additions, deletions = counts.get(path, (0, 0))
            status = names.get(code[0], "modified")
            blob = old_blob if status == "removed" else new_blob
            files.append(FileChange(path, status, additions, deletions, blob))
        return files
