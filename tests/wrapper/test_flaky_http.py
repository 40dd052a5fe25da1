"""Retries where the world is flaky: a real loopback server that fails, then answers."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from tests.httpkit import serving
from tests.wrapper.reviewbench import bench as bench  # noqa: F401 - the fixture
from tests.wrapper.test_review import Bench
from wrapper.config import OpenAIReviewer, WebhookTarget
from wrapper.errors import Outcome, ReviewerSpawnError
from wrapper.notify import Notification, send
from wrapper.retrying import parse_retry_after
from wrapper.review.reviewer import run_reviewer

API_KEY = "sk-test-0123456789abcdef"
ENVIRON = {"OPENAI_API_KEY": API_KEY}


@dataclass
class Step:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Flaky:
    """Answers each request with the next scripted step, then with ``final`` forever."""

    steps: list[Step]
    final: Step
    answer: bytes = b""
    hits: list[float] = field(default_factory=list)
    url: str = ""

    def completion(self, content: str) -> None:
        self.answer = json.dumps(
            {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}
        ).encode()


@pytest.fixture
def flaky() -> Iterator[Flaky]:
    fake = Flaky(steps=[], final=Step(200))
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the http.server API
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with lock:
                fake.hits.append(time.monotonic())
                step = fake.steps.pop(0) if fake.steps else fake.final
            if step.delay:
                time.sleep(step.delay)
            body = fake.answer if step.status == 200 else b'{"error": {"code": "busy"}}'
            try:
                self.send_response(step.status)
                for name, value in step.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up on a slow answer

        def log_message(self, format: str, *args: Any) -> None:
            pass

    with serving(Handler) as base:
        fake.url = f"{base}/v1"
        yield fake


def reviewer(url: str, **settings: Any) -> OpenAIReviewer:
    return OpenAIReviewer(backend="openai", base_url=url, model="gpt-test", **settings)


def test_a_429_then_a_503_then_an_answer_gives_one_verdict(tmp_path: Path, flaky: Flaky) -> None:
    flaky.steps = [Step(429, {"Retry-After": "0"}), Step(503, {"Retry-After": "0"})]
    flaky.completion("Looks fine.\nVERDICT: APPROVE\n")
    result = run_reviewer(reviewer(flaky.url), "p", tmp_path, ENVIRON)
    assert result.verdict == "APPROVE"
    assert len(flaky.hits) == 3


def test_without_retry_after_the_wait_backs_off(tmp_path: Path, flaky: Flaky) -> None:
    flaky.steps = [Step(500), Step(502)]
    flaky.completion("VERDICT: APPROVE")
    result = run_reviewer(reviewer(flaky.url, retry_wait_seconds=0.2), "p", tmp_path, ENVIRON)
    assert result.verdict == "APPROVE"
    first_wait = flaky.hits[1] - flaky.hits[0]
    second_wait = flaky.hits[2] - flaky.hits[1]
    assert first_wait >= 0.2 and second_wait >= 0.4  # 0.2 s, doubled, plus jitter


def test_retry_after_is_honoured(tmp_path: Path, flaky: Flaky) -> None:
    flaky.steps = [Step(429, {"Retry-After": "1"})]
    flaky.completion("VERDICT: APPROVE")
    run_reviewer(reviewer(flaky.url, retry_wait_seconds=0), "p", tmp_path, ENVIRON)
    assert flaky.hits[1] - flaky.hits[0] >= 1.0


def test_a_timeout_is_retried(tmp_path: Path, flaky: Flaky) -> None:
    flaky.steps = [Step(200, delay=2.0)]
    flaky.completion("VERDICT: REQUEST_CHANGES")
    result = run_reviewer(
        reviewer(flaky.url, timeout_seconds=1, retry_wait_seconds=0), "p", tmp_path, ENVIRON
    )
    assert result.verdict == "REQUEST_CHANGES" and len(flaky.hits) == 2


def test_an_endpoint_that_stays_down_fails_after_max_attempts(tmp_path: Path, flaky: Flaky) -> None:
    flaky.final = Step(503, {"Retry-After": "0"})
    with pytest.raises(ReviewerSpawnError) as caught:
        run_reviewer(reviewer(flaky.url, max_attempts=3), "p", tmp_path, ENVIRON)
    assert caught.value.reason == "reviewer_http_error"
    assert "HTTP 503 (busy)" in caught.value.message and API_KEY not in str(caught.value)
    assert len(flaky.hits) == 3


def test_a_retry_after_longer_than_the_cap_is_not_waited_for(tmp_path: Path, flaky: Flaky) -> None:
    flaky.final = Step(429, {"Retry-After": "3600"})
    started = time.monotonic()
    with pytest.raises(ReviewerSpawnError) as caught:
        run_reviewer(reviewer(flaky.url), "p", tmp_path, ENVIRON)
    assert "HTTP 429" in caught.value.message
    assert len(flaky.hits) == 1 and time.monotonic() - started < 5


def test_a_client_error_is_not_retried(tmp_path: Path, flaky: Flaky) -> None:
    flaky.final = Step(400)
    with pytest.raises(ReviewerSpawnError):
        run_reviewer(reviewer(flaky.url), "p", tmp_path, ENVIRON)
    assert len(flaky.hits) == 1


def test_retry_after_as_an_http_date() -> None:
    now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    assert parse_retry_after(format_datetime(now + timedelta(seconds=30), usegmt=True), now) == 30
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after("soon") is None and parse_retry_after(None) is None


def test_a_review_through_a_flaky_endpoint_is_one_leg_and_no_failure(
    bench: Bench,  # noqa: F811 - the imported fixture
    flaky: Flaky,
) -> None:
    flaky.steps = [Step(503, {"Retry-After": "0"}), Step(429, {"Retry-After": "0"})]
    flaky.completion("Fine by me.\nVERDICT: APPROVE\n")
    config = bench.config(
        reviewer={"backend": "openai", "base_url": flaky.url, "model": "gpt-test"}
    )
    pr = bench.sim.open_pr("octo/widgets", "f", {"a.py": "x = 1\n"})
    report = bench.review(pr.number, config=config, environ=ENVIRON)
    assert report.outcome is Outcome.REVIEWED and report.verdict == "APPROVE"
    assert bench.legs() == 1 and len(flaky.hits) == 3
    [note] = bench.notes()
    assert "APPROVE" in note["subject"]


def test_a_webhook_that_fails_twice_is_delivered_once(flaky: Flaky) -> None:
    flaky.steps = [Step(503, {"Retry-After": "0"}), Step(502, {"Retry-After": "0"})]
    note = Notification(subject="s", body="b", fields={})
    errors = send([WebhookTarget(type="webhook", url=flaky.url + "/hook")], note, environ={})
    assert errors == [] and len(flaky.hits) == 3


def test_a_webhook_that_stays_down_reports_the_last_status(flaky: Flaky) -> None:
    flaky.final = Step(503, {"Retry-After": "0"})
    note = Notification(subject="s", body="b", fields={})
    [error] = send([WebhookTarget(type="webhook", url=flaky.url + "/hook")], note, environ={})
    assert "answered HTTP 503" in error and "/hook" not in error and len(flaky.hits) == 3
