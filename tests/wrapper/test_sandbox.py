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
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.llmkit import FakeUpstream, fake_upstream
from wrapper.config import ApiProxy, CommandReviewer
from wrapper.errors import ConfigError, ReviewerFailed, ReviewerSpawnError, ReviewerTimedOut
from wrapper.leakscan import find_leak
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


def test_required_without_bwrap_refuses_and_preferred_as_root_warns_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    missing = "/nonexistent/bwrap"
    assert probe_bwrap(missing) is not None
    with pytest.raises(ConfigError) as caught:
        resolve_sandbox("required", missing)
    assert caught.value.reason == "sandbox_unavailable"
    assert "\n" not in caught.value.message
    with caplog.at_level(logging.WARNING, logger="kdev.sandbox"):
        first = resolve_sandbox("preferred", missing, ["/opt/x"], euid=0)
        second = resolve_sandbox("preferred", missing, ["/opt/x"], euid=0)
    assert first is second and first.kind == "fallback"
    assert first.uid == SANDBOX_UID  # the fallback is always a separate uid (D65)
    assert len([r for r in caplog.records if "bubblewrap cannot run" in r.message]) == 1
    assert resolve_sandbox("off").kind == "off"
    assert resolve_sandbox("required").kind == "bwrap"


def test_preferred_without_bwrap_and_without_root_refuses_instead_of_a_same_uid_fallback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A same-uid reviewer could read what kdev's user can read (D65): no silent fallback.
    with caplog.at_level(logging.WARNING, logger="kdev.sandbox"):
        with pytest.raises(ConfigError) as caught:
            resolve_sandbox("preferred", "/nonexistent/bwrap", euid=1000)
    assert caught.value.reason == "sandbox_unavailable"
    message = caught.value.message
    assert "\n" not in message and "/nonexistent/bwrap not found" in message
    assert "install bubblewrap, or set sandbox: off" in message
    assert caplog.records == []
    assert resolve_sandbox("off", "/nonexistent/bwrap", euid=1000).kind == "off"


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


# --- the API proxy under bwrap (reviewer.api_proxy, D65) ----------------------------------

PROXY_KEY = "sk-ant-sandbox-key-" + "0a9b8c7d6e5f4321"
PROXY_ENVIRON = {**ENVIRON, "ANTHROPIC_API_KEY": PROXY_KEY}

# Calls the API through the base URL it was given, then reports what it can see.
PROXY_PROBE = r"""
import json, os, socket, sys, urllib.request
def read(path):
    try:
        with open(path, "rb") as handle:
            return handle.read(100_000).decode("utf-8", "replace")
    except OSError as exc:
        return type(exc).__name__
found = {"env": dict(os.environ), "cmdline": read("/proc/self/cmdline"), "proc": {}, "files": {}}
request = urllib.request.Request(
    os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages",
    data=b'{"model": "m"}',
    headers={"x-api-key": os.environ.get("ANTHROPIC_API_KEY", "")},
)
found["answer"] = json.load(urllib.request.urlopen(request, timeout=10))["content"][0]["text"]
for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
    found["proc"][pid] = {n: read(f"/proc/{pid}/{n}") for n in ("environ", "cmdline", "maps")}
# The interpreter's own install is bound in read-only (it may live under /tmp, as a
# clean clone's venv does): not walked, so the harvest stays under kdev's output cap.
skip = tuple(os.path.realpath(p) for p in {sys.prefix, sys.base_prefix})
for root in (os.environ["HOME"], "/tmp", os.environ["KDEV_SCRATCH"], "/run"):
    for dirpath, dirnames, names in os.walk(root):
        dirnames[:] = [
            d for d in dirnames
            if not os.path.realpath(os.path.join(dirpath, d)).startswith(skip)
        ]
        for name in names:
            found["files"][os.path.join(dirpath, name)] = read(os.path.join(dirpath, name))
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2).close()
    found["direct"] = "ok"
except OSError as exc:
    found["direct"] = type(exc).__name__
print(json.dumps(found))
print(found["answer"])
"""


@pytest.fixture
def upstream() -> Any:
    with fake_upstream() as state:
        yield state


def proxied(upstream: FakeUpstream, argv: list[str], **kw: Any) -> CommandReviewer:
    proxy = ApiProxy(
        upstream=upstream.url,
        key_env="ANTHROPIC_API_KEY",
        base_url_env=["ANTHROPIC_BASE_URL"],
        placeholder_env={"ANTHROPIC_API_KEY": "kdev-proxy"},
    )
    return CommandReviewer(argv=argv, api_proxy=proxy, **kw)


