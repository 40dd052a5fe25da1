"""What kdev reads from git (refs, diffs, patch-ids, files), exports and worktrees."""

from __future__ import annotations

import shutil
from pathlib import Path

from wrapper.errors import ConfigError, FetchError, WorktreeError
from wrapper.git.export import EXPORT_CONFIG_ARGS, BlobReader, ExportReport, write_tree
from wrapper.git.facts import GitFacts
from wrapper.git.process import (
    FULL_SHA_RE,
    check_option_safe,
    check_remote_safe,
    last_line,
    redact_credentials,
)
from wrapper.git.publish import GitPublish


class Git(GitPublish, GitFacts):
    """git, run against ``repo_dir`` (a checkout or a bare repository).

    ``env`` is the base environment (default: this process's); the forced variables are
    applied on top and the repository-redirecting ones removed. ``timeout`` bounds each
    call in seconds.
    """

    def remote_url(self, name: str = "origin") -> str:
        """The URL of remote ``name``, with any ``user:token@`` credentials redacted."""
        check_option_safe(name, "remote")
        result = self._run(["remote", "get-url", name], ok_codes=(0, 2, 128))
        url = result.stdout.decode("utf-8", "replace").strip()
        if result.returncode != 0 or not url:
            raise ConfigError(
                f"remote {name!r} is not configured in {self.repo_dir}: {last_line(result.stderr)}",
                "remote_missing",
            )
        return redact_credentials(url)

    def fetch(self, remote: str, refspecs: list[str]) -> None:
        """``git fetch --no-tags`` of ``refspecs`` from ``remote`` in one call.

        Raises ``FetchError(..., "fetch_failed")`` with git's last stderr line.
        """
        check_remote_safe(remote)
        if not refspecs:
            raise ConfigError("fetch needs at least one refspec", "invalid_ref")
        for refspec in refspecs:
            check_option_safe(refspec, "refspec")
        with self.checkout_lock():
            self._run(
                [
                    "fetch",
                    "--no-tags",
                    "--no-recurse-submodules",
                    "--no-write-fetch-head",
                    "--quiet",
                    remote,
                    *refspecs,
                ],
                error=FetchError,
                reason="fetch_failed",
                what=f"git fetch {remote}",
            )

    def diff(self, base_ref: str, head_ref: str) -> bytes:
        """``git diff base...head`` (changes on head since the merge base), as bytes."""
        check_option_safe(base_ref, "ref")
        check_option_safe(head_ref, "ref")
        result = self._run(
            [
                "diff",
                "--no-ext-diff",
                "--no-color",
                "--no-textconv",
                f"{base_ref}...{head_ref}",
                "--",
            ],
            to_file=True,
        )
        return result.stdout

    def patch_id(self, diff: bytes) -> str | None:
        """First field of ``git patch-id --verbatim`` fed ``diff`` (whitespace-significant,
        file order independent); None for an empty diff. ``diff`` is never copied (a
        stripped copy of a 50 MB diff was one of a review's peaks, D111)."""
        if not diff or diff.isspace():
            return None
        result = self._run(["patch-id", "--verbatim"], stdin=diff)
        fields = result.stdout.decode("ascii", "replace").split()
        return fields[0] if fields else None

    def merge_base(self, a: str, b: str) -> str | None:
        """The best common ancestor of ``a`` and ``b``, or None when they share no history."""
        check_option_safe(a, "ref")
        check_option_safe(b, "ref")
        result = self._run(["merge-base", a, b], ok_codes=(0, 1))
        sha = result.stdout.decode("ascii", "replace").strip()
        return sha if result.returncode == 0 and sha else None

    def changed_files(self, base_ref: str, head_ref: str) -> list[str]:
        """The paths ``git diff --name-only base...head`` lists (renames as delete+add)."""
        check_option_safe(base_ref, "ref")
        check_option_safe(head_ref, "ref")
        result = self._run(
            ["diff", "--name-only", "-z", "--no-renames", f"{base_ref}...{head_ref}", "--"]
        )
        return [p for p in result.stdout.decode("utf-8", "replace").split("\0") if p]

    def files_named(self, ref: str, name: str) -> dict[str, str]:
        """Every file called ``name`` in the tree of ``ref``: path -> text (UTF-8,
        undecodable bytes replaced). Read from git objects, never from a worktree."""
        check_option_safe(ref, "ref")
        listing = self._run(["ls-tree", "-r", "-z", "--name-only", ref, "--"])
        paths = [
            p
            for p in listing.stdout.decode("utf-8", "replace").split("\0")
            if p and p.rpartition("/")[2] == name
        ]
        found: dict[str, str] = {}
        for path in paths:
            blob = self._run(["cat-file", "blob", f"{ref}:{path}"]).stdout
            found[path] = blob.decode("utf-8", "replace")
        return found

    def export_tree(self, ref: str, dest: Path) -> ExportReport:
        """Writes the tree of ``ref`` to the new directory ``dest`` from git's objects
        (``ls-tree`` and one ``cat-file --batch``, :mod:`wrapper.git.export`): the blobs
        byte for byte, no attribute applied, no ``.git``, nothing linking back to this
        repository, no link leading out of ``dest``; unsafe entries are skipped.

        Raises ``WorktreeError(..., "worktree_failed")``.
        """
        check_option_safe(ref, "ref")
        found = self._run(
            ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{tree}}"],
            error=WorktreeError,
            reason="worktree_failed",
            what=f"git rev-parse {ref}",
        )
        tree = found.stdout.decode("ascii", "replace").strip()
        if not FULL_SHA_RE.fullmatch(tree):
            raise WorktreeError(f"git rev-parse {ref}: not a tree", "worktree_failed")
        listing = self._run(
            [*EXPORT_CONFIG_ARGS, "ls-tree", "-r", "-z", "--full-tree", tree],
            error=WorktreeError,
            reason="worktree_failed",
            what="git ls-tree",
        ).stdout
        with self._stream(
            [*EXPORT_CONFIG_ARGS, "cat-file", "--batch"],
            error=WorktreeError,
            reason="worktree_failed",
            what="git cat-file",
        ) as (requests, answers):
            return write_tree(listing, BlobReader(requests, answers), dest)

    def worktree_add(self, path: Path, ref: str) -> None:
        """Checks ``ref`` out, detached, at ``path``, sharing this repository's objects.

        Raises ``WorktreeError(..., "worktree_failed")``.
        """
        check_option_safe(ref, "ref")
        with self.checkout_lock():
            self._run(
                ["worktree", "add", "--detach", str(Path(path).absolute()), ref],
                error=WorktreeError,
                reason="worktree_failed",
                what="git worktree add",
            )

    def worktree_remove(self, path: Path) -> None:
        """Removes the worktree at ``path`` and prunes its bookkeeping.

        Never raises when ``path`` is already gone. When git cannot remove it, the
        directory is deleted anyway, unless it is this repository or a repository of its
        own (``.git`` directory), which are never deleted. Raises
        ``WorktreeError(..., "worktree_failed")`` only if the directory survives.
        """
        target = Path(path).absolute()
        with self.checkout_lock():
            if target.exists():
                self._run(
                    ["worktree", "remove", "--force", "--force", str(target)],
                    ok_codes=tuple(range(256)),
                )
            if target.exists() and self._may_delete(target):
                shutil.rmtree(target, ignore_errors=True)
            self._run(["worktree", "prune"], ok_codes=tuple(range(256)))
        if target.exists():
            raise WorktreeError(f"git worktree remove: {target} is still there", "worktree_failed")

    def prune_worktrees(self) -> None:
        """``git worktree prune`` under the checkout lock: drops the registrations of
        worktrees whose directory is gone (a crashed run's). Never raises. A checkout
        with no registered worktree has nothing to prune, and git is not started."""
        registered = self.common_dir() / "worktrees"
        try:
            if not registered.is_dir() or not any(registered.iterdir()):
                return
        except OSError:
            pass  # unreadable: let git decide
        with self.checkout_lock():
            self._run(["worktree", "prune"], ok_codes=tuple(range(256)))

    def _may_delete(self, target: Path) -> bool:
        resolved = target.resolve()
        ours = self.repo_dir.resolve()
        if resolved == ours or resolved in ours.parents:
            return False
        return not (resolved / ".git").is_dir()
