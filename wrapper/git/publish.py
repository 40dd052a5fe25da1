"""Merge and push (the author loop's ``kdev watch``): a merge of the base into a detached
worktree that aborts on a conflict, and a push that is never forced."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass

from wrapper.errors import ConfigError, KdevError
from wrapper.git.process import (
    GitProcess,
    check_option_safe,
    check_remote_safe,
    last_line,
    redact_credentials,
)


@dataclass(frozen=True)
class MergeResult:
    """What :meth:`Git.merge_into_detached` did.

    ``merged``: HEAD is now ``sha``, a merge commit (or the old head when the base was
    already contained: ``up_to_date``). ``conflict``: the merge was aborted, HEAD is
    unchanged, ``conflicts`` lists the conflicting paths.
    """

    merged: bool
    sha: str | None
    up_to_date: bool = False
    conflict: bool = False
    conflicts: tuple[str, ...] = ()
    detail: str = ""


@dataclass(frozen=True)
class PushResult:
    """What :meth:`Git.push_commit` did: ``pushed``, or ``rejected`` with git's reason
    (non-fast-forward: the branch moved; or a remote refusal)."""

    pushed: bool
    rejected: bool
    detail: str


class GitPublish(GitProcess):
    """Merging into a detached worktree and pushing a commit."""

    def merge_into_detached(self, base_ref: str, *, name: str, email: str) -> MergeResult:
        """Merges ``base_ref`` into the detached HEAD of this worktree as ``name <email>``.

        ``git merge --no-ff --no-edit`` with the identity given by ``-c user.name/email``
        (author and committer) and no signing. On a conflict the merge is aborted
        (``git merge --abort``) and reported; nothing is ever resolved. Raises ``KdevError``
        ``git_failed`` when the merge fails for another reason.
        """
        check_option_safe(base_ref, "ref")
        for value, what in ((name, "user.name"), (email, "user.email")):
            if not value.strip() or any(c in value for c in "\0\n\r<>"):
                raise ConfigError(f"{what} {value!r} is not acceptable to git", "invalid_identity")
        before = self.rev_parse("HEAD")
        with self.checkout_lock():
            result = self._merge(base_ref, name, email)
        if result.returncode == 0:
            after = self.rev_parse("HEAD")
            return MergeResult(merged=True, sha=after, up_to_date=after == before)
        unmerged = self._run(["diff", "--name-only", "--diff-filter=U", "-z"], ok_codes=(0, 1))
        paths = tuple(p for p in unmerged.stdout.decode("utf-8", "replace").split("\0") if p)
        if not paths:
            self._run(["merge", "--abort"], ok_codes=tuple(range(256)))
            raise KdevError(f"git merge failed: {last_line(result.stderr)}", "git_failed")
        self._run(["merge", "--abort"], what="git merge --abort")
        return MergeResult(
            merged=False,
            sha=before,
            conflict=True,
            conflicts=paths,
            detail=f"merge conflict in {', '.join(paths)}",
        )

    def _merge(self, base_ref: str, name: str, email: str) -> subprocess.CompletedProcess[bytes]:
        return self._run(
            [
                "-c",
                f"user.name={name}",
                "-c",
                f"user.email={email}",
                "-c",
                "commit.gpgsign=false",
                "merge",
                "--no-ff",
                "--no-edit",
                "--no-verify",
                "--end-of-options",
                base_ref,
            ],
            ok_codes=tuple(range(256)),
        )

    def push_commit(self, remote: str, sha: str, branch: str) -> PushResult:
        """``git push <remote> <sha>:refs/heads/<branch>``, never forced.

        A rejection (non-fast-forward: the branch moved since ``sha``'s parent was read,
        or the remote refused the update) is a :class:`PushResult` with ``rejected``;
        any other failure raises ``KdevError`` ``push_failed``.
        """
        check_remote_safe(remote)
        check_option_safe(sha, "sha")
        if not re.fullmatch(r"[0-9a-f]{40}(?:[0-9a-f]{24})?", sha):
            raise ConfigError(f"{sha!r} is not a full commit sha", "invalid_sha")
        if not self.is_valid_branch_name(branch):
            raise ConfigError(f"{branch!r} is not a valid branch name", "invalid_branch")
        result = self._run(
            ["push", "--porcelain", "--no-verify", remote, f"{sha}:refs/heads/{branch}"],
            ok_codes=tuple(range(256)),
            what=f"git push {remote}",
        )
        lines = result.stdout.decode("utf-8", "replace").splitlines()
        flags = [line.split("\t") for line in lines if "\t" in line]
        mine = [f for f in flags if len(f) >= 2 and f[1].endswith(f":refs/heads/{branch}")]
        if result.returncode == 0 and mine and mine[0][0] in (" ", "*", "="):
            return PushResult(pushed=True, rejected=False, detail=mine[0][-1].strip())
        if mine and mine[0][0] == "!":
            reason = mine[0][2].strip() if len(mine[0]) > 2 else "rejected"
            return PushResult(pushed=False, rejected=True, detail=redact_credentials(reason))
        raise KdevError(f"git push {remote} failed: {last_line(result.stderr)}", "push_failed")
