"""The one child-process supervisor: spawn, deadline, bounded output, process-group kill.

li's runner (:mod:`engine.run.runner`) and the other programs on li's public surface
start their children through :func:`supervise`; what may be started, and with which
environment, stays their business.

:func:`supervise` raises :class:`SpawnFailed` when the process cannot be started (the
program is not executable, a NUL byte in an argument, ...). For anything the child does
it returns a :class:`ChildResult` whose ``ending`` is one of:

- ``exited``: the leader exited by itself (``returncode`` 0, > 0, or the negative number
  of the signal that killed it);
- ``timed_out``: ``timeout_seconds`` passed; the process group got SIGTERM, then SIGKILL
  after ``kill_grace_seconds``;
- ``cancelled``: the ``cancel`` event was set (same termination).

The child runs with no shell, in its own session and process group, with exactly
``env``, and stdin from ``stdin`` (an anonymous regular file, so a child that never reads
it cannot block us) or /dev/null. Both pipes are drained concurrently, keeping the
*last* ``stdout_limit``/``stderr_limit`` bytes and counting the rest, so memory stays
bounded whatever the child prints.

After the leader exits, the rest of its group is SIGKILLed: at once with
``kill_group_on_exit``, otherwise once the pipes reach end-of-file or
``drain_after_exit_seconds`` have passed (background children may finish their last
write). A descendant that left the group (``setsid``) cannot be killed this way, but it
cannot hang the caller either: the pipes get at most ``drain_after_exit_seconds`` after
the exit, then a bounded final read, then they are closed. Nothing of the group
outlives :func:`supervise`, also when it is left by an exception (``on_spawn`` raising,
KeyboardInterrupt).
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import IO

READ_CHUNK_BYTES = 64 * 1024
POLL_SECONDS = 0.1  # how often the loop looks at the clock and the cancel event
DRAIN_AFTER_EXIT_SECONDS = 1.0  # how long others may hold the pipes after the exit
_REAP_SECONDS = 10.0  # after SIGKILL; only a process stuck in the kernel takes longer
_FINAL_DRAIN_CHUNKS = 64  # bounds the last read when an escaped writer keeps writing


class Ending(StrEnum):
    """How the supervision of one child ended."""

    EXITED = "exited"
    TIMED_OUT = "timed_out"
    CANCELLED = "cancelled"


class SpawnFailed(Exception):
    """The child could not be started; ``detail`` says why (the OS error text)."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


@dataclass(frozen=True)
class ChildSpec:
    """One child to run. ``executable`` is the program file; ``argv[0]`` stays as given."""

    argv: Sequence[str]
    executable: str
    env: Mapping[str, str]  # the child's complete environment
    cwd: str | None
    timeout_seconds: float
    kill_grace_seconds: float
    stdout_limit: int
    stderr_limit: int
    stdin: bytes | None = None  # None: /dev/null
    kill_group_on_exit: bool = False
    drain_after_exit_seconds: float = DRAIN_AFTER_EXIT_SECONDS
    preexec_fn: Callable[[], None] | None = None
    # SIGKILL the child when the thread that started it ends, kill -9 of the process
    # included (engine.run.parentdeath); runs before ``preexec_fn``.
    die_with_parent: bool = False


@dataclass(frozen=True)
class Output:
    """The kept end of one stream and how many bytes it carried in all."""

    data: bytes
    total: int

    @property
    def dropped(self) -> int:
        """Bytes from the start of the stream that were not kept."""
        return self.total - len(self.data)

    def text(self) -> str:
        """The kept bytes as UTF-8; a character cut at the start becomes a replacement."""
        return self.data.decode("utf-8", errors="replace")


@dataclass(frozen=True)
class ChildResult:
    """How one supervised child ended."""

    pid: int
    returncode: int | None  # negative: killed by that signal; None: not reaped
    ending: Ending
    stdout: Output
    stderr: Output


