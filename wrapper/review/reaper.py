"""The fallback sandbox's supervisor: the reviewer's whole process tree dies with kdev.

Without a PID namespace, a reviewer's grandchild that daemonises (double fork,
``setsid``) leaves its process group, and a ``kill -9`` of kdev leaves it running. In the
fallback, kdev therefore starts the reviewer through this supervisor::

    python -I -m wrapper.review.reaper UID -- EXECUTABLE ARGV0 [ARG...]     (UID: a number or -)

The supervisor makes itself a child subreaper (orphans of the reviewer's tree are
reparented to it, not to init) and asks for SIGTERM when kdev dies. It forks the
reviewer, which drops to ``UID`` (when given: no supplementary groups, gid = uid), gets
the parent-death signal and ``no_new_privs``, and execs. The supervisor exits with the
reviewer's status (``128 + signal`` when killed) after SIGKILLing every process left in
the tree; on SIGTERM (kdev died, or kdev's timeout) it does the same at once. Running
as root with a separate uid for the reviewer, the reviewer cannot kill it; running as
the same uid, it can (docs/reviewers.md lists this among the fallback's limits).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time
from types import FrameType

_PR_SET_PDEATHSIG = 1
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_CHILD_SUBREAPER = 36
_MAX_ROUNDS = 200


def _prctl(option: int, value: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option}) failed")


def _children() -> list[int]:
    me = os.getpid()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me and fields[0] not in (b"Z", b"X"):
            found.append(int(name))
    return found


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def kill_tree() -> None:
    """SIGKILL every child, then every orphan that lands here, until none is left."""
    for _ in range(_MAX_ROUNDS):
        children = _children()
        if not children:
            _reap()
            return
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _reap()
        time.sleep(0.01)


def _on_term(signum: int, frame: FrameType | None) -> None:
    kill_tree()
    os._exit(128 + signum)


def _exec_reviewer(uid: int | None, executable: str, argv: list[str]) -> None:
    try:
        if uid is not None:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        _prctl(_PR_SET_NO_NEW_PRIVS, 1)
        os.execv(executable, argv)
    except OSError as exc:
        os.write(2, f"kdev reaper: cannot start {executable}: {exc.strerror}\n".encode())
    os._exit(127)


def main(args: list[str]) -> int:
    if len(args) < 4 or args[1] != "--":
        os.write(2, b"usage: python -m wrapper.review.reaper UID -- EXECUTABLE ARGV0 [ARG...]\n")
        return 2
    uid = None if args[0] == "-" else int(args[0])
    parent = os.getppid()
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    signal.signal(signal.SIGTERM, _on_term)
    signal.signal(signal.SIGHUP, _on_term)
    _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # kdev died before the death signal was armed
        return 128 + signal.SIGTERM
    pid = os.fork()
    if pid == 0:
        _exec_reviewer(uid, args[2], args[3:])
    _, status = os.waitpid(pid, 0)
    kill_tree()
    return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
