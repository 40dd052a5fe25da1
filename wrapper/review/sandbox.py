"""Where a command reviewer runs: a bubblewrap sandbox, a weaker fallback, or plain.

The reviewer reads attacker-influenced text, so it is treated as hostile. A
:class:`Sandbox` turns "run this argv in this tree with this environment" into a
:class:`Launch` (the argv, environment, cwd and pre-exec hook that ``Popen`` gets):

- ``bwrap``: ``bwrap`` with a new PID, IPC, UTS, cgroup and user namespace (uid and gid
  65534 inside, no capabilities, no nested user namespaces; as root where user
  namespaces are off: no user namespace, uid 0 with every capability dropped),
  ``--die-with-parent`` and
  ``--new-session``; its own ``/proc`` and a minimal ``/dev``; ``/usr`` (and the
  ``/bin``, ``/lib*`` links) plus a short list of ``/etc`` files read-only; tmpfs
  ``/tmp`` and a tmpfs ``HOME`` (:data:`SANDBOX_HOME`); the review tree read-only at its
  own path; one writable scratch directory (``KDEV_SCRATCH``); the prompt file
  read-only; ``sandbox_paths`` from the config read-only; ``--unshare-net`` when the
  backend needs no network or goes through kdev's API proxy (:mod:`wrapper.review.proxy`:
  then its UNIX socket is bound in and :mod:`wrapper.review.bridge`, on the host's
  Python bound read-only, serves it on loopback and runs the reviewer as its child).
  Nothing else of the host exists inside: not the checkout,
  not its ``.git``, not the real ``HOME``, not kdev's ``/proc``.
- ``fallback`` (bwrap cannot run here; kdev is root): the reviewer starts under the supervisor
  :mod:`wrapper.review.reaper` (a child subreaper that kills the reviewer's whole tree, daemons
  included, when the reviewer ends or kdev dies), as a separate uid and gid (65534) with
  no supplementary groups when kdev runs as root, with ``no_new_privs``, the
  parent-death signal, and a fresh private ``HOME`` and ``TMPDIR`` under the leg's
  directory. Its guarantees and limits are in docs/reviewers.md.
- ``off``: the reviewer runs as before (own session, scrubbed environment, death signal).

The environment always comes from the reviewer allow-list
(:func:`wrapper.review.reviewer.reviewer_environment`); it reaches the sandboxed program through
bwrap's own environment (bwrap passes it on), never through ``--setenv`` arguments, so
no API key ever shows in an argv (``ps``).

:func:`resolve_sandbox` applies the ``sandbox: required|preferred|off`` policy once per
process: ``required`` without a working bwrap raises ``ConfigError``
``sandbox_unavailable``; ``preferred`` logs one warning with the reason and falls back
to the separate uid when kdev is root, and refuses like ``required`` otherwise (a
same-uid reviewer could read what kdev's user reads; D65).
"""

from __future__ import annotations

import ctypes
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from wrapper.errors import ConfigError, ReviewerSpawnError

log = logging.getLogger("kdev.sandbox")

SandboxKind = Literal["bwrap", "fallback", "off"]
SandboxPolicy = Literal["required", "preferred", "off"]
SANDBOX_UID = 65534  # nobody
SANDBOX_HOME = "/home/reviewer"
SCRATCH_ENV = "KDEV_SCRATCH"
BRIDGE_SOCKET = "/run/kdev/api.sock"  # the proxy's socket, inside the sandbox
BRIDGE_PORT = 38411  # the bridge's port on the sandbox's own loopback
PROBE_TIMEOUT_SECONDS = 10.0
# Read-only inside the bwrap sandbox when present (merged-/usr links become symlinks).
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt")
ETC_FILES = (
    "/etc/alternatives",
    "/etc/ca-certificates",
    "/etc/ssl",
    "/etc/pki",
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/nsswitch.conf",
    "/etc/host.conf",
    "/etc/gai.conf",
    "/etc/localtime",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/mime.types",
    "/etc/os-release",
)
_USER_NAMESPACE = (
    "--unshare-user",
    "--uid",
    str(SANDBOX_UID),
    "--gid",
    str(SANDBOX_UID),
    "--disable-userns",
)
# Root where user namespaces are off: uid 0 inside, but without any capability.
_NO_USER_NAMESPACE = ("--cap-drop", "ALL")
_OTHER_NAMESPACES = (
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--die-with-parent",
    "--new-session",
)


def namespace_flags(userns: bool) -> tuple[str, ...]:
    """bwrap's namespace flags: with a user namespace (uid 65534), or without one
    (root only: all capabilities dropped)."""
    return (*(_USER_NAMESPACE if userns else _NO_USER_NAMESPACE), *_OTHER_NAMESPACES)


_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4


@dataclass(frozen=True)
class ProxyEndpoint:
    """The leg's API proxy as bwrap binds it: its UNIX socket and the port the bridge
    serves it on inside."""

    socket: Path
    port: int = BRIDGE_PORT


