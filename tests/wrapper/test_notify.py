"""Notification targets, with real files, real processes and a real loopback server."""

from __future__ import annotations

import json
import logging
import os
import socket
import sys
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.httpkit import serving
from wrapper.config import CommandTarget, FileTarget, LogTarget, NotifyTarget, WebhookTarget
from wrapper.notify import (
    Notification,
    deferred_notification,
    failure_notification,
    send,
    verdict_notification,
)

PATH = os.pathsep.join([os.path.dirname(sys.executable), "/usr/bin", "/bin"])
ENVIRON = {
    "PATH": PATH,
    "HOME": "/nonexistent-home",
    "LANG": "C.UTF-8",
    "GITHUB_TOKEN": "ghp_not_for_notifiers",
    "OTHER": "x",
}
SENT_AT = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
URL = "https://github.com/octo/widgets/pull/7"
SHA = "c" * 40


def verdict_note() -> Notification:
    return verdict_notification(
        "octo/widgets", 7, "REQUEST_CHANGES", URL, SHA, "/reviews/octo__widgets/pr-7/patch-1.md"
    )


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def is_gone(pid: int) -> bool:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return True
    return fields[0] in ("Z", "X")


def eventually_gone(pid: int, within: float = 5.0) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        if is_gone(pid):
            return True
        time.sleep(0.05)
    return is_gone(pid)


@dataclass
class Receiver:
    """A loopback webhook: records JSON bodies, answers with ``status``."""

    status: int = 204
    bodies: list[Any] = field(default_factory=list)
    url: str = ""


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    fake = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the http.server API
            length = int(self.headers.get("Content-Length", "0"))
            fake.bodies.append(json.loads(self.rfile.read(length)))
            self.send_response(fake.status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    with serving(Handler) as base:
        fake.url = f"{base}/hooks/T000/B000/secret-part"
        yield fake


# --- the notices -------------------------------------------------------------------------


def test_a_verdict_notice_names_repo_pr_verdict_url_head_and_artifact() -> None:
    note = verdict_note()
    assert note.subject == "PR review: octo/widgets #7 REQUEST_CHANGES"
    assert note.body.splitlines() == [
        "VERDICT: REQUEST_CHANGES",
        "PR: 7",
        f"PR_URL: {URL}",
        f"HEAD_SHA: {SHA}",
        "ARTIFACT: /reviews/octo__widgets/pr-7/patch-1.md",
    ]
    assert note.fields == {
        "repo": "octo/widgets",
        "pr": 7,
        "head_sha": SHA,
        "verdict": "REQUEST_CHANGES",
        "pr_url": URL,
        "artifact": "/reviews/octo__widgets/pr-7/patch-1.md",
    }


def test_a_failed_leg_sends_a_failure_notice() -> None:
    note = failure_notification(
        "octo/widgets", 7, "reviewer_timed_out", "reviewer passed its 1200 s timeout", URL, SHA
    )
    assert note.subject == "PR review: octo/widgets #7 FAILURE"
    assert note.body.splitlines()[0] == "FAILURE: reviewer_timed_out"
    assert "reviewer passed its 1200 s timeout" in note.body
    assert "\nPR: 7\n" in note.body and f"PR_URL: {URL}" in note.body
    assert f"HEAD_SHA: {SHA}" in note.body
    assert note.fields["outcome"] == "failure"
    assert note.fields["reason"] == "reviewer_timed_out"


def test_a_budget_deferral_says_which_budget_and_when_it_reopens() -> None:
    reopens = datetime(2024, 5, 2, 9, 30, tzinfo=UTC)
    note = deferred_notification(
        "octo/widgets", 7, "daily_legs_per_repo", 50, 50, reopens, URL, SHA
    )
    assert note.subject == "PR review: octo/widgets #7 DEFERRED"
    assert note.body.splitlines()[:2] == [
        "DEFERRED: budget daily_legs_per_repo (50/50)",
        "REOPENS_AT: 2024-05-02T09:30:00+00:00",
    ]
    assert note.fields["outcome"] == "deferred_budget"
    assert note.fields["reopens_at"] == "2024-05-02T09:30:00+00:00"
    concurrent = deferred_notification(
        "octo/widgets", 7, "max_concurrent_legs_per_repo", 2, 2, None, URL, SHA
    )
    assert "REOPENS_AT: when a running leg ends" in concurrent.body
    assert concurrent.fields["reopens_at"] is None


# --- targets -----------------------------------------------------------------------------


def test_the_log_target_logs_the_subject_and_body(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="kdev.notify"):
        errors = send([LogTarget(type="log")], verdict_note(), environ=ENVIRON)
    assert errors == []
    [record] = caplog.records
    assert record.name == "kdev.notify" and record.levelno == logging.INFO
    assert record.getMessage().startswith("PR review: octo/widgets #7 REQUEST_CHANGES | ")
    assert SHA in record.getMessage()


def test_the_file_target_appends_json_lines_creating_the_directory(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "notices.jsonl"
    target = FileTarget(type="file", path=str(path))
    assert send([target], verdict_note(), environ=ENVIRON, now=SENT_AT) == []
    assert send([target], verdict_note(), environ=ENVIRON) == []
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2
    first = json.loads(lines[0])
    assert first == {
        "subject": "PR review: octo/widgets #7 REQUEST_CHANGES",
        "body": verdict_note().body,
        "fields": verdict_note().fields,
        "sent_at": "2024-05-01T12:00:00+00:00",
    }
    assert datetime.fromisoformat(json.loads(lines[1])["sent_at"]).tzinfo is not None
    assert path.parent.stat().st_mode & 0o777 == 0o700
    assert path.stat().st_mode & 0o777 == 0o600


def test_the_command_target_gets_the_json_on_stdin_and_a_minimal_env(tmp_path: Path) -> None:
    out = tmp_path / "received.json"
    script = tmp_path / "notifier.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import json, os, sys
            note = json.load(sys.stdin)
            with open({str(out)!r}, "w") as handle:
                json.dump({{"note": note, "env": sorted(os.environ), "argv": sys.argv[1:]}},
                          handle)
            """
        ),
        encoding="utf-8",
    )
    target = CommandTarget(type="command", argv=["python3", str(script), "$(touch pwned)", "a b"])
    assert send([target], verdict_note(), environ=ENVIRON, now=SENT_AT) == []
    received = json.loads(out.read_text())
    assert received["note"]["subject"] == "PR review: octo/widgets #7 REQUEST_CHANGES"
    assert received["note"]["fields"]["verdict"] == "REQUEST_CHANGES"
    assert received["note"]["sent_at"] == "2024-05-01T12:00:00+00:00"
    assert received["argv"] == ["$(touch pwned)", "a b"]
    assert set(received["env"]) - {"LC_CTYPE"} == {"PATH", "HOME", "LANG"}


def test_a_command_past_its_timeout_is_killed_with_its_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    script = tmp_path / "slow.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import subprocess, time
            child = subprocess.Popen(["sleep", "60"])
            with open({str(pid_file)!r}, "w") as out:
                out.write(str(child.pid))
            time.sleep(60)
            """
        ),
        encoding="utf-8",
    )
    target = CommandTarget(type="command", argv=["python3", str(script)])
    errors = send([target], verdict_note(), environ=ENVIRON, command_timeout_seconds=1.0)
    assert len(errors) == 1 and "timeout" in errors[0]
    assert pid_file.exists(), "the notifier never started its child"
    assert eventually_gone(int(pid_file.read_text()))


