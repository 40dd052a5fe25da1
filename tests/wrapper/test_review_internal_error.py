"""A review that ends ``internal_error`` (a failure kdev did not name: a bug) sends its
FAILURE notice like every other failure, one line without the error's text (D67)."""

from __future__ import annotations

import json
import subprocess
import uuid

import httpx
import pytest

from tests.wrapper.reviewbench import REPO, Bench, openai_reviewer


def test_an_internal_error_in_the_leg_sends_the_failure_notice(bench: Bench) -> None:
    key = f"sk-canary-{uuid.uuid4().hex}"

    def broken(request: httpx.Request) -> httpx.Response:
        # Not an httpx error: nothing in kdev expects it, so the run ends internal_error.
        raise ValueError(f"transport bug holding {key}\nTraceback (most recent call last):")

    pr = bench.sim.open_pr(REPO, "f", {"a.py": "x = 1\n"})
    config = bench.config(
        reviewer=openai_reviewer("http://127.0.0.1:9/v1"), secret_env=["REVIEWER_KEY"]
    )
    with pytest.raises(ValueError):
        bench.review(
            pr.number,
            config=config,
            environ={"REVIEWER_KEY": key},
            reviewer_transport=httpx.MockTransport(broken),
        )
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


def _failure_notes(bench: Bench) -> list[dict[str, object]]:
    return [n for n in bench.notes() if str(n["subject"]).endswith("FAILURE")]


def test_a_failed_fetch_sends_one_failure_notice(bench: Bench) -> None:
    # Step 2 (the head's patch-id) cannot fetch: no step before the leg sent a notice.
    from wrapper.errors import FetchError

    pr = bench.sim.open_pr(REPO, "f", {"a.py": "x = 1\n"})
    subprocess.run(
        ["git", "-C", str(bench.checkout), "remote", "set-url", "origin", "/nonexistent/x"],
        check=True,
    )
    with pytest.raises(FetchError):
        bench.review(pr.number)
    [note] = _failure_notes(bench)
    assert note["fields"]["reason"] == "fetch_failed"  # type: ignore[index]
    assert bench.ledger().read_index(REPO, pr.number) == {}


def test_no_reviewer_sends_one_failure_notice(bench: Bench) -> None:
    from wrapper.errors import ConfigError

    pr = bench.sim.open_pr(REPO, "f", {"a.py": "x = 1\n"})
    with pytest.raises(ConfigError):
        bench.review(pr.number, config=bench.config(reviewer=None))
    [note] = _failure_notes(bench)
    assert note["fields"]["reason"] == "no_reviewer"  # type: ignore[index]


def test_a_failed_leg_still_sends_exactly_one_notice(bench: Bench) -> None:
    # The leg names its failure and sends the notice itself; review_pr must not add one.
    from wrapper.errors import ReviewerFailed

    pr = bench.sim.open_pr(REPO, "f", {"a.py": "x = 1\n"})
    with pytest.raises(ReviewerFailed):
        bench.review(pr.number, environ={"KDEV_STUB_EXIT": "3"})
    [note] = _failure_notes(bench)
    assert note["fields"]["reason"] == "reviewer_failed"  # type: ignore[index]