class _Capture:
    """The bounded bytes of one pipe: the last ``limit`` bytes and the total count."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.kept = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.kept += chunk
        excess = len(self.kept) - self.limit
        if excess > 0:
            del self.kept[:excess]

    def output(self) -> Output:
        return Output(bytes(self.kept), self.total)


def _exit_fd(pid: int) -> int | None:
    """A descriptor that becomes readable when ``pid`` exits (Linux pidfd); None where
    there is none, and the exit is then found by polling."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


class _Pipes:
    """stdout and stderr of one child, read without blocking behind one selector, which
    also watches for the leader's exit where the system can."""

    def __init__(self, process: subprocess.Popen[bytes], spec: ChildSpec) -> None:
        assert process.stdout is not None and process.stderr is not None
        self._files = (process.stdout, process.stderr)
        self.captures = (_Capture(spec.stdout_limit), _Capture(spec.stderr_limit))
        self._selector = selectors.DefaultSelector()
        for pipe, capture in zip(self._files, self.captures, strict=True):
            os.set_blocking(pipe.fileno(), False)
            self._selector.register(pipe.fileno(), selectors.EVENT_READ, capture)
        self._exit_fd = _exit_fd(process.pid)
        if self._exit_fd is not None:
            self._selector.register(self._exit_fd, selectors.EVENT_READ, None)

    @property
    def open(self) -> bool:
        """True while a pipe has not reached end-of-file."""
        return any(key.data is not None for key in self._selector.get_map().values())

    @property
    def watching(self) -> bool:
        """True while :meth:`pump` has something to wait for."""
        return bool(self._selector.get_map())

    def exit_seen(self) -> None:
        """Stop watching for the exit once it is known (the pidfd stays readable)."""
        if self._exit_fd is not None:
            self._selector.unregister(self._exit_fd)
            os.close(self._exit_fd)
            self._exit_fd = None

    def _read(self, fd: int, capture: _Capture) -> bool:
        """One chunk from ``fd``; False when nothing was there (or the pipe ended)."""
        try:
            chunk = os.read(fd, READ_CHUNK_BYTES)
        except BlockingIOError:
            return False
        except OSError:
            chunk = b""
        if not chunk:
            self._selector.unregister(fd)
            return False
        capture.add(chunk)
        return True

    def pump(self, timeout: float) -> None:
        """Wait up to ``timeout`` for output or the exit; read one chunk of each ready
        pipe."""
        for key, _ in self._selector.select(timeout=timeout):
            if key.data is not None:
                self._read(key.fd, key.data)

    def final_drain(self) -> None:
        """Read what is already buffered, a bounded amount, without waiting."""
        for key in list(self._selector.get_map().values()):
            if key.data is None:
                continue
            for _ in range(_FINAL_DRAIN_CHUNKS):
                if not self._read(key.fd, key.data):
                    break

    def close(self) -> None:
        self.exit_seen()
        self._selector.close()
        for pipe in self._files:
            pipe.close()


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    # The group may be gone already (ESRCH) or, on some systems, only zombies remain
    # (EPERM); either way there is nothing left to signal.
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _stdin_file(data: bytes | None) -> IO[bytes] | None:
    if data is None:
        return None
    handle = tempfile.TemporaryFile()  # unlinked at once: only the child's fd remains
    handle.write(data)
    handle.seek(0)
    return handle


def _preexec(spec: ChildSpec) -> Callable[[], None] | None:
    if not spec.die_with_parent:
        return spec.preexec_fn
    from engine.run.parentdeath import chained, killed_with_parent

    return chained(killed_with_parent(), spec.preexec_fn)


