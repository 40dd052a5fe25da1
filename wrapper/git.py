"""The only module that runs git.

Why it is built this way: docs/decisions.md D15.

:class:`Git` is bound to one repository directory. Every call runs ``git`` from an argv
list (never a shell) with hooks and the file-system monitor disabled, no pager and no
editor, no submodule recursion and file-protocol remotes allowed (``-c
core.hooksPath=/dev/null -c core.fsmonitor=false -c core.pager=cat -c core.editor=true
-c sequence.editor=true -c submodule.recurse=false -c protocol.file.allow=always -c
advice.detachedHead=false``): a program named in the repository's own config never runs
in kdev. The environment has ``GIT_TERMINAL_PROMPT=0`` (git never waits for a
password), ``GIT_CONFIG_NOSYSTEM=1`` (no system-wide config), ``GIT_PAGER``/``PAGER``
``cat``, ``GIT_EDITOR``/``EDITOR``/``VISUAL`` ``true`` and ``LC_ALL=C`` (stable
messages), without the variables that would point git at another repository
(``GIT_DIR``, ``GIT_WORK_TREE`` ...) or inject config past these flags
(``GIT_CONFIG``, ``GIT_CONFIG_PARAMETERS``, ``GIT_CONFIG_COUNT``). Each call runs in its
own process group, which is killed when the call passes ``timeout``.

No token ever goes into an argv: git authenticates through its own credential setup,
and a remote given as a URL with credentials is refused. Failures never escape as
``CalledProcessError``: each becomes a :class:`~wrapper.errors.KdevError` subclass with a
one-line message (git's last stderr line, credentials redacted):

- ``FetchError`` ``fetch_failed``: :meth:`Git.fetch` failed or timed out
- ``WorktreeError`` ``worktree_failed``: :meth:`Git.worktree_add` failed, or
  :meth:`Git.worktree_remove` could not make the directory go away
- ``ConfigError`` ``invalid_ref``: a ref or remote name that git would read as an option
- ``ConfigError`` ``credentials_in_argv``: a remote given as a URL with credentials
- ``ConfigError`` ``remote_missing``: :meth:`Git.remote_url` of an unknown remote
- ``KdevError`` ``push_failed``: :meth:`Git.push_commit` failed for another reason than
  a rejection (a rejected push is a :class:`PushResult`, not an error)
- ``KdevError`` ``git_failed`` / ``git_timed_out`` / ``git_not_found``: anything else
"""

from __future__ import annotations

import fcntl
import io
import os
import re
import shutil
import signal
import subprocess
import tarfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from wrapper.errors import ConfigError, FetchError, KdevError, WorktreeError

GIT_CONFIG_ARGS = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.pager=cat",
    "-c",
    "core.editor=true",
    "-c",
    "sequence.editor=true",
    "-c",
    "submodule.recurse=false",
    "-c",
    "protocol.file.allow=always",
    "-c",
    "advice.detachedHead=false",
)
FORCED_ENVIRONMENT = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_CONFIG_NOSYSTEM": "1",
    "LC_ALL": "C",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "GIT_EDITOR": "true",
    "GIT_SEQUENCE_EDITOR": "true",
    "EDITOR": "true",
    "VISUAL": "true",
}
# Variables that would make git operate on some other repository than ours.
DROPPED_ENVIRONMENT = frozenset(
    {
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_COMMON_DIR",
        "GIT_NAMESPACE",
        "GIT_PREFIX",
        # Would inject config (an fsmonitor, a pager) past the forced -c flags.
        "GIT_CONFIG",
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG_COUNT",
        "GIT_EXTERNAL_DIFF",
    }
)
DEFAULT_TIMEOUT = 300.0
_KILL_WAIT_SECONDS = 5.0
# scheme://userinfo@ -- the userinfo part may hold a token.
_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s]+@")


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


def redact_credentials(text: str) -> str:
    """``text`` with the userinfo of every ``scheme://user:token@`` URL replaced by ``***``."""
    return _CREDENTIALS.sub(r"\1***@", text)


def _last_line(stderr: bytes) -> str:
    """git's last ``fatal:``/``error:`` line (else its last line), credentials redacted."""
    lines = [line.strip() for line in stderr.decode("utf-8", "replace").splitlines()]
    lines = [line for line in lines if line]
    errors = [line for line in lines if line.startswith(("fatal:", "error:"))]
    chosen = errors or lines
    return redact_credentials(chosen[-1]) if chosen else "no message"


