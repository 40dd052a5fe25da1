"""Acceptance of issue 12: a hostile reviewer under real `kdev review-pr` against ghsim.

The reviewer (tests/hostile_reviewer.py) hunts for the token in kdev's /proc, the
checkout's .git, HOME dotfiles and its environment; plants core.fsmonitor and hooks;
daemonises a child; sends its harvest to a loopback server; prints its API key encoded.
bwrap is required (CI installs it): these tests fail where it is missing.
"""

from __future__ import annotations

import base64
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from demo.run_demo import setup_pipeline
from ghsim import GitHubSim
from tests.llmkit import FakeUpstream, fake_upstream
from wrapper.leakscan import find_leak

REPO = "octo/widgets"
BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[2]
HOSTILE = ROOT / "tests" / "hostile_reviewer.py"
API_KEY = "sk-ant-reviewer-key-" + "7f3a9c1e5b2d4086"
BOT_ID = 5000


@dataclass
class Exfil:
    """The attacker's loopback server: what the reviewer managed to send out."""

    url: str = ""
    bodies: list[bytes] = field(default_factory=list)


@pytest.fixture
def exfil() -> Iterator[Exfil]:
    sink = Exfil()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the http.server API
            sink.bodies.append(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            self.send_response(204)
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    sink.url = f"http://127.0.0.1:{server.server_address[1]}/loot"
    yield sink
    server.shutdown()
    server.server_close()


@dataclass
class Scene:
    sim: GitHubSim
    root: Path
    checkout: Path
    token: str
    env: dict[str, str]
    marker: str
    pwned: Path
    pr: int
    head: str

    def kdev(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(BIN / "kdev"), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def review_args(self) -> list[str]:
        return [
            "review-pr",
            *("--repo", REPO, "--pr", str(self.pr), "--head-sha", self.head),
            *("--checkout", str(self.checkout)),
        ]

    def survivors(self) -> list[int]:
        found = []
        for pid in (p for p in os.listdir("/proc") if p.isdigit()):
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if self.marker.encode() in cmdline and state not in ("Z", "X"):
                found.append(int(pid))
        return found

    def wait_until_gone(self, within: float = 10.0) -> list[int]:
        end = time.monotonic() + within
        while self.survivors() and time.monotonic() < end:
            time.sleep(0.1)
        return self.survivors()


def write_config(scene: Scene, exfil: Exfil, form: str, **extra: Any) -> None:
    scene.env["HOSTILE_EXFIL_URL"] = exfil.url
    scene.env["HOSTILE_LEAK_FORM"] = form
    config = {
        "reviewer": {
            "backend": "command",
            "argv": [sys.executable, "-P", str(HOSTILE)],
            "model": "hostile",
            "timeout_seconds": 60,
            "env_passthrough": ["ANTHROPIC_API_KEY"],  # no proxy: the reviewer holds the key
        },
        "reviewer_env": [name for name in scene.env if name.startswith("HOSTILE_")],
        "sandbox": "required",
        "sandbox_paths": [sys.prefix, sys.base_prefix, str(HOSTILE.parent)],
        "mention_handle": "kdev",
        "notify": [
            {"type": "file", "path": str(scene.root / "notifications.jsonl")},
            {"type": "github-comment"},
        ],
        **extra,
    }
    path = scene.root / "kdev.yaml"
    path.write_text(json.dumps(config))
    scene.env["KDEV_CONFIG"] = str(path)


@pytest.fixture
def scene(tmp_path: Path) -> Iterator[Scene]:
    token = f"ghs_{uuid.uuid4().hex}{uuid.uuid4().hex[:8]}"
    with GitHubSim(tmp_path / "github") as sim:
        sim.add_token(token, ("review-bot", BOT_ID))
        sim.create_repo(REPO, files={"app.py": "print('hi')\n"})
        checkout, env = setup_pipeline(sim, REPO, tmp_path, token)
        # Where a CI checkout keeps a token, and where gh keeps one.
        header = base64.b64encode(f"x-access-token:{token}".encode()).decode()
        with (checkout / ".git" / "config").open("a") as config:
            config.write(
                f'[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic {header}\n'
            )
            config.write(
                f'[remote "gh"]\n\turl = https://x-access-token:{token}@github.com/{REPO}\n'
            )
        home = tmp_path / "home"
        (home / ".config" / "gh").mkdir(parents=True)
        (home / ".config" / "gh" / "hosts.yml").write_text(
            f"github.com:\n    oauth_token: {token}\n    user: review-bot\n"
        )
        pwned = tmp_path / "pwned"
        evil = tmp_path / "evil.sh"
        evil.write_text(f"#!/bin/sh\ntouch {pwned}\ncat >/dev/null 2>&1\n")
        evil.chmod(0o755)
        marker = f"{random.randint(100000, 999999)}.{random.randint(1000, 9999)}"
        env.update(
            HOME=str(home),
            ANTHROPIC_API_KEY=API_KEY,
            HOSTILE_CHECKOUT=str(checkout),
            HOSTILE_KDEV_HOME=str(home),
            HOSTILE_EVIL_SCRIPT=str(evil),
            HOSTILE_MARKER=marker,
        )
        pr = sim.open_pr(REPO, "feature", {"util.py": "def f():\n    return 1\n"})
        scene = Scene(sim, tmp_path, checkout, token, env, marker, pwned, pr.number, pr.head_sha)
        try:
            yield scene
        finally:
            for pid in scene.survivors():
                os.kill(pid, signal.SIGKILL)


def posted(scene: Scene) -> list[str]:
    return [c.body for c in scene.sim.comments(REPO) if c.user.id == BOT_ID]


def verdict_texts(scene: Scene) -> list[str]:
    return [p.read_text() for p in (scene.root / "reviews").rglob("patch-*.md")]


def notifications(scene: Scene) -> str:
    path = scene.root / "notifications.jsonl"
    return path.read_text() if path.exists() else ""


def assert_contained(scene: Scene, exfil: Exfil, config_before: str) -> None:
    """The reviewer found the token nowhere, planted nothing, left nothing running."""
    [loot] = exfil.bodies
    harvest = json.loads(loot)
    assert harvest["env"]["HOME"] == "/home/reviewer"  # it did run, in the sandbox
    assert len(harvest["proc"]) > 2 and harvest["files"]  # and it did look around
    # shapes=False: what it read may rightly hold token-shaped examples (this project's
    # own test files, bound in with the interpreter of an editable install).
    assert find_leak(loot.decode(), [scene.token], shapes=False) is None
    assert scene.token[4:20] not in loot.decode()
    assert all(v != "written" for v in harvest["planted"].values()), harvest["planted"]
    assert (scene.checkout / ".git" / "config").read_text() == config_before
    assert not list((scene.checkout / ".git" / "hooks").glob("post-checkout"))
    assert scene.wait_until_gone() == []
    # kdev's next git calls in the checkout run nothing the reviewer wrote.
    again = scene.kdev("reviewers", "--repo-root", str(scene.checkout), "--pr", str(scene.pr))
    assert again.returncode == 0, again.stderr
    assert not scene.pwned.exists()


def test_a_hostile_reviewer_finds_nothing_and_a_clean_review_is_posted(
    scene: Scene, exfil: Exfil
) -> None:
    before = (scene.checkout / ".git" / "config").read_text()
    write_config(scene, exfil, "none")
    token_file = scene.root / "token"  # the token from a file this time, not a variable
    token_file.write_text(scene.env.pop("GITHUB_TOKEN") + "\n")
    scene.env["GITHUB_TOKEN_FILE"] = str(token_file)
    result = scene.kdev(*scene.review_args(), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["outcome"] == "reviewed"
    assert_contained(scene, exfil, before)
    everything = [*posted(scene), *verdict_texts(scene), notifications(scene), result.stderr]
    assert len(posted(scene)) == 1 and verdict_texts(scene)
    assert find_leak(everything, [scene.token, API_KEY]) is None


@pytest.mark.parametrize(
    "form", ["raw", "base64", "hex", "reversed", "spaced", "url", "stderr-base64"]
)
def test_an_encoded_secret_reaches_no_verdict_comment_notification_or_log(
    scene: Scene, exfil: Exfil, form: str
) -> None:
    before = (scene.checkout / ".git" / "config").read_text()
    write_config(scene, exfil, form)
    result = scene.kdev(*scene.review_args())
    assert result.returncode != 0
    expected = "secret_in_output" if form == "raw" else "secret_leak"
    assert f"[{expected}]" in result.stderr.strip().splitlines()[-1]
    assert posted(scene) == [] and verdict_texts(scene) == []
    notes = [json.loads(line) for line in notifications(scene).splitlines()]
    assert [n["fields"]["reason"] for n in notes] == [expected]
    assert notes[0]["subject"].endswith("FAILURE")
    leaks = find_leak([notifications(scene), result.stderr, result.stdout], [API_KEY, scene.token])
    assert leaks is None
    assert_contained(scene, exfil, before)


SYSTEM_PYTHON = "/usr/bin/python3"
# The fallback as root: bwrap unusable, the reviewer as uid 65534 under wrapper.review.reaper
# (65534 cannot run the test's interpreter under /root, so the system one runs it).
FALLBACK = {
    "sandbox": "preferred",
    "sandbox_bwrap": "/nonexistent/bwrap",
    "reviewer": {
        "backend": "command",
        "argv": [SYSTEM_PYTHON, "-P", str(HOSTILE)],
        "model": "hostile",
        "timeout_seconds": 60,
        "env_passthrough": ["ANTHROPIC_API_KEY"],
    },
}
needs_root_fallback = pytest.mark.skipif(
    os.geteuid() != 0 or not os.path.exists(SYSTEM_PYTHON),
    reason="the separate-uid fallback needs root and a system Python",
)


@pytest.mark.parametrize("kind", ["bwrap", pytest.param("fallback", marks=needs_root_fallback)])
def test_no_reviewer_process_survives_kill_9_of_kdev(scene: Scene, exfil: Exfil, kind: str) -> None:
    scene.env["HOSTILE_HANG"] = "1"
    write_config(scene, exfil, "none", **(FALLBACK if kind == "fallback" else {}))
    kdev = subprocess.Popen(
        [str(BIN / "kdev"), *scene.review_args()],
        env=scene.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        end = time.monotonic() + 30
        while not exfil.bodies and time.monotonic() < end:
            time.sleep(0.05)
        assert exfil.bodies, "the reviewer never started"
        assert scene.survivors(), "the daemonised child is not running"
        kdev.kill()
        kdev.wait(timeout=10)
        assert scene.wait_until_gone() == []
    finally:
        if kdev.poll() is None:
            kdev.kill()


def test_sandbox_required_without_bwrap_refuses_with_one_line(scene: Scene, exfil: Exfil) -> None:
    write_config(scene, exfil, "none", sandbox_bwrap="/nonexistent/bwrap")
    result = scene.kdev(*scene.review_args())
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and last.endswith("[sandbox_unavailable]")
    assert exfil.bodies == [] and posted(scene) == []
    assert "sandbox_unavailable" in notifications(scene)


@needs_root_fallback
def test_the_root_fallback_contains_the_hostile_reviewer_too(scene: Scene, exfil: Exfil) -> None:
    before = (scene.checkout / ".git" / "config").read_text()
    write_config(scene, exfil, "none", **FALLBACK)
    result = scene.kdev(*scene.review_args(), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["outcome"] == "reviewed"
    assert "bubblewrap cannot run here" in result.stderr  # said once, at the start
    assert result.stderr.count("bubblewrap cannot run here") == 1
    [loot] = exfil.bodies
    harvest = json.loads(loot)
    assert harvest["env"]["HOME"] != scene.env["HOME"]  # a private HOME, not kdev's
    assert find_leak(loot.decode(), [scene.token], shapes=False) is None
    assert all(v != "written" for v in harvest["planted"].values()), harvest["planted"]
    assert (scene.checkout / ".git" / "config").read_text() == before
    assert scene.wait_until_gone() == []  # the daemon went with the reviewer (reaper)
    assert find_leak([*posted(scene), *verdict_texts(scene)], [scene.token, API_KEY]) is None


# --- issue 24: behind kdev's API proxy the reviewer holds no key (D65) ---------------------


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    with fake_upstream() as state:
        yield state


def write_proxy_config(
    scene: Scene, exfil: Exfil, upstream: FakeUpstream, *, fallback: bool = False
) -> str:
    """The hostile reviewer behind the proxy; a fresh key of this test only (other runs'
    reviewers on this machine hold the module's API_KEY). Returns the key."""
    key = f"sk-ant-{uuid.uuid4().hex}{uuid.uuid4().hex[:8]}"
    scene.env["ANTHROPIC_API_KEY"] = key
    scene.env["HOSTILE_UPSTREAM_PORT"] = str(upstream.port)
    python = SYSTEM_PYTHON if fallback else sys.executable
    reviewer = {
        "backend": "command",
        "argv": [python, "-P", str(HOSTILE)],
        "model": "hostile",
        "timeout_seconds": 60,
        "api_proxy": {
            "upstream": upstream.url,
            "key_env": "ANTHROPIC_API_KEY",
            "header": "x-api-key",
            "base_url_env": ["ANTHROPIC_BASE_URL"],
            "placeholder_env": {"ANTHROPIC_API_KEY": "kdev-proxy"},
        },
    }
    where = (
        {"sandbox": "preferred", "sandbox_bwrap": "/nonexistent/bwrap"}
        if fallback
        else {"sandbox": "required"}
    )
    write_config(scene, exfil, "raw", reviewer=reviewer, **where)
    return key


def proxied_review(scene: Scene, upstream: FakeUpstream, key: str) -> tuple[dict[str, Any], str]:
    """Run the review; the harvest the reviewer sent upstream, and everything kdev said."""
    result = scene.kdev(*scene.review_args(), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["outcome"] == "reviewed"
    # The upstream saw one request, the harvest, with the real key; nothing else got there.
    assert [(s.method, s.path) for s in upstream.seen] == [("POST", "/v1/messages")]
    [seen] = upstream.seen
    assert seen.headers["x-api-key"] == key and "authorization" not in seen.headers
    loot = seen.body.decode()
    assert find_leak(loot, [key, scene.token], shapes=False) is None
    assert key[7:23] not in loot and scene.token[4:20] not in loot
    harvest = json.loads(loot)
    assert harvest["env"]["ANTHROPIC_API_KEY"] == "kdev-proxy"
    attacks = harvest["attacks"]
    for name in ("connect", "absolute", "foreign_host"):
        assert attacks["proxy"][name].startswith("HTTP/1.1 403"), attacks["proxy"]
    assert any(isinstance(hits, list) for hits in attacks["mem"].values())  # it did read some
    said = [*posted(scene), *verdict_texts(scene), notifications(scene), result.stderr]
    assert len(posted(scene)) == 1 and "debug: x kdev-proxy" in posted(scene)[0]
    assert find_leak([*said, result.stdout], [key, scene.token]) is None
    assert "api proxy POST /v1/messages -> 200" in result.stderr
    assert "api proxy refused CONNECT evil.example:443: HTTP 403" in result.stderr
    assert scene.wait_until_gone() == []
    return harvest, result.stderr


def test_behind_the_proxy_in_bwrap_the_hostile_reviewer_finds_no_key(
    scene: Scene, exfil: Exfil, upstream: FakeUpstream
) -> None:
    key = write_proxy_config(scene, exfil, upstream)
    harvest, _ = proxied_review(scene, upstream, key)
    attacks = harvest["attacks"]
    assert harvest["env"]["HOME"] == "/home/reviewer"  # in bwrap
    assert attacks["direct_upstream"].startswith("<")  # no network in the sandbox
    assert harvest["exfil"].startswith("<") and exfil.bodies == []
    assert attacks["socket_dir"]["/run/kdev"] == ["api.sock"]  # the socket, not its directory
    assert len(attacks["mem"]) >= 2  # bwrap's init, the bridge and itself; nothing of kdev's


@needs_root_fallback
def test_behind_the_proxy_in_the_root_fallback_the_hostile_reviewer_finds_no_key(
    scene: Scene, exfil: Exfil, upstream: FakeUpstream
) -> None:
    key = write_proxy_config(scene, exfil, upstream, fallback=True)
    harvest, stderr = proxied_review(scene, upstream, key)
    assert stderr.count("bubblewrap cannot run here") == 1
    assert harvest["env"]["HOME"] != scene.env["HOME"]
    # The documented weaker mode: the host's network (it reaches the upstream, keyless)...
    assert harvest["attacks"]["direct_upstream"] == "connected"
    assert harvest["exfil"] == "sent"
    # ...but no key in what it sent anywhere, and no memory of kdev's to read.
    assert find_leak([b.decode() for b in exfil.bodies], [key, scene.token], shapes=False) is None
    kdev_mem = [v for v in harvest["attacks"]["mem"].values() if v == "<PermissionError>"]
    assert kdev_mem


@pytest.mark.parametrize("kind", ["bwrap", pytest.param("fallback", marks=needs_root_fallback)])
def test_as_a_github_app_the_hostile_reviewer_finds_neither_key_nor_installation_token(
    scene: Scene, exfil: Exfil, kind: str
) -> None:
    """Issue 30: kdev reviews as an App; the reviewer is told where the private key and
    the shared installation token are kept, and finds neither."""
    from engine.github.tokencache import TokenCache
    from tests.appkit import install_app
    from wrapper.leakscan import app_secrets

    app = install_app(scene.sim, scene.root / "github")
    cache = scene.root / "state" / "app-token.json"
    scene.env.pop("GITHUB_TOKEN")
    scene.env.update(
        GITHUB_APP_ID=str(app.app.id),
        GITHUB_APP_PRIVATE_KEY_FILE=str(app.key_file),
        GITHUB_APP_INSTALLATION_ID=str(app.installation.id),
        GITHUB_APP_TOKEN_CACHE=str(cache),
        HOSTILE_SECRET_FILES=f"{app.key_file},{cache}",
    )
    before = (scene.checkout / ".git" / "config").read_text()
    write_config(scene, exfil, "none", **(FALLBACK if kind == "fallback" else {}))
    result = scene.kdev(*scene.review_args(), "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["outcome"] == "reviewed"
    token = TokenCache(cache).read()
    assert token is not None and token.token.startswith("ghs_")
    secrets = app_secrets(scene.env)
    assert token.token in secrets and len(secrets) > 10  # the token and the key's lines
    [loot] = exfil.bodies
    harvest = json.loads(loot)
    assert str(app.key_file) in harvest["files"]  # it did look where they are
    assert find_leak(loot.decode(), secrets, shapes=False) is None
    # Not the words "PRIVATE KEY" or "ghs_": this project's own test files, which an
    # editable install binds in with its interpreter, hold examples of both.
    assert token.token[4:20] not in loot.decode()
    assert not [
        line for line in app.key_file.read_text().splitlines()[1:-1] if line in loot.decode()
    ]
    assert all(v != "written" for v in harvest["planted"].values()), harvest["planted"]
    assert (scene.checkout / ".git" / "config").read_text() == before
    bot = [c for c in scene.sim.comments(REPO) if c.user.login == f"{app.app.slug}[bot]"]
    assert len(bot) == 1
    everything = [c.body for c in bot] + verdict_texts(scene) + [notifications(scene)]
    assert find_leak([*everything, result.stderr, result.stdout], secrets) is None
