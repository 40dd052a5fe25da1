"""Spawn one action: allow-list re-check, no shell, deadline, bounded output tails.

Why it is built this way: docs/decisions.md D2, D13.

:func:`run_action` never raises for anything the child or the operating system does; it
returns a :class:`RunOutcome` whose ``status`` is one of:

- ``succeeded`` (reason None): the process exited 0
- ``failed``: ``nonzero_exit`` (exit_code > 0) or ``killed_by_signal`` (exit_code is the
  negative signal number)
- ``timed_out``: ``deadline_exceeded``; the process group got SIGTERM, then SIGKILL
  after the grace period
- ``cancelled``: ``engine_shutdown``; the ``cancel`` event was set (same termination)
- ``refused`` (never launched, pid None): ``command_not_allowlisted``, ``cwd_missing``,
  ``command_not_found``, ``spawn_failed``

Every action runs in its own session and process group. When the leader exits, its
background children get one second to release stdout/stderr; then the whole group is
SIGKILLed, so an action's background children never outlive it. A descendant that left
the group (``setsid``) cannot be killed this way, but it cannot hang the engine either:
the output readers stop and the pipes are closed.
"""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from engine.errors import Refused
from engine.schedules.spec import check_executable
from engine.store.models import RunStatus, utcnow

READ_CHUNK_BYTES = 64 * 1024
POLL_SECONDS = 0.1  # how often the wait loop looks at the cancel event
DRAIN_AFTER_EXIT_SECONDS = 1.0  # how long background children may hold the pipes
_REAP_SECONDS = 10.0  # after SIGKILL; only a process stuck in the kernel takes longer
_READER_JOIN_SECONDS = 2.0
_FINAL_DRAIN_CHUNKS = 64  # bounds the last read when an escaped writer keeps writing


@dataclass(frozen=True)
class RunRequest:
    """Everything needed to run one action; built by the caller from a schedule + event."""

    argv: list[str]  # argv[0] is a bare executable name
    cwd: str | None
    env: dict[str, str]  # the complete environment for the child (already minimal)
    timeout_seconds: float
    allowlist: frozenset[str]
    kill_grace_seconds: float = 5.0
    tail_bytes: int = 4096


@dataclass(frozen=True)
class RunOutcome:
    """How one action ended; maps one-to-one onto a run row."""

    status: RunStatus  # succeeded | failed | timed_out | refused | cancelled
    reason: str | None  # None on success; a reason code otherwise
    exit_code: int | None  # negative: killed by that signal; None: never ran / not reaped
    pid: int | None  # None when refused
    stdout_tail: str  # the last tail_bytes bytes, decoded as UTF-8 with replacement
    stderr_tail: str
    started_at: datetime  # aware UTC
    finished_at: datetime


def build_environment(
    base: Mapping[str, str], passthrough_names: Iterable[str], source: Mapping[str, str]
) -> dict[str, str]:
    """A new dict: ``base`` plus each name in ``passthrough_names`` present in ``source``.

    Names missing from ``source`` are skipped; a passed-through name overrides ``base``.
    Nothing else from ``source`` is copied.
    """
    environment = dict(base)
    for name in passthrough_names:
        if name in source:
            environment[name] = source[name]
    return environment


def _absolute_search_path(path: str) -> str:
    # Relative (and empty) PATH entries would resolve against whatever directory we run
    # in; an allow-listed bare name must only ever mean a file in an absolute directory.
    return os.pathsep.join(entry for entry in path.split(os.pathsep) if os.path.isabs(entry))


def _refused(reason: str, started_at: datetime, message: str = "") -> RunOutcome:
    return RunOutcome(
        status=RunStatus.REFUSED,
        reason=reason,
        exit_code=None,
        pid=None,
        stdout_tail="",
        stderr_tail=message,
        started_at=started_at,
        finished_at=utcnow(),
    )


