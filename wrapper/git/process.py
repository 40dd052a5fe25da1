"""How :class:`wrapper.git.Git` runs git: the forced flags and environment, one process
group per call killed at its timeout, failures as one-line KdevErrors (see
:mod:`wrapper.git`), and the checkout lock."""

from __future__ import annotations

import fcntl
import os
import re
import signal
import subprocess
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import IO

from wrapper.errors import ConfigError, KdevError

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
    # No system-wide attributes (/etc/gitattributes) either.
    "GIT_ATTR_NOSYSTEM": "1",
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
        # Would read attributes from a tree of someone's choosing (git 2.43+).
        "GIT_ATTR_SOURCE",
    }
)
DEFAULT_TIMEOUT = 300.0
KILL_WAIT_SECONDS = 5.0
# scheme://userinfo@ -- the userinfo part may hold a token.
CREDENTIALS_RE = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s]+@")
# A full object name: what it names can never change, so its rev-parse is kept.
FULL_SHA_RE = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def redact_credentials(text: str) -> str:
    """``text`` with the userinfo of every ``scheme://user:token@`` URL replaced by ``***``."""
    return CREDENTIALS_RE.sub(r"\1***@", text)


def last_line(stderr: bytes) -> str:
    """git's last ``fatal:``/``error:`` line (else its last line), credentials redacted."""
    lines = [line.strip() for line in stderr.decode("utf-8", "replace").splitlines()]
    lines = [line for line in lines if line]
    errors = [line for line in lines if line.startswith(("fatal:", "error:"))]
    chosen = errors or lines
    return redact_credentials(chosen[-1]) if chosen else "no message"


def check_option_safe(value: str, what: str) -> str:
    """Refuses a ref/remote that git would parse as an option, or that holds a newline."""
    if not value or value.startswith("-") or any(c in value for c in "\0\n\r"):
        raise ConfigError(f"{what} {value!r} is not acceptable to git", "invalid_ref")
    return value


def check_remote_safe(remote: str) -> str:
    """:func:`check_option_safe` for a remote, which also refuses a URL with credentials
    (the token would be in git's argv)."""
    check_option_safe(remote, "remote")
    if redact_credentials(remote) != remote:
        raise ConfigError(
            "a remote URL with credentials would put a token in argv; "
            "configure a named remote or a credential helper",
            "credentials_in_argv",
        )
    return remote


