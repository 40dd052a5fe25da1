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

The child itself is run by :func:`engine.run.supervise.supervise`: its own session and
process group, no shell. When the leader exits, its background children get one second
to release stdout/stderr; then the whole group is SIGKILLed, so an action's background
children never outlive it. A descendant that left the group (``setsid``) cannot be
killed this way, but it cannot hang the engine either: the pipes are closed.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from engine.errors import Refused
from engine.fields import same_fields
from engine.run.supervise import ChildResult, ChildSpec, Ending, SpawnFailed, supervise
from engine.schedules.spec import check_executable
from engine.store.models import RunStatus, utcnow


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


def _not_launched(
    reason: str, started_at: datetime, message: str = "", status: RunStatus = RunStatus.REFUSED
) -> RunOutcome:
    return RunOutcome(
        status=status,
        reason=reason,
        exit_code=None,
        pid=None,
        stdout_tail="",
        stderr_tail=message,
        started_at=started_at,
        finished_at=utcnow(),
    )


def _resolve(request: RunRequest, started_at: datetime) -> str | RunOutcome:
    """The executable to start, or the refusal that stops it before any spawn."""
    command = request.argv[0] if request.argv else ""
    try:
        check_executable(command, request.allowlist)
    except Refused as exc:
        return _not_launched(exc.reason, started_at, exc.message)
    if request.cwd is not None and not os.path.isdir(request.cwd):
        missing = f"working directory {request.cwd} is missing"
        return _not_launched("cwd_missing", started_at, missing)
    search_path = _absolute_search_path(request.env.get("PATH", os.defpath))
    executable = shutil.which(command, path=search_path)
    if executable is None:
        return _not_launched(
            "command_not_found", started_at, f"{command!r} is not on PATH {search_path!r}"
        )
    return executable


def _classify(result: ChildResult) -> tuple[RunStatus, str | None]:
    if result.ending is Ending.TIMED_OUT:
        return RunStatus.TIMED_OUT, "deadline_exceeded"
    if result.ending is Ending.CANCELLED:
        return RunStatus.CANCELLED, "engine_shutdown"
    if result.returncode == 0:
        return RunStatus.SUCCEEDED, None
    if result.returncode is not None and result.returncode < 0:
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
    executable = _resolve(request, started_at)
    if isinstance(executable, RunOutcome):
        return executable
    if cancel is not None and cancel.is_set():
        return _not_launched("engine_shutdown", started_at, status=RunStatus.CANCELLED)
    # argv, env, cwd, timeout_seconds and kill_grace_seconds are the request's own.
    spec = same_fields(
        ChildSpec,
        request,
        executable=executable,
        stdout_limit=request.tail_bytes,
        stderr_limit=request.tail_bytes,
        die_with_parent=True,  # never outlives a killed engine (D28)
    )
    try:
        result = supervise(spec, on_spawn=on_spawn, cancel=cancel)
    except SpawnFailed as exc:
        return _not_launched("spawn_failed", started_at, f"cannot start {executable}: {exc.detail}")
    status, reason = _classify(result)
    return RunOutcome(
        status=status,
        reason=reason,
        exit_code=result.returncode,
        pid=result.pid,
        stdout_tail=result.stdout.text(),
        stderr_tail=result.stderr.text(),
        started_at=started_at,
        finished_at=utcnow(),
    )
