"""A child that dies with the process that started it, even by ``kill -9``.

:func:`killed_with_parent` returns the pre-exec step the one supervisor
(:mod:`engine.run.supervise`, ``ChildSpec.die_with_parent``) runs in the child between
fork and exec: ``prctl(PR_SET_PDEATHSIG, SIGKILL)``, so the kernel kills the child the
moment the thread that started it ends, and a check that this parent is still the
child's parent (it may have died between the fork and the prctl, which the kernel would
then never signal).

The libc function is resolved here, in the parent, once: the child only makes the one
foreign call and reads its parent pid. No lock, import or allocation outside the
interpreter's own happens between fork and exec, which is what makes a pre-exec step
tolerable in a process with threads.

Why: an action of an engine that was killed must not go on running and complete after
the next engine re-offered it (D28). The signal goes to the child itself (the process
group's leader); what the command started is the command's business (docs/engine.md).
"""

from __future__ import annotations

import ctypes
import os
import signal
from collections.abc import Callable
from typing import Any

PR_SET_PDEATHSIG = 1
_prctl: Any = None


def _resolved_prctl() -> Any:
    global _prctl
    if _prctl is None:
        function = ctypes.CDLL(None, use_errno=True).prctl
        function.restype = ctypes.c_int
        function.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
        _prctl = function
    return _prctl


def killed_with_parent() -> Callable[[], None] | None:
    """The pre-exec step that ties a child's life to this process; None where the
    platform has no ``prctl`` (the child then outlives a killed parent)."""
    try:
        prctl = _resolved_prctl()
    except (AttributeError, OSError):
        return None
    parent = os.getpid()
    kill = int(signal.SIGKILL)

    def step() -> None:
        prctl(PR_SET_PDEATHSIG, kill, 0, 0)
        if os.getppid() != parent:  # the parent died before the prctl took hold
            os.kill(os.getpid(), kill)

    return step


def chained(*steps: Callable[[], None] | None) -> Callable[[], None] | None:
    """One pre-exec step running ``steps`` in order (None ones skipped); None if none."""
    present = [step for step in steps if step is not None]
    if not present:
        return None
    if len(present) == 1:
        return present[0]

    def step() -> None:
        for one in present:
            one()

    return step