class GitProcess:
    """The git process of :class:`wrapper.git.Git`, run against ``repo_dir``.

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
        self._common_dir: Path | None = None
        # full SHA -> the commit it names, for the ones found (a missing one may be
        # fetched later, so a miss is not kept).
        self._commits: dict[str, str] = {}

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
        env: Mapping[str, str] | None = None,
        to_file: bool = False,
    ) -> subprocess.CompletedProcess[bytes]:
        """Runs ``git <config> args``; an exit code outside ``ok_codes`` raises ``error``.
        ``env`` adds variables for this call only (a throwaway ``GIT_INDEX_FILE``).
        ``to_file``: git writes its output to an anonymous file, read back as one bytes
        object (a pipe's output is gathered in pieces then joined: two copies of a large
        diff at once, D111)."""
        with tempfile.TemporaryFile() if to_file else nullcontext() as sink:
            result = self._run_into(args, stdin, env, what, error, reason, sink)
            if sink is not None:
                sink.seek(0)
                result.stdout = sink.read()
        if result.returncode not in ok_codes:
            label = what or f"git {args[0]}"
            raise error(f"{label} failed: {last_line(result.stderr)}", reason)
        return result

    def _run_into(
        self,
        args: Sequence[str],
        stdin: bytes | None,
        env: Mapping[str, str] | None,
        what: str | None,
        error: type[KdevError],
        reason: str,
        sink: IO[bytes] | None,
    ) -> subprocess.CompletedProcess[bytes]:
        argv = ["git", *GIT_CONFIG_ARGS, *args]
        label = what or f"git {args[0]}"
        try:
            proc = self._spawn(
                argv,
                self._env if env is None else {**self._env, **env},
                subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                subprocess.PIPE if sink is None else sink,
                subprocess.PIPE,
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
        return subprocess.CompletedProcess(argv, proc.returncode, stdout or b"", stderr)

    @contextmanager
    def _stream(
        self,
        args: Sequence[str],
        *,
        error: type[KdevError] = KdevError,
        reason: str = "git_failed",
        what: str | None = None,
    ) -> Iterator[tuple[IO[bytes], IO[bytes]]]:
        """Runs ``git <config> args`` as :meth:`_run` does, but yields its ``(stdin,
        stdout)`` pipes for a conversation (``cat-file --batch``) instead of holding the
        output in memory. Its stderr goes to an anonymous file (a full pipe never stalls
        it); the whole conversation is bounded by ``timeout``, after which the process
        group is killed. A failure inside the block kills git and propagates (as the
        timeout error when the timeout was the cause); leaving the block closes stdin and
        waits: an exit code other than 0 raises ``error``."""
        argv = ["git", *GIT_CONFIG_ARGS, *args]
        label = what or f"git {args[0]}"
        with tempfile.TemporaryFile() as stderr:
            try:
                proc = self._spawn(argv, self._env, subprocess.PIPE, subprocess.PIPE, stderr)
            except OSError as exc:
                raise error(f"{label}: cannot start git: {exc.strerror}", reason) from None
            expired = threading.Event()

            def expire() -> None:  # the reads then see EOF; the waiting is ours
                expired.set()
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

            timer = threading.Timer(self.timeout, expire)
            timer.daemon = True
            timer.start()
            timed_out = error(f"{label}: timed out after {self.timeout:g}s", reason)
            assert proc.stdin is not None and proc.stdout is not None
            try:
                try:
                    yield proc.stdin, proc.stdout
                except BaseException:
                    self._kill_group(proc)
                    if expired.is_set():
                        raise timed_out from None
                    raise
                try:
                    proc.stdin.close()
                except BrokenPipeError:
                    pass
                while proc.stdout.read(65536):
                    pass  # what git still says after its last answer is not wanted
                code = proc.wait()
            finally:
                timer.cancel()
                for pipe in (proc.stdin, proc.stdout):
                    pipe.close()
            if expired.is_set():
                raise timed_out
            if code != 0:
                stderr.seek(0)
                raise error(f"{label} failed: {last_line(stderr.read())}", reason)

    def _spawn(
        self,
        argv: list[str],
        env: Mapping[str, str],
        stdin: int,
        stdout: int | IO[bytes],
        stderr: int | IO[bytes],
    ) -> subprocess.Popen[bytes]:
        """git in the repository, in a session of its own: its group (git and the helpers
        it spawns) is what :meth:`_kill_group` kills. OSError when it cannot start."""
        return subprocess.Popen(
            argv,
            cwd=self.repo_dir,
            env=env,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )

    @staticmethod
    def _kill_group(proc: subprocess.Popen[bytes]) -> None:
        # git fetch spawns helpers (remote-https, ssh): kill the whole group.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            proc.communicate(timeout=KILL_WAIT_SECONDS)
        except (subprocess.TimeoutExpired, ValueError):
            pass

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
        with (self.common_dir() / "kdev-fetch.lock").open("a") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    def common_dir(self) -> Path:
        """The checkout's common git directory (shared by its worktrees); asked of git
        once per Git object, as it does not move while kdev runs."""
        if self._common_dir is None:
            common = self._run(["rev-parse", "--git-common-dir"], what="git rev-parse").stdout
            git_dir = Path(os.fsdecode(common.strip()))
            self._common_dir = git_dir if git_dir.is_absolute() else self.repo_dir / git_dir
        return self._common_dir

    def rev_parse(self, ref: str) -> str | None:
        """The commit SHA ``ref`` names (tags peeled), or None if there is no such commit.
        A full SHA found once is not asked again: the commit it names cannot change."""
        check_option_safe(ref, "ref")
        if (known := self._commits.get(ref)) is not None:
            return known
        result = self._run(
            ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"],
            ok_codes=(0, 1, 128),
        )
        sha = result.stdout.decode("ascii", "replace").strip()
        if result.returncode != 0 or not sha:
            return None
        if FULL_SHA_RE.fullmatch(ref):
            self._commits[ref] = sha
        return sha

    def is_valid_branch_name(self, name: str) -> bool:
        """True when ``git check-ref-format --branch`` accepts ``name`` as it is.

        ``@{-N}`` shorthands, which git would expand to another branch, are refused.
        """
        if not name or name.startswith("-") or any(c in name for c in "\0\n\r"):
            return False
        result = self._run(["check-ref-format", "--branch", name], ok_codes=(0, 1, 128))
        expanded = result.stdout.decode("utf-8", "replace").strip()
        return result.returncode == 0 and expanded == name
