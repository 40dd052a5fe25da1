"""A review that ends ``internal_error`` (a failure kdev did not name: a bug) sends its
FAILURE notice like every other failure, one line without the error's text (D67)."""

from __future__ import annotations

import json
import os
import uuid

import httpx
import pytest

from engine.config import Settings
from engine.github.client import GitHubClient
from tests.wrapper.reviewbench import REPO, ROOT, Bench
from wrapper.review.review import ReviewContext, ReviewRequest, review_pr


def test_an_internal_error_in_the_leg_sends_the_failure_notice(bench: Bench) -> None:
    key = f"sk-canary-{uuid.uuid4().hex}"

    def broken(request: httpx.Request) -> httpx.Response:
        # Not an httpx error: nothing in kdev expects it, so the run ends internal_error.
        raise ValueError(f"transport bug holding {key}\nTraceback (most recent call last):")

    pr = bench.sim.open_pr(REPO, "f", {"a.py": "x = 1\n"})
    config = bench.config(
        reviewer={
            "backend": "openai",
            "base_url": "http://127.0.0.1:9/v1",
            "model": "m",
            "api_key_env": "REVIEWER_KEY",
            "max_attempts": 1,
        },
        secret_env=["REVIEWER_KEY"],
    )
    environ = {"PATH": os.environ["PATH"], "HOME": str(bench.root), "PYTHONPATH": str(ROOT)}
    settings = Settings(github_api_url=bench.sim.url, github_token=bench.token)
    with GitHubClient(settings) as client:
        ctx = ReviewContext(
            config=config,
            ledger=bench.ledger(),
            github=client,
            environ={**environ, "REVIEWER_KEY": key, "GITHUB_TOKEN": bench.token},
            reviewer_transport=httpx.MockTransport(broken),
        )
        req = ReviewRequest(repo=REPO, pr=pr.number, head_sha=pr.head_sha, checkout=bench.checkout)
        with pytest.raises(ValueError):
            review_pr(req, ctx)
    [note] = bench.notes()
    assert note["subject"] == f"PR review: {REPO} #{pr.number} FAILURE"
    assert note["fields"]["reason"] == "internal_error"
    assert note["fields"]["head_sha"] == pr.head_sha
    assert note["fields"]["message"] == (
        "internal error (ValueError); the run's output has the details"
    )
    text = json.dumps(note)
    assert key not in text and "Traceback" not in text and "transport bug" not in text
    assert bench.ledger().read_index(REPO, pr.number) == {}  # nothing recorded as reviewed
