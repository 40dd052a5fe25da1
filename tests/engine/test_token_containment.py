"""A hostile process of li's own uid cannot read li's token (issue 24, D66).

Real processes only: ``li engine run`` polls ghsim as uid 65534 and fires a command; a
second process, also uid 65534 (the attacker: a reviewer of the same uid), tries to read
``/proc/<li>/environ``, ``mem``, ``auxv``, ``maps`` and ``fd``. The tests run as root,
which reads any ``/proc``, so both sides drop to 65534 with ``setpriv``. The venv's
interpreter lives under ``/root`` (mode 0700), so each uid-65534 process starts in a
mount namespace of its own where a tmpfs over ``/root`` exposes just the interpreter's
home, ``sys.base_prefix`` (``unshare --mount``: the same pid, the same interpreter, the
real console script).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ghsim import GitHubSim
from tests.enginekit import wait_until

NOBODY = 65534
LI = str(Path(sys.executable).with_name("li"))
REPO = "octo/widgets"
# The /proc files of another process an attacker of the same uid could read: all closed
# to it once li is non-dumpable (cmdline stays world-readable: li never puts a secret there).
PROC_FILES = ("environ", "mem", "auxv", "maps")

# Runs as root in a private mount namespace, then becomes uid 65534 and execs "$@".
# $PYHOME: the interpreter's home when it is under /root (0700): a tmpfs over /root
# shows only that directory.
AS_NOBODY = """set -e
umask 022
if [ -n "$PYHOME" ]; then
    mkdir -p "$STAGE"
    mount --bind "$PYHOME" "$STAGE"
    mount -t tmpfs -o mode=0755 tmpfs /root
    mkdir -p "$PYHOME"
    mount --move "$STAGE" "$PYHOME"
fi
exec setpriv --reuid 65534 --regid 65534 --clear-groups "$@"
"""
PYHOME = sys.base_prefix if Path(sys.base_prefix).is_relative_to("/root") else ""

PROBE = """
import json, os, sys
pid, token, names = sys.argv[1], sys.argv[2].encode(), sys.argv[3].split(",")
found = {}
for name in names:
    try:
        with open(f"/proc/{pid}/{name}", "rb") as handle:
            data = handle.read(1 << 20)
        found[name] = "token" if token in data else "read"
    except OSError as exc:
        found[name] = type(exc).__name__
try:
    os.listdir(f"/proc/{pid}/fd")
    found["fd"] = "listed"
except OSError as exc:
    found["fd"] = type(exc).__name__
print(json.dumps({"uid": os.getuid(), "found": found}))
"""


@dataclass
class Nobody:
    """A directory uid 65534 can reach, and the way to start processes as that uid."""

    root: Path
    state: Path  # owned by 65534: the database, the recorder, HOME
    script: Path

    def argv(self, *command: str) -> list[str]:
        return ["unshare", "--mount", "--propagation", "private", "sh", str(self.script), *command]

    def env(self, **extra: str) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", os.defpath),
            "HOME": str(self.state),
            "LANG": "C.UTF-8",
            "STAGE": str(self.root / f"stage-{uuid.uuid4().hex}"),
            "PYHOME": PYHOME,
            **extra,
        }

    def run(self, *command: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv(*command), env=self.env(**env), capture_output=True, text=True, timeout=120
        )

    def probe(self, pid: int, token: str) -> dict[str, str]:
        """What the attacker (uid 65534) read of process ``pid``'s /proc files."""
        done = self.run(sys.executable, "-c", PROBE, str(pid), token, ",".join(PROC_FILES))
        assert done.returncode == 0, done.stderr
        answer = json.loads(done.stdout)
        assert answer["uid"] == NOBODY
        found: dict[str, str] = answer["found"]
        return found


@pytest.fixture
def nobody() -> Iterator[Nobody]:
    for tool in ("unshare", "setpriv", "mount"):
        assert shutil.which(tool), f"{tool} (util-linux) is needed"
    assert os.geteuid() == 0, "the tests start processes as uid 65534"
    root = Path(tempfile.mkdtemp(prefix="li-token-"))
    try:
        root.chmod(0o755)
        state = root / "state"
        state.mkdir(mode=0o700)
        os.chown(state, NOBODY, NOBODY)
        script = root / "as-nobody.sh"
        script.write_text(AS_NOBODY)
        yield Nobody(root, state, script)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def sim(nobody: Nobody) -> Iterator[GitHubSim]:
    with GitHubSim(nobody.root / "sim") as running:
        running.create_repo(REPO)
        yield running