def test_the_webhook_target_posts_json_with_a_text_field(receiver: Receiver) -> None:
    target = WebhookTarget(type="webhook", url=receiver.url)
    assert send([target], verdict_note(), environ=ENVIRON, now=SENT_AT) == []
    [body] = receiver.bodies
    assert body["subject"] == "PR review: octo/widgets #7 REQUEST_CHANGES"
    assert body["fields"]["pr"] == 7
    assert body["text"] == f"{body['subject']}\n{body['body']}"


def test_a_webhook_answering_an_error_fails_without_showing_its_secret_path(
    receiver: Receiver,
) -> None:
    receiver.status = 500
    errors = send(
        [WebhookTarget(type="webhook", url=receiver.url)], verdict_note(), environ=ENVIRON
    )
    [error] = errors
    assert "HTTP 500" in error and "127.0.0.1" in error
    assert "secret-part" not in error


def test_the_webhook_takes_a_transport_seam() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200)

    errors = send(
        [WebhookTarget(type="webhook", url="https://hooks.example/notify")],
        verdict_note(),
        environ=ENVIRON,
        transport=httpx.MockTransport(handler),
    )
    assert errors == []
    assert json.loads(seen[0].content)["fields"]["repo"] == "octo/widgets"


def test_failing_targets_never_hide_the_others(
    tmp_path: Path, receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    failing = tmp_path / "failing.py"
    failing.write_text(
        "import sys\nsys.stdin.read()\nprint('smtp relay refused', file=sys.stderr)\nsys.exit(4)\n",
        encoding="utf-8",
    )
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("", encoding="utf-8")
    delivered = tmp_path / "delivered.jsonl"
    targets: list[NotifyTarget] = [
        CommandTarget(type="command", argv=["python3", str(failing)]),
        WebhookTarget(
            type="webhook", url=f"http://127.0.0.1:{closed_port()}/hook", timeout_seconds=2
        ),
        CommandTarget(type="command", argv=["no-such-notifier"]),
        FileTarget(type="file", path=str(blocker / "notices.jsonl")),
        LogTarget(type="log"),
        FileTarget(type="file", path=str(delivered)),
        WebhookTarget(type="webhook", url=receiver.url),
    ]
    with caplog.at_level(logging.INFO, logger="kdev.notify"):
        errors = send(targets, verdict_note(), environ=ENVIRON)
    assert len(errors) == 4
    assert errors[0].startswith("notify target 0 (command): ")
    assert "exited with code 4: smtp relay refused" in errors[0]
    assert errors[1].startswith("notify target 1 (webhook): POST to 127.0.0.1:")
    assert "ConnectError" in errors[1]
    assert errors[2].startswith("notify target 2 (command): 'no-such-notifier' is not on PATH")
    assert errors[3].startswith("notify target 3 (file): cannot append to ")
    assert len(delivered.read_text().splitlines()) == 1
    assert len(receiver.bodies) == 1
    messages = [
        (record.levelno, record.getMessage())
        for record in caplog.records
        if record.name == "kdev.notify"
    ]
    assert sum(level == logging.INFO for level, _ in messages) == 1
    assert [message for level, message in messages if level == logging.WARNING] == errors
