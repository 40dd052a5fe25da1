"""The reviewer sandbox (bubblewrap), its fallback and the policy switch, against real
processes. bwrap is required here: CI installs it (.ci/run), so a missing bwrap fails."""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest

from wrapper.config import CommandReviewer
from wrapper.errors import ConfigError, ReviewerSpawnError
from wrapper.review.reviewer import run_reviewer_text
from wrapper.review.sandbox import SANDBOX_HOME, SANDBOX_UID, Sandbox, probe_bwrap, resolve_sandbox

PYTHON_PATHS = (sys.prefix, sys.base_prefix)
ENVIRON = {
    "PATH": os.pathsep.join([os.path.dirname(sys.executable), "/usr/bin", "/bin"]),
    "HOME": "/root",
    "LANG": "C.UTF-8",
    "GITHUB_TOKEN": "ghp_never_in_the_sandbox_0123456789",
    "ALLOWED": "yes",
}

# Reports what the reviewer can see and do, as one JSON line.
PROBE = r"""
import json, os, socket, sys
found = {}
found["uid"] = os.getuid()
found["env"] = dict(os.environ)
found["cwd"] = os.getcwd()
found["home_entries"] = sorted(os.listdir(os.environ["HOME"]))
found["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
def attempt(action):
    try:
        action()
        return "ok"
    except OSError as exc:
        return type(exc).__name__
found["read_secret_file"] = attempt(lambda: open(sys.argv[1]).read())
found["read_parent_environ"] = attempt(lambda: open(f"/proc/{sys.argv[2]}/environ", "rb").read())
found["write_tree"] = attempt(lambda: open("planted.txt", "w").write("x"))
found["write_scratch"] = attempt(
    lambda: open(os.path.join(os.environ["KDEV_SCRATCH"], "notes"), "w").write("x")
)
def connect():
    with socket.create_connection(("127.0.0.1", int(sys.argv[3])), timeout=2):
        pass
found["connect_host_loopback"] = attempt(connect)
status = open("/proc/self/status").read()
found["no_new_privs"] = [l for l in status.splitlines() if l.startswith("NoNewPrivs")]
found["status"] = status
print(json.dumps(found))
"""


@pytest.fixture
def listener() -> Any:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    yield server
    server.close()


def run_probe(
    tmp_path: Path,
    sandbox: Sandbox,
    listener: socket.socket,
    python: str = sys.executable,
    **kw: Any,
) -> Any:
    scripts = tmp_path / "scripts"
    scripts.mkdir(exist_ok=True)
    script = scripts / "probe.py"
    script.write_text(textwrap.dedent(PROBE))
    script.chmod(0o755)
    scripts.chmod(0o755)
    secret_file = tmp_path / "host-secret.txt"
    secret_file.write_text("host secret")
    tree = tmp_path / "tree"
    tree.mkdir(exist_ok=True)
    tree.chmod(0o755)
    reviewer = CommandReviewer(
        argv=[
            python,
            str(script),
            str(secret_file),
            str(os.getpid()),
            str(listener.getsockname()[1]),
        ],
        env_passthrough=["ALLOWED", "GITHUB_TOKEN"],
        **kw,
    )
    output = run_reviewer_text(reviewer, "prompt", tree, ENVIRON, sandbox=sandbox)
    return json.loads(output), tree


def bwrap_sandbox(*extra: str) -> Sandbox:
    """bwrap as kdev would pick it here: a user namespace where they work, else (root)
    none. bwrap itself must work: CI installs it."""
    chosen = resolve_sandbox("required")
    assert chosen.kind == "bwrap" and chosen.bwrap is not None
    return Sandbox("bwrap", bwrap=chosen.bwrap, extra_paths=extra, userns=chosen.userns)


def test_bwrap_hides_the_host_and_the_token(tmp_path: Path, listener: socket.socket) -> None:
    sandbox = bwrap_sandbox(*PYTHON_PATHS, str(tmp_path / "scripts"))
    found, tree = run_probe(tmp_path, sandbox, listener)
    assert found["uid"] == (SANDBOX_UID if sandbox.userns else 0)
    assert "GITHUB_TOKEN" not in found["env"] and found["env"]["ALLOWED"] == "yes"
    assert ENVIRON["GITHUB_TOKEN"] not in json.dumps(found)
    assert found["env"]["HOME"] == SANDBOX_HOME and found["home_entries"] == []
    assert found["cwd"] == str(tree)
    assert max(found["pids"]) < 100 and os.getpid() not in found["pids"]  # own PID namespace
    assert found["read_secret_file"] == "FileNotFoundError"  # tmp_path itself is not bound
    assert found["read_parent_environ"] == "FileNotFoundError"
    assert found["write_tree"] == "OSError" and not (tree / "planted.txt").exists()
    assert found["write_scratch"] == "ok"
    assert found["connect_host_loopback"] == "ok"  # the command backend keeps network
    assert found["no_new_privs"] == ["NoNewPrivs:\t1"]


def test_bwrap_without_network_for_a_backend_that_needs_none(
    tmp_path: Path, listener: socket.socket
) -> None:
    sandbox = bwrap_sandbox(*PYTHON_PATHS, str(tmp_path / "scripts"))
    found, _ = run_probe(tmp_path, sandbox, listener, network=False)
    assert found["connect_host_loopback"] != "ok"