def _inside_only(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
    """tarfile's ``data`` filter (no absolute or escaping paths or links, no devices,
    sane modes), skipping a refused member instead of failing the whole export."""
    try:
        return tarfile.data_filter(member, dest)
    except tarfile.FilterError:
        return None


def _check_option_safe(value: str, what: str) -> str:
    """Refuses a ref/remote that git would parse as an option, or that holds a newline."""
    if not value or value.startswith("-") or any(c in value for c in "\0\n\r"):
        raise ConfigError(f"{what} {value!r} is not acceptable to git", "invalid_ref")
    return value


class Git:
    """git, run against ``repo_dir`` (a checkout or a bare repository).

    ``env`` is the base environment (default: this process's); the forced variables are
    applied on top and the repository-redirecting ones removed. ``timeout`` bounds each
    call in seconds.
    """

    def __init__(
        self,
        repo_dir: Path,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.repo_dir = Path(repo_dir)
        self.timeout = timeout
        base = os.environ if env is None else env
        self._env = {k: v for k, v in base.items() if k not in DROPPED_ENVIRONMENT}
        self._env.update(FORCED_ENVIRONMENT)

    def environment(self) -> dict[str, str]:
        """A copy of the environment every git call runs with."""
        return dict(self._env)

    def _run(
        self,
        args: Sequence[str],
        *,
        stdin: bytes | None = None,
        ok_codes: tuple[int, ...] = (0,),
        error: type[KdevError] = KdevError,
        reason: str = "git_failed",
        what: str | None = None,
    ) -> subprocess.CompletedProcess[bytes]:
        """Runs ``git <config> args``; an exit code outside ``ok_codes`` raises ``error``."""
        argv = ["git", *GIT_CONFIG_ARGS, *args]
        label = what or f"git {args[0]}"
        try:
            proc = subprocess.Popen(
                argv,
                cwd=self.repo_dir,
                env=self._env,
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except FileNotFoundError as exc:
            missing = "git" if exc.filename == "git" else f"directory {self.repo_dir}"
            found_reason = "git_not_found" if missing == "git" else reason
            raise error(f"{label}: cannot start git: {missing} not found", found_reason) from None
        except OSError as exc:
            raise error(f"{label}: cannot start git: {exc.strerror}", reason) from None
        try:
            stdout, stderr = proc.communicate(stdin, timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self._kill_group(proc)
            timed_out_reason = reason if error is not KdevError else "git_timed_out"
            raise error(f"{label}: timed out after {self.timeout:g}s", timed_out_reason) from None
        except BaseException:
            self._kill_group(proc)
            raise
        result = subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)
        if result.returncode not in ok_codes:
            raise error(f"{label} failed: {_last_line(stderr)}", reason)
        return result

    @staticmethod
    def _kill_group(proc: subprocess.Popen[bytes]) -> None:
        # git fetch spawns helpers (remote-https, ssh): kill the whole group.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            proc.communicate(timeout=_KILL_WAIT_SECONDS)
        except (subprocess.TimeoutExpired, ValueError):
            pass

    def remote_url(self, name: str = "origin") -> str:
        """The URL of remote ``name``, with any ``user:token@`` credentials redacted."""
        _check_option_safe(name, "remote")
        result = self._run(["remote", "get-url", name], ok_codes=(0, 2, 128))
        url = result.stdout.decode("utf-8", "replace").strip()
        if result.returncode != 0 or not url:
            raise ConfigError(
                f"remote {name!r} is not configured in {self.repo_dir}: "
                f"{_last_line(result.stderr)}",
                "remote_missing",
            )
        return redact_credentials(url)

    def fetch(self, remote: str, refspecs: list[str]) -> None:
        """``git fetch --no-tags`` of ``refspecs`` from ``remote`` in one call.

        Raises ``FetchError(..., "fetch_failed")`` with git's last stderr line.
        """
        _check_option_safe(remote, "remote")
        if redact_credentials(remote) != remote:
            raise ConfigError(
                "a remote URL with credentials would put a token in argv; "
                "configure a named remote or a credential helper",
                "credentials_in_argv",
            )
        if not refspecs:
            raise ConfigError("fetch needs at least one refspec", "invalid_ref")
        for refspec in refspecs:
            _check_option_safe(refspec, "refspec")
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

    @contextmanager
    def checkout_lock(self) -> Iterator[None]:
        """Holds the checkout's lock: every git call that writes its object store or its
        worktree list (fetch, worktree add/remove/prune, merge) runs under it.

        Several kdev runs share one checkout (the engine fires events in parallel): two
        fetches updating the same refs fail with "cannot lock ref", and a ``worktree
        prune`` of one run deletes the half-made registration of another's ``worktree
        add``. The lock (``kdev-fetch.lock``, its name from when it covered fetches only)
        lives in the common git dir, so worktrees of the checkout share it, and the OS
        frees it if a run dies. Not re-entrant: do not nest it.
        """
        common = self._run(["rev-parse", "--git-common-dir"], what="git rev-parse").stdout
        git_dir = Path(os.fsdecode(common.strip()))
        if not git_dir.is_absolute():
            git_dir = self.repo_dir / git_dir
        with (git_dir / "kdev-fetch.lock").open("a") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    def rev_parse(self, ref: str) -> str | None:
        """The commit SHA ``ref`` names (tags peeled), or None if there is no such commit."""
        _check_option_safe(ref, "ref")
        result = self._run(
            ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"],
            ok_codes=(0, 1, 128),
        )
        sha = result.stdout.decode("ascii", "replace").strip()
        return sha if result.returncode == 0 and sha else None

    def is_valid_branch_name(self, name: str) -> bool:
        """True when ``git check-ref-format --branch`` accepts ``name`` as it is.

        ``@{-N}`` shorthands, which git would expand to another branch, are refused.
        """
        if not name or name.startswith("-") or any(c in name for c in "\0\n\r"):
            return False
        result = self._run(["check-ref-format", "--branch", name], ok_codes=(0, 1, 128))
        expanded = result.stdout.decode("utf-8", "replace").strip()
        return result.returncode == 0 and expanded == name

    def diff(self, base_ref: str, head_ref: str) -> bytes:
        """``git diff base...head`` (changes on head since the merge base), as bytes."""
        _check_option_safe(base_ref, "ref")
        _check_option_safe(head_ref, "ref")
        result = self._run(
            [
                "diff",
                "--no-ext-diff",
                "--no-color",
                "--no-textconv",
                f"{base_ref}...{head_ref}",
                "--",
            ]
        )
        return result.stdout

    def patch_id(self, diff: bytes) -> str | None:
        """First field of ``git patch-id --verbatim`` fed ``diff`` (whitespace-significant,
        file order independent); None for an empty diff."""
        if not diff.strip():
            return None
        result = self._run(["patch-id", "--verbatim"], stdin=diff)
        fields = result.stdout.decode("ascii", "replace").split()
        return fields[0] if fields else None

    def merge_base(self, a: str, b: str) -> str | None:
        """The best common ancestor of ``a`` and ``b``, or None when they share no history."""
        _check_option_safe(a, "ref")
        _check_option_safe(b, "ref")
        result = self._run(["merge-base", a, b], ok_codes=(0, 1))
        sha = result.stdout.decode("ascii", "replace").strip()
        return sha if result.returncode == 0 and sha else None

    def changed_files(self, base_ref: str, head_ref: str) -> list[str]:
        """The paths ``git diff --name-only base...head`` lists (renames as delete+add)."""
        _check_option_safe(base_ref, "ref")
        _check_option_safe(head_ref, "ref")
        result = self._run(
            ["diff", "--name-only", "-z", "--no-renames", f"{base_ref}...{head_ref}", "--"]
        )
        return [p for p in result.stdout.decode("utf-8", "replace").split("\0") if p]

    def files_named(self, ref: str, name: str) -> dict[str, str]:
        """Every file called ``name`` in the tree of ``ref``: path -> text (UTF-8,
        undecodable bytes replaced). Read from git objects, never from a worktree."""
        _check_option_safe(ref, "ref")
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

    def export_tree(self, ref: str, dest: Path) -> None:
        """Writes the tree of ``ref`` to the new directory ``dest`` as plain files
        (``git archive``): no ``.git``, nothing linking back to this repository.

        Members that would land outside ``dest`` (absolute or ``..`` paths, links
        pointing out) are skipped. Raises ``WorktreeError(..., "worktree_failed")``.
        """
        _check_option_safe(ref, "ref")
        archive = self._run(
            ["archive", "--format=tar", "--end-of-options", f"{ref}^{{tree}}"],
            error=WorktreeError,
            reason="worktree_failed",
            what="git archive",
        ).stdout
        target = Path(dest).absolute()
        try:
            target.mkdir(mode=0o755)
            target.chmod(0o755)
            with tarfile.open(fileobj=io.BytesIO(archive), mode="r:") as tar:
                tar.extractall(target, filter=_inside_only)
        except (OSError, tarfile.TarError) as exc:
            raise WorktreeError(f"git archive: cannot extract: {exc}", "worktree_failed") from None

    def worktree_add(self, path: Path, ref: str) -> None:
        """Checks ``ref`` out, detached, at ``path``, sharing this repository's objects.

        Raises ``WorktreeError(..., "worktree_failed")``.
        """
        _check_option_safe(ref, "ref")
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
        worktrees whose directory is gone (a crashed run's). Never raises."""
        with self.checkout_lock():
            self._run(["worktree", "prune"], ok_codes=tuple(range(256)))

    def _may_delete(self, target: Path) -> bool:
        resolved = target.resolve()
        ours = self.repo_dir.resolve()
        if resolved == ours or resolved in ours.parents:
            return False
        return not (resolved / ".git").is_dir()

    def merge_into_detached(self, base_ref: str, *, name: str, email: str) -> MergeResult:
        """Merges ``base_ref`` into the detached HEAD of this worktree as ``name <email>``.

        ``git merge --no-ff --no-edit`` with the identity given by ``-c user.name/email``
        (author and committer) and no signing. On a conflict the merge is aborted
        (``git merge --abort``) and reported; nothing is ever resolved. Raises ``KdevError``
        ``git_failed`` when the merge fails for another reason.
        """
        _check_option_safe(base_ref, "ref")
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
            raise KdevError(f"git merge failed: {_last_line(result.stderr)}", "git_failed")
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
        _check_option_safe(remote, "remote")
        if redact_credentials(remote) != remote:
            raise ConfigError(
                "a remote URL with credentials would put a token in argv; "
                "configure a named remote or a credential helper",
                "credentials_in_argv",
            )
        _check_option_safe(sha, "sha")
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
        raise KdevError(f"git push {remote} failed: {_last_line(result.stderr)}", "push_failed")