class _TailReader:
    """Reads one pipe in a thread, keeping only its last ``limit`` bytes."""

    def __init__(self, fd: int, limit: int, name: str) -> None:
        self._fd = fd
        self._limit = limit
        self._tail = bytearray()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _keep(self, chunk: bytes) -> None:
        self._tail += chunk
        excess = len(self._tail) - self._limit
        if excess > 0:
            del self._tail[:excess]

    def _run(self) -> None:
        # Non-blocking reads behind a selector, so stop() is honoured even when a
        # process outside our group still holds the write end open.
        os.set_blocking(self._fd, False)
        with selectors.DefaultSelector() as selector:
            selector.register(self._fd, selectors.EVENT_READ)
            final_chunks = 0
            while True:
                stopping = self._stop.is_set()
                if stopping:
                    final_chunks += 1
                    if final_chunks > _FINAL_DRAIN_CHUNKS:
                        return
                else:
                    selector.select(timeout=POLL_SECONDS)
                try:
                    chunk = os.read(self._fd, READ_CHUNK_BYTES)
                except BlockingIOError:
                    if stopping:
                        return
                    continue
                except OSError:
                    return
                if not chunk:
                    return
                self._keep(chunk)

    def wait(self, timeout: float) -> bool:
        """True when the pipe reached end-of-file (or the reader stopped) in time."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def stop(self) -> None:
        """Read what is already buffered, then end the thread."""
        self._stop.set()
        if self._thread.ident is not None:
            self._thread.join(_READER_JOIN_SECONDS)

    def text(self) -> str:
        return bytes(self._tail).decode("utf-8", errors="replace")


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    # The group may be gone already (ESRCH) or, on some systems, only zombies remain
    # (EPERM); either way there is nothing left to signal.
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _terminate(process: subprocess.Popen[bytes], grace_seconds: float) -> None:
    """SIGTERM the group, wait ``grace_seconds`` for the leader, then SIGKILL the group."""
    _signal_group(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=max(grace_seconds, 0.0))
        return
    except subprocess.TimeoutExpired:
        pass
    _signal_group(process.pid, signal.SIGKILL)
    try:
        process.wait(timeout=_REAP_SECONDS)
    except subprocess.TimeoutExpired:
        pass


def _wait_for_exit(
    process: subprocess.Popen[bytes],
    timeout_seconds: float,
    grace_seconds: float,
    cancel: threading.Event | None,
) -> tuple[RunStatus | None, str | None]:
    """Wait for the leader; on deadline or cancel terminate it and say which happened."""
    deadline = time.monotonic() + timeout_seconds
    while True:
        if cancel is not None and cancel.is_set():
            _terminate(process, grace_seconds)
            return RunStatus.CANCELLED, "engine_shutdown"
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            _terminate(process, grace_seconds)
            return RunStatus.TIMED_OUT, "deadline_exceeded"
        try:
            process.wait(timeout=min(POLL_SECONDS, remaining))
            return None, None
        except subprocess.TimeoutExpired:
            continue


def _classify(returncode: int | None) -> tuple[RunStatus, str | None]:
    if returncode == 0:
        return RunStatus.SUCCEEDED, None
    if returncode is not None and returncode < 0:
        return RunStatus.FAILED, "killed_by_signal"
    return RunStatus.FAILED, "nonzero_exit"


def run_action(
    request: RunRequest,
    *,
    on_spawn: Callable[[int], None] | None = None,
    cancel: threading.Event | None = None,
) -> RunOutcome:
    """Run ``request.argv`` to completion and report how it ended; never raises for it.

    Before spawning, ``argv[0]`` is re-checked against ``request.allowlist`` (it may have
    changed since the schedule was added), ``cwd`` must be a directory, and ``argv[0]``
    must resolve through the absolute entries of ``request.env["PATH"]``; otherwise the
    outcome is ``refused`` with pid None (the message is in ``stderr_tail``). If
    ``cancel`` is already set, nothing is spawned and the outcome is ``cancelled``.

    The child gets exactly ``request.env``, stdin from /dev/null, no shell, its own
    session and process group; argv[0] stays the bare name. ``on_spawn(pid)`` is called
    as soon as the process exists; if it raises, the process group is killed and the
    exception propagates. Output is drained concurrently, keeping the last
    ``request.tail_bytes`` bytes of each stream, so memory stays bounded whatever the
    child prints. ``timeout_seconds`` after spawn, or when ``cancel`` is set (checked
    every 0.1 s), the group gets SIGTERM, then SIGKILL after ``kill_grace_seconds``.
    After the leader exits, the group's remaining processes get one second to close the
    pipes, then the group is SIGKILLed (background children do not outlive the action).
    """
    started_at = utcnow()
    command = request.argv[0] if request.argv else ""
    try:
        check_executable(command, request.allowlist)
    except Refused as exc:
        return _refused(exc.reason, started_at, exc.message)
    if request.cwd is not None and not os.path.isdir(request.cwd):
        return _refused("cwd_missing", started_at, f"working directory {request.cwd} is missing")
    search_path = _absolute_search_path(request.env.get("PATH", os.defpath))
    executable = shutil.which(command, path=search_path)
    if executable is None:
        return _refused(
            "command_not_found", started_at, f"{command!r} is not on PATH {search_path!r}"
        )
    if cancel is not None and cancel.is_set():
        return RunOutcome(
            status=RunStatus.CANCELLED,
            reason="engine_shutdown",
            exit_code=None,
            pid=None,
            stdout_tail="",
            stderr_tail="",
            started_at=started_at,
            finished_at=utcnow(),
        )
    try:
        process = subprocess.Popen(
            request.argv,
            executable=executable,
            cwd=request.cwd,
            env=dict(request.env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        return _refused(
            "spawn_failed", started_at, f"cannot start {executable}: {exc.strerror or exc}"
        )
    except ValueError as exc:  # e.g. a NUL byte in an argument or in the environment
        return _refused("spawn_failed", started_at, f"cannot start {executable}: {exc}")
    assert process.stdout is not None and process.stderr is not None
    readers = (
        _TailReader(process.stdout.fileno(), request.tail_bytes, f"stdout-{process.pid}"),
        _TailReader(process.stderr.fileno(), request.tail_bytes, f"stderr-{process.pid}"),
    )
    status: RunStatus | None = None
    reason: str | None = None
    try:
        for reader in readers:
            reader.start()
        if on_spawn is not None:
            on_spawn(process.pid)
        status, reason = _wait_for_exit(
            process, request.timeout_seconds, request.kill_grace_seconds, cancel
        )
        drain_deadline = time.monotonic() + DRAIN_AFTER_EXIT_SECONDS
        for reader in readers:
            reader.wait(max(drain_deadline - time.monotonic(), 0.0))
    finally:
        # Also runs when on_spawn raises (or on KeyboardInterrupt): nothing is left behind.
        _signal_group(process.pid, signal.SIGKILL)
        if process.returncode is None:
            try:
                process.wait(timeout=_REAP_SECONDS)
            except subprocess.TimeoutExpired:
                pass
        for reader in readers:
            reader.stop()
        process.stdout.close()
        process.stderr.close()
    if status is None:
        status, reason = _classify(process.returncode)
    return RunOutcome(
        status=status,
        reason=reason,
        exit_code=process.returncode,
        pid=process.pid,
        stdout_tail=readers[0].text(),
        stderr_tail=readers[1].text(),
        started_at=started_at,
        finished_at=utcnow(),
    )