def test_an_executable_outside_the_bound_paths_is_refused_before_it_runs(tmp_path: Path) -> None:
    sandbox = Sandbox("bwrap", bwrap="/usr/bin/bwrap", extra_paths=())
    tmp_path.joinpath("tree").mkdir()
    reviewer = CommandReviewer(argv=[sys.executable, "-c", "print(1)"])
    if sys.executable.startswith("/usr/"):
        pytest.fail("this test needs an interpreter outside /usr (the venv's)")
    with pytest.raises(ReviewerSpawnError) as caught:
        run_reviewer_text(reviewer, "p", tmp_path / "tree", ENVIRON, sandbox=sandbox)
    assert caught.value.reason == "reviewer_spawn_failed"
    assert "sandbox_paths" in caught.value.message


SYSTEM_PYTHON = "/usr/bin/python3"


@pytest.mark.skipif(os.geteuid() != 0, reason="the separate uid is the root fallback")
@pytest.mark.skipif(not os.path.exists(SYSTEM_PYTHON), reason="needs a Python nobody can run")
def test_the_fallback_as_root_promises_uid_no_new_privs_env_and_home(
    listener: socket.socket,
) -> None:
    # Like a leg's directory: traversable, not listable, outside root's 0700 pytest dirs.
    base = Path(tempfile.mkdtemp(prefix="kdev-test-fallback-"))
    base.chmod(0o711)
    try:
        found, tree = run_probe(
            base, Sandbox("fallback", uid=SANDBOX_UID), listener, python=SYSTEM_PYTHON
        )
    finally:
        shutil.rmtree(base)
    assert found["uid"] == SANDBOX_UID
    assert found["no_new_privs"] == ["NoNewPrivs:\t1"]
    assert "GITHUB_TOKEN" not in found["env"] and found["env"]["ALLOWED"] == "yes"
    home = found["env"]["HOME"]
    assert home != ENVIRON["HOME"] and found["home_entries"] == []
    assert not Path(home).exists()  # the private HOME went with the run
    assert found["read_parent_environ"] == "PermissionError"
    assert found["write_tree"] == "PermissionError"
    assert found["write_scratch"] == "ok"


def test_required_without_bwrap_refuses_and_preferred_warns_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    missing = "/nonexistent/bwrap"
    assert probe_bwrap(missing) is not None
    with pytest.raises(ConfigError) as caught:
        resolve_sandbox("required", missing)
    assert caught.value.reason == "sandbox_unavailable"
    assert "\n" not in caught.value.message
    with caplog.at_level(logging.WARNING, logger="kdev.sandbox"):
        first = resolve_sandbox("preferred", missing, ["/opt/x"])
        second = resolve_sandbox("preferred", missing, ["/opt/x"])
    assert first is second and first.kind == "fallback"
    assert first.uid == (SANDBOX_UID if os.geteuid() == 0 else None)
    assert len([r for r in caplog.records if "bubblewrap cannot run" in r.message]) == 1
    assert resolve_sandbox("off").kind == "off"
    assert resolve_sandbox("required").kind == "bwrap"


@pytest.mark.skipif(os.geteuid() != 0, reason="bwrap without a user namespace needs root")
def test_bwrap_as_root_without_user_namespaces_drops_every_capability(
    tmp_path: Path, listener: socket.socket
) -> None:
    # What kdev picks as root where user namespaces are off (CI containers often are).
    assert probe_bwrap("bwrap", userns=False) is None
    sandbox = Sandbox(
        "bwrap",
        bwrap="/usr/bin/bwrap",
        extra_paths=(*PYTHON_PATHS, str(tmp_path / "scripts")),
        userns=False,
    )
    found, tree = run_probe(tmp_path, sandbox, listener)
    assert found["uid"] == 0
    status = found["status"]
    # No capability after exec, and none to gain (no_new_privs blocks setuid/file caps).
    assert "CapEff:\t0000000000000000" in status and "CapPrm:\t0000000000000000" in status
    assert found["no_new_privs"] == ["NoNewPrivs:\t1"]
    assert max(found["pids"]) < 100 and os.getpid() not in found["pids"]
    assert found["read_secret_file"] == "FileNotFoundError"
    assert found["write_tree"] == "OSError" and not (tree / "planted.txt").exists()
    assert "GITHUB_TOKEN" not in found["env"] and found["env"]["HOME"] == SANDBOX_HOME


def test_a_link_into_an_unbound_directory_is_refused_too(tmp_path: Path) -> None:
    bound = tmp_path / "bin"
    bound.mkdir()
    (bound / "reviewer").symlink_to(os.path.realpath(sys.executable))
    (tmp_path / "tree").mkdir()
    sandbox = bwrap_sandbox(str(bound))
    reviewer = CommandReviewer(argv=[str(bound / "reviewer"), "-c", "print(1)"])
    with pytest.raises(ReviewerSpawnError) as caught:
        run_reviewer_text(reviewer, "p", tmp_path / "tree", ENVIRON, sandbox=sandbox)
    assert "sandbox_paths" in caught.value.message