def _spawn(spec: ChildSpec) -> subprocess.Popen[bytes]:
    stdin: IO[bytes] | None = None
    try:
        stdin = _stdin_file(spec.stdin)
        return subprocess.Popen(
            list(spec.argv),
            executable=spec.executable,
            cwd=spec.cwd,
            env=dict(spec.env),
            stdin=stdin if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            preexec_fn=_preexec(spec),
        )
    except OSError as exc:
        raise SpawnFailed(str(exc.strerror or exc)) from None
    except ValueError as exc:  # e.g. a NUL byte in an argument or in the environment
        raise SpawnFailed(str(exc)) from None
    finally:
        if stdin is not None:
            stdin.close()


class _Watch:
    """The clock of one child: deadline, cancel, SIGTERM, SIGKILL, exit and drain."""

    def __init__(
        self, process: subprocess.Popen[bytes], spec: ChildSpec, cancel: threading.Event | None
    ) -> None:
        self.process = process
        self.spec = spec
        self.cancel = cancel
        self.deadline = time.monotonic() + spec.timeout_seconds
        self.ending = Ending.EXITED
        self.terminated_at: float | None = None
        self.killed = False
        self.exited_at: float | None = None

    def step(self, now: float, pipes_open: bool) -> bool:
        """Act on the clock; True when supervision is over."""
        spec = self.spec
        if self.exited_at is None and self.process.poll() is not None:
            self.exited_at = now
            if spec.kill_group_on_exit:
                _signal_group(self.process.pid, signal.SIGKILL)
        if self.exited_at is not None:
            return not pipes_open or now >= self.exited_at + spec.drain_after_exit_seconds
        if self.terminated_at is None:
            if self.cancel is not None and self.cancel.is_set():
                self.ending = Ending.CANCELLED
            elif now >= self.deadline:
                self.ending = Ending.TIMED_OUT
            else:
                return False
            self.terminated_at = now
            _signal_group(self.process.pid, signal.SIGTERM)
        elif not self.killed and now >= self.terminated_at + spec.kill_grace_seconds:
            self.killed = True
            _signal_group(self.process.pid, signal.SIGKILL)
        return False


def _watch(
    process: subprocess.Popen[bytes],
    pipes: _Pipes,
    spec: ChildSpec,
    cancel: threading.Event | None,
) -> Ending:
    watch = _Watch(process, spec, cancel)
    while not watch.step(time.monotonic(), pipes.open):
        if watch.exited_at is not None:
            pipes.exit_seen()
        if pipes.watching:
            pipes.pump(POLL_SECONDS)
            continue
        try:
            process.wait(timeout=POLL_SECONDS)
        except subprocess.TimeoutExpired:
            pass
    return watch.ending


def supervise(
    spec: ChildSpec,
    *,
    on_spawn: Callable[[int], None] | None = None,
    cancel: threading.Event | None = None,
) -> ChildResult:
    """Run ``spec`` to its end as the module says; raises :class:`SpawnFailed` only.

    ``on_spawn(pid)`` is called as soon as the process exists (before the deadline
    starts); if it raises, the process group is killed and the exception propagates.
    ``cancel`` is looked at every :data:`POLL_SECONDS`.
    """
    process = _spawn(spec)
    pipes: _Pipes | None = None
    try:
        pipes = _Pipes(process, spec)
        if on_spawn is not None:
            on_spawn(process.pid)
        ending = _watch(process, pipes, spec, cancel)
    finally:
        # Also when on_spawn raises (or on KeyboardInterrupt, or no selector could be
        # made): nothing is left behind.
        _signal_group(process.pid, signal.SIGKILL)
        if process.returncode is None:
            try:
                process.wait(timeout=_REAP_SECONDS)
            except subprocess.TimeoutExpired:
                pass
        if pipes is not None:
            pipes.final_drain()
            pipes.close()
        else:
            for pipe in (process.stdout, process.stderr):
                if pipe is not None:
                    pipe.close()
    return ChildResult(
        pid=process.pid,
        returncode=process.returncode,
        ending=ending,
        stdout=pipes.captures[0].output(),
        stderr=pipes.captures[1].output(),
    )