def test_bwrap_with_a_proxy_the_upstream_gets_the_key_and_the_reviewer_none(
    tmp_path: Path, upstream: FakeUpstream
) -> None:
    sandbox = bwrap_sandbox(*PYTHON_PATHS)
    tree = tmp_path / "tree"
    tree.mkdir()
    argv = [sys.executable, "-c", PROXY_PROBE, str(upstream.port)]
    # Listed in reviewer_env too (extra_env_names): the key is withheld all the same.
    output = run_reviewer_text(
        proxied(upstream, argv, env_passthrough=["ALLOWED"]),
        "prompt",
        tree,
        PROXY_ENVIRON,
        extra_env_names=["ANTHROPIC_API_KEY"],
        sandbox=sandbox,
    )
    found = json.loads(output.splitlines()[0])
    assert output.rstrip().endswith("VERDICT: APPROVE")
    [seen] = upstream.seen
    assert seen.headers["x-api-key"] == PROXY_KEY and seen.body == b'{"model": "m"}'
    assert found["env"]["ANTHROPIC_API_KEY"] == "kdev-proxy"
    assert found["env"]["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:38411"
    assert found["direct"] != "ok"  # no network: the host's loopback is not there
    assert "/run/kdev/api.sock" in found["files"]  # the socket, and nothing of its directory
    assert len(found["proc"]) >= 2  # it did read the bridge's and its own /proc
    assert find_leak(output, [PROXY_KEY, ENVIRON["GITHUB_TOKEN"]]) is None


def test_without_the_proxy_the_key_is_the_reviewers(tmp_path: Path, upstream: FakeUpstream) -> None:
    # The control of the test above: the same probe, the key passed through, no proxy.
    sandbox = bwrap_sandbox(*PYTHON_PATHS)
    tree = tmp_path / "tree"
    tree.mkdir()
    probe = PROXY_PROBE.replace('os.environ["ANTHROPIC_BASE_URL"]', repr(upstream.url))
    reviewer = CommandReviewer(
        argv=[sys.executable, "-c", probe, str(upstream.port)],
        env_passthrough=["ANTHROPIC_API_KEY"],
    )
    output = run_reviewer_text(reviewer, "p", tree, PROXY_ENVIRON, sandbox=sandbox)
    assert find_leak(output, [PROXY_KEY]) == "raw"


@pytest.mark.parametrize(
    "code",
    ["import sys; sys.exit(7)", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"],
)
def test_the_bridge_keeps_the_reviewers_exit_code_and_signal(
    tmp_path: Path, upstream: FakeUpstream, code: str
) -> None:
    sandbox = bwrap_sandbox(*PYTHON_PATHS)
    tree = tmp_path / "tree"
    tree.mkdir()
    messages = []
    for reviewer in (
        CommandReviewer(argv=[sys.executable, "-c", code]),
        proxied(upstream, [sys.executable, "-c", code]),
    ):
        with pytest.raises(ReviewerFailed) as caught:
            run_reviewer_text(reviewer, "p", tree, PROXY_ENVIRON, sandbox=sandbox)
        messages.append(caught.value.message)
    assert messages[0] == messages[1]


def test_a_timeout_kills_the_reviewer_and_its_daemon_under_the_bridge(
    tmp_path: Path, upstream: FakeUpstream
) -> None:
    marker = f"{os.getpid()}.{uuid.uuid4().int % 10**6}"
    code = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        f"    os.execv('/bin/sleep', ['sleep', '{marker}'])\n"
        "time.sleep(60)\n"
    )
    tree = tmp_path / "tree"
    tree.mkdir()
    reviewer = proxied(upstream, [sys.executable, "-c", code], timeout_seconds=2)
    with pytest.raises(ReviewerTimedOut):
        run_reviewer_text(
            reviewer,
            "p",
            tree,
            PROXY_ENVIRON,
            sandbox=bwrap_sandbox(*PYTHON_PATHS),
            kill_grace_seconds=1,
        )
    deadline = time.monotonic() + 10
    while running_with(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert running_with(marker) == []


def running_with(marker: str) -> list[int]:
    found = []
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(int(pid))
        except OSError:
            continue
    return found
