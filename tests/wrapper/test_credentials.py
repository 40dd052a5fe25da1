"""kdev at start: non-dumpable, the token read into memory from its sources and removed
from the environment children inherit; secrets masked in every log line."""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from engine.config import Settings
from wrapper.config import WebhookTarget
from wrapper.config_env import github_settings
from wrapper.credentials import take_github_token
from wrapper.errors import ConfigError
from wrapper.leakscan import webhook_secrets
from wrapper.logredact import REDACTOR, install
from wrapper.notify import Notification, send

TOKEN = "ghs_0123456789abcdef0123456789abcdef"


def test_the_variable_wins_and_every_token_variable_is_removed(tmp_path: Path) -> None:
    file = tmp_path / "token"
    file.write_text("from-the-file-123\n")
    environ = {"GITHUB_TOKEN": TOKEN, "GH_TOKEN": "other", "GITHUB_TOKEN_FILE": str(file), "X": "1"}
    assert take_github_token(environ) == TOKEN
    assert environ == {"X": "1"}


def test_a_token_file_and_a_systemd_credential_are_sources(tmp_path: Path) -> None:
    file = tmp_path / "token"
    file.write_text(f"  {TOKEN}\n")
    environ = {"GITHUB_TOKEN_FILE": str(file)}
    assert take_github_token(environ) == TOKEN and environ == {}
    credentials = tmp_path / "creds"
    credentials.mkdir()
    (credentials / "github_token").write_text(TOKEN)
    assert take_github_token({"CREDENTIALS_DIRECTORY": str(credentials)}) == TOKEN
    assert take_github_token({"CREDENTIALS_DIRECTORY": str(tmp_path / "none")}) is None
    assert take_github_token({}) is None


@pytest.mark.parametrize("content", [None, "", "  \n"])
def test_an_unreadable_or_empty_token_file_is_a_one_line_error(
    tmp_path: Path, content: str | None
) -> None:
    file = tmp_path / "token"
    if content is not None:
        file.write_text(content)
    with pytest.raises(ConfigError) as caught:
        take_github_token({"GITHUB_TOKEN_FILE": str(file)})
    assert caught.value.reason == "token_file_unreadable" and "\n" not in caught.value.message


def test_the_github_client_reads_a_token_file_as_settings_does(tmp_path: Path) -> None:
    """kdev's light settings reader defers to Settings when the token is in a file."""
    file = tmp_path / "token"
    file.write_text(f"{TOKEN}\n")
    credentials = tmp_path / "creds"
    credentials.mkdir()
    (credentials / "github_token").write_text(TOKEN)
    for environ in ({"GITHUB_TOKEN_FILE": str(file)}, {"CREDENTIALS_DIRECTORY": str(credentials)}):
        assert github_settings(environ).github_token == TOKEN
        assert Settings.from_env(environ).github_token == TOKEN
    with pytest.raises(ConfigError):  # kdev's own error class, li's reason code
        take_github_token({"GITHUB_TOKEN_FILE": str(tmp_path / "missing")})


def test_kdev_is_non_dumpable_and_its_children_never_inherit_the_token() -> None:
    script = """
import ctypes, json, os, subprocess
from wrapper.credentials import harden_process, kdev_environ
harden_process()
libc = ctypes.CDLL(None)
child = subprocess.run(["env"], capture_output=True, text=True).stdout
print(json.dumps({"dumpable": libc.prctl(3, 0, 0, 0, 0), "child": child,
                  "kept": kdev_environ().get("GITHUB_TOKEN")}))
"""
    result = subprocess.run(
        [sys.executable, "-c", script],
        env={"PATH": "/usr/bin:/bin", "GITHUB_TOKEN": TOKEN, "GH_TOKEN": TOKEN},
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    found = json.loads(result.stdout)
    assert found["dumpable"] == 0
    assert TOKEN not in found["child"] and "GH_TOKEN" not in found["child"]
    assert found["kept"] == TOKEN


@pytest.fixture
def webhook() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the http.server API
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self.send_response(204)
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hooks/T0001/B0002/s3cretPathPart"
    server.shutdown()
    server.server_close()


def test_webhook_urls_never_reach_a_log_line(webhook: str) -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        logging.getLogger("httpx").setLevel(logging.INFO)
        install()
        REDACTOR.add(webhook_secrets(webhook))  # as the CLI does via known_secrets
        errors = send(
            [WebhookTarget(type="webhook", url=webhook)], Notification("s", "b"), environ={}
        )
        assert errors == []
        logging.getLogger("kdev.test").warning("posting to %s failed", webhook)
        logging.getLogger("kdev.test").info("path /%s", webhook.split("/", 3)[3])
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
    logged = stream.getvalue()
    assert "posting to *** failed" in logged and "path ***" in logged
    assert "s3cretPathPart" not in logged and "HTTP Request" not in logged