def _under(path: str, roots: Iterable[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def bridge_command(port: int) -> tuple[list[str], list[str]]:
    """The bridge's argv head (before the reviewer's) and the read-only binds of the
    host Python it runs on (its base prefix and real executable, unless under /usr...)."""
    from wrapper.review import bridge

    python = os.path.realpath(sys.executable)
    binds: list[str] = []
    if not _under(sys.base_prefix, SYSTEM_DIRS):
        binds += ["--ro-bind", sys.base_prefix, sys.base_prefix]
    if not _under(python, (*SYSTEM_DIRS, sys.base_prefix)):
        binds += ["--ro-bind", python, python]
    source = Path(bridge.__file__).read_text(encoding="utf-8")
    return [python, "-I", "-S", "-c", source, BRIDGE_SOCKET, str(port)], binds


@dataclass(frozen=True)
class Launch:
    """What ``subprocess.Popen`` gets for one reviewer run."""

    executable: str
    argv: list[str]
    env: dict[str, str]
    cwd: str
    preexec_fn: Callable[[], None]


def _prctl(option: int, value: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option}) failed")


def die_with_parent() -> None:
    """In the child, before exec: SIGKILL it when kdev dies (kill -9 included)."""
    try:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


def set_non_dumpable() -> bool:
    """This process becomes non-dumpable: no core dumps, and its ``/proc/PID/environ``,
    ``mem`` and the like are closed to other processes of the same uid. True on success."""
    try:
        _prctl(_PR_SET_DUMPABLE, 0)
    except (OSError, AttributeError):
        return False
    return True


def _system_binds() -> list[str]:
    args: list[str] = []
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for path in ETC_FILES:
        args += ["--ro-bind-try", path, path]
    return args


@dataclass(frozen=True)
class Sandbox:
    """One way of running reviewers; build it with :func:`resolve_sandbox`."""

    kind: SandboxKind
    bwrap: str | None = None
    extra_paths: tuple[str, ...] = ()
    reason: str = ""  # why not bwrap (fallback)
    userns: bool = True  # bwrap: a user namespace (else root without capabilities)
    uid: int | None = field(default=None)  # the fallback's separate uid (root only)

    def launch(
        self,
        executable: str,
        argv: list[str],
        tree: Path,
        env: Mapping[str, str],
        private: Path,
        *,
        readonly: Iterable[Path] = (),
        network: bool = True,
        proxy: ProxyEndpoint | None = None,
    ) -> Launch:
        """The launch of ``argv`` (``executable``: the absolute path of ``argv[0]``) with
        cwd ``tree``.

        ``private`` is a fresh directory of kdev's, deleted after the run; the scratch
        directory (and, in the fallback, HOME and TMPDIR) are made inside it.
        ``readonly`` are further files the reviewer reads (the prompt file). ``proxy``
        (bwrap only; elsewhere the proxy listens on host loopback): no network, the
        proxy's socket bound in and the reviewer run under the bridge.
        """
        scratch = private / "scratch"
        scratch.mkdir(mode=0o700)
        environment = dict(env)
        environment[SCRATCH_ENV] = str(scratch)
        if self.kind == "bwrap":
            return self._bwrap(
                [executable, *argv[1:]], tree, environment, scratch, readonly, network, proxy
            )
        if self.kind == "fallback":
            return self._fallback(executable, argv, tree, environment, private, scratch, readonly)
        return Launch(executable, argv, environment, str(tree), die_with_parent)

    def _bwrap(
        self,
        argv: list[str],
        tree: Path,
        env: dict[str, str],
        scratch: Path,
        readonly: Iterable[Path],
        network: bool,
        proxy: ProxyEndpoint | None,
    ) -> Launch:
        assert self.bwrap is not None
        self._check_visible(argv[0])
        self._check_visible(os.path.realpath(argv[0]))  # a link into an unbound directory
        env["HOME"] = SANDBOX_HOME
        env["TMPDIR"] = "/tmp"
        args = [self.bwrap, *namespace_flags(self.userns)]
        if not network or proxy is not None:
            args.append("--unshare-net")
        args += _system_binds()
        args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
        args += ["--tmpfs", SANDBOX_HOME]
        for path in self.extra_paths:
            args += ["--ro-bind-try", path, path]
        args += ["--ro-bind", str(tree), str(tree)]
        for file in readonly:
            args += ["--ro-bind", str(file), str(file)]
        args += ["--bind", str(scratch), str(scratch)]
        if proxy is not None:
            bridge, binds = bridge_command(proxy.port)
            args += [*binds, "--ro-bind", str(proxy.socket), BRIDGE_SOCKET]
            argv = [*bridge, argv[0], *argv]
        args += ["--chdir", str(tree), "--", *argv]
        return Launch(self.bwrap, args, env, str(tree), die_with_parent)

    def _check_visible(self, executable: str) -> None:
        if not _under(executable, (*SYSTEM_DIRS, *self.extra_paths)):
            raise ReviewerSpawnError(
                f"reviewer executable {executable} is not visible in the sandbox; "
                "add its directory to sandbox_paths",
                "reviewer_spawn_failed",
            )

    check_visible = _check_visible  # public: kdev config validate checks it too (D74)

    def _fallback(
        self,
        executable: str,
        argv: list[str],
        tree: Path,
        env: dict[str, str],
        private: Path,
        scratch: Path,
        readonly: Iterable[Path],
    ) -> Launch:
        home = private / "home"
        tmp = private / "tmp"
        home.mkdir(mode=0o700)
        tmp.mkdir(mode=0o700)
        env["HOME"] = str(home)
        env["TMPDIR"] = str(tmp)
        if self.uid is not None:
            # The separate uid owns its own directories and may read the prompt; the
            # tree is world-readable (an export of public code), never writable by it.
            private.chmod(0o711)
            for path in (scratch, home, tmp):
                os.chown(path, self.uid, self.uid)
            for path in readonly:
                path.parent.chmod(0o711)
                os.chown(path, self.uid, self.uid)
        # Through the supervisor: the reviewer's whole tree dies with kdev (wrapper.review.reaper).
        uid = "-" if self.uid is None else str(self.uid)
        supervised = [
            sys.executable,
            "-I",
            "-m",
            "wrapper.review.reaper",
            uid,
            "--",
            executable,
            *argv,
        ]
        return Launch(sys.executable, supervised, env, str(tree), die_with_parent)


def probe_bwrap(bwrap: str, *, userns: bool = True) -> str | None:
    """None when ``bwrap`` runs a trivial sandbox with kdev's namespace flags here; else
    why not, in one line."""
    found = shutil.which(bwrap) if "/" not in bwrap else (bwrap if os.path.exists(bwrap) else None)
    if found is None:
        return f"{bwrap} not found"
    flags = namespace_flags(userns)
    argv = [found, *flags, *_system_binds(), "--proc", "/proc", "--dev", "/dev", "true"]
    try:
        result = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=PROBE_TIMEOUT_SECONDS,
            env={"PATH": "/usr/bin:/bin"},
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{found} cannot run: {exc}"
    if result.returncode != 0:
        last = result.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"{found} failed: {last[-1] if last else f'exit {result.returncode}'}"
    return None


def _working_bwrap(bwrap: str, paths: tuple[str, ...]) -> Sandbox | str:
    """The bwrap sandbox (with a user namespace; as root also without one), or why not."""
    problem = probe_bwrap(bwrap)
    userns = True
    if problem is not None and os.geteuid() == 0 and probe_bwrap(bwrap, userns=False) is None:
        userns = False
        log.info(
            "no user namespaces here (%s): bwrap runs reviewers as root without capabilities",
            problem,
        )
    elif problem is not None:
        return problem
    found = shutil.which(bwrap) if "/" not in bwrap else bwrap
    return Sandbox("bwrap", bwrap=found, extra_paths=paths, userns=userns)


_resolved: dict[tuple[str, str, tuple[str, ...], int], Sandbox] = {}
_resolved_lock = threading.Lock()


def resolve_sandbox(
    policy: SandboxPolicy,
    bwrap: str = "bwrap",
    extra_paths: Iterable[str] = (),
    *,
    euid: int | None = None,
) -> Sandbox:
    """The sandbox ``policy`` gives on this machine, probed once per process.

    ``required`` without a working bwrap: ``ConfigError`` ``sandbox_unavailable``;
    ``preferred``: as root, one WARNING naming the reason, then the separate-uid
    fallback; as anyone else, the same refusal. ``euid`` is kdev's effective uid
    (None: ``os.geteuid()``; tests pass another).
    """
    paths = tuple(str(Path(p).expanduser()) for p in extra_paths)
    uid = os.geteuid() if euid is None else euid
    key = (policy, bwrap, paths, uid)
    with _resolved_lock:
        if key in _resolved:
            return _resolved[key]
        if policy == "off":
            sandbox = Sandbox("off")
        else:
            working = _working_bwrap(bwrap, paths)
            if isinstance(working, Sandbox):
                sandbox = working
            else:
                sandbox = _fallback(policy, working, uid)
        _resolved[key] = sandbox
        return sandbox


def _fallback(policy: SandboxPolicy, problem: str, euid: int) -> Sandbox:
    """``required``, or ``preferred`` without root: the refusal; ``preferred`` as root:
    the warning and the separate-uid fallback."""
    if policy == "required":
        raise ConfigError(
            f"sandbox: required, but bubblewrap cannot run here ({problem})",
            "sandbox_unavailable",
        )
    if euid != 0:
        raise ConfigError(
            f"sandbox: preferred, but bubblewrap cannot run here ({problem}) and kdev is not "
            "root (no separate uid for the fallback): install bubblewrap, or set sandbox: off",
            "sandbox_unavailable",
        )
    log.warning(
        "bubblewrap cannot run here (%s): reviewers run in the fallback "
        "(uid %d, no_new_privs, scrubbed env, private HOME)",
        problem,
        SANDBOX_UID,
    )
    return Sandbox("fallback", reason=problem, uid=SANDBOX_UID)