def _nobodys_file(path: Path, text: str) -> Path:
    """A file only uid 65534 reads (mode 0400)."""
    path.write_text(text)
    os.chown(path, NOBODY, NOBODY)
    path.chmod(0o400)
    return path


def _start_engine(nobody: Nobody, sim: GitHubSim, token_env: dict[str, str]) -> Path:
    """Add a github_poll schedule recording its command's environment, trigger it, open
    a pull request; returns the recorder file (the engine is started by the caller)."""
    recorder = nobody.state / "child-env.txt"
    settings = {
        "LI_DATABASE_URL": f"sqlite:///{nobody.state / 'li.db'}",
        "LI_COMMAND_ALLOWLIST": "sh",
        "GITHUB_API_URL": sim.url,
        **token_env,
    }
    added = nobody.run(
        LI, "schedule", "add", "watch", "--github", REPO, "--poll-interval", "10s",
        "--env-passthrough", "GITHUB_TOKEN", "--env-passthrough", "GITHUB_TOKEN_FILE",
        "--env-passthrough", "CREDENTIALS_DIRECTORY",
        "--command", "sh", "--", "-c", f'env > {recorder}.tmp && mv {recorder}.tmp {recorder}',
        "{{ pr_number }}",
        **settings,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    sim.advance(5)
    sim.open_pr(REPO, "feature", {"a.py": "1\n"})
    return recorder


def _engine(nobody: Nobody, sim: GitHubSim, token_env: dict[str, str]) -> subprocess.Popen[str]:
    settings = {
        "LI_DATABASE_URL": f"sqlite:///{nobody.state / 'li.db'}",
        "LI_COMMAND_ALLOWLIST": "sh",
        "GITHUB_API_URL": sim.url,
        "LI_SYNC_INTERVAL": "0.2",
        **token_env,
    }
    log = (nobody.root / "engine.log").open("w")
    with log:
        return subprocess.Popen(
            nobody.argv(LI, "--log-level", "warning", "engine", "run"),
            env=nobody.env(**settings),
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=30)


@pytest.mark.parametrize("source", ["variable", "file"])
def test_a_process_of_lis_uid_cannot_read_its_token(
    nobody: Nobody, sim: GitHubSim, source: str
) -> None:
    token = f"ghs_{uuid.uuid4().hex}"
    sim.add_token(token, ("li-token-bot", 900))
    if source == "variable":
        token_env = {"GITHUB_TOKEN": token}
    else:
        token_file = _nobodys_file(nobody.state / "github-token", f"{token}\n")
        token_env = {"GITHUB_TOKEN_FILE": str(token_file)}
    recorder = _start_engine(nobody, sim, token_env)
    engine = _engine(nobody, sim, token_env)
    try:
        # The engine polled with the token (ghsim knows whose it is) and fired the command.
        assert wait_until(recorder.exists, timeout=90), (nobody.root / "engine.log").read_text()
        assert any(r.user == "li-token-bot" for r in sim.requests)
        assert engine.poll() is None
        assert Path(f"/proc/{engine.pid}/status").read_text().count(f"\t{NOBODY}\t") >= 2

        found = nobody.probe(engine.pid, token)
        assert found == dict.fromkeys((*PROC_FILES, "fd"), "PermissionError")

        exec_environ = Path(f"/proc/{engine.pid}/environ").read_bytes()  # as root
        child = recorder.read_text()
        if source == "file":
            # Not even in the environment li was started with, nor in its command's.
            assert token.encode() not in exec_environ and b"GITHUB_TOKEN=" not in exec_environ
            assert token not in child and f"GITHUB_TOKEN_FILE={token_file}" in child
        else:  # the weaker way: the exec environment holds it (root sees it)
            assert token.encode() in exec_environ and f"GITHUB_TOKEN={token}" in child
    finally:
        _stop(engine)


def test_the_attacker_reads_a_dumpable_process_of_its_uid(nobody: Nobody) -> None:
    """The control: without PR_SET_DUMPABLE 0, the same attacker reads the token."""
    token = f"ghs_{uuid.uuid4().hex}"
    victim = subprocess.Popen(
        nobody.argv(sys.executable, "-c", "import time; time.sleep(60)"),
        env=nobody.env(GITHUB_TOKEN=token),
        start_new_session=True,
    )
    try:
        status = Path(f"/proc/{victim.pid}/status")
        assert wait_until(lambda: f"\t{NOBODY}\t" in status.read_text(), timeout=30)
        time.sleep(0.5)  # past setpriv's exec of the interpreter
        found = nobody.probe(victim.pid, token)
        assert found["environ"] == "token" and found["maps"] == "read"
        assert found["fd"] == "listed"
    finally:
        victim.kill()
        victim.wait(timeout=30)
