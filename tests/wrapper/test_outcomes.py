"""kdev's outcome log: every invocation recorded, failures included, bounded per PR."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from wrapper.errors import ConfigError, Outcome, ReviewerFailed
from wrapper.ledger.ledger import DeferredMarker, Ledger
from wrapper.ledger.outcomes import OutcomeEntry, OutcomeLog, keep_from_env, recorded, secret_values
from wrapper.review.review import ReviewReport, ReviewRequest

REPO = "octo/widgets"
SHA = "a" * 40
NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def request(tmp_path: Path, pr: int = 7) -> ReviewRequest:
    return ReviewRequest(repo=REPO, pr=pr, head_sha=SHA, checkout=tmp_path)


def test_the_log_stays_bounded_and_keeps_the_newest(tmp_path: Path) -> None:
    log = OutcomeLog(Ledger(tmp_path / "reviews"), keep=5)
    for i in range(53):
        log.append(REPO, 7, OutcomeEntry(NOW + timedelta(minutes=i), "review-pr", "reviewed",
                                         "reviewed", SHA, detail=str(i)))  # fmt: skip
        lines = log.path(REPO, 7).read_text().splitlines()
        assert len(lines) <= 10
    entries = log.read(REPO, 7)
    assert entries[-1].detail == "52" and len(entries) >= 5
    assert [int(e.detail) for e in entries] == sorted(int(e.detail) for e in entries)


def test_a_failure_is_recorded_with_its_reason_then_raised(tmp_path: Path) -> None:
    log = OutcomeLog(Ledger(tmp_path / "reviews"))

    def broken() -> ReviewReport:
        raise ReviewerFailed("reviewer sh exited 3: broken", "reviewer_failed")

    with pytest.raises(ReviewerFailed):
        recorded("review-pr", request(tmp_path), log, broken, lambda: NOW)
    [entry] = log.read(REPO, 7)
    assert (entry.outcome, entry.reason, entry.head_sha) == ("failed", "reviewer_failed", SHA)
    assert "exited 3" in entry.detail


def test_a_secret_in_a_failure_message_never_reaches_the_log(tmp_path: Path) -> None:
    log = OutcomeLog(Ledger(tmp_path / "reviews"))
    token = "ghp_not-really-a-token-1234"

    def leaky() -> ReviewReport:
        raise ReviewerFailed(f"reviewer sh exited 1: auth {token} refused", "reviewer_failed")

    secrets = secret_values(["OPENAI_API_KEY"], {"GITHUB_TOKEN": token, "OPENAI_API_KEY": ""})
    with pytest.raises(ReviewerFailed):
        recorded("review-pr", request(tmp_path), log, leaky, lambda: NOW, secrets)
    text = log.path(REPO, 7).read_text()
    assert token not in text and "[redacted]" in text


def test_a_deferral_carries_its_budget_and_reopening(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "reviews")
    reopens = NOW + timedelta(hours=5)
    ledger.write_deferred(REPO, 7, SHA, DeferredMarker("daily_legs_per_repo", 3, 3, reopens,
                                                       SHA, "u", NOW))  # fmt: skip
    log = OutcomeLog(ledger)
    report = ReviewReport(Outcome.DEFERRED_BUDGET, REPO, 7, SHA, detail="daily_legs_per_repo: 3/3")
    assert recorded("review-pr", request(tmp_path), log, lambda: report, lambda: NOW) is report
    [entry] = log.read(REPO, 7)
    assert (entry.outcome, entry.reason, entry.reopens_at) == (
        "deferred_budget",
        "daily_legs_per_repo",
        reopens,
    )


def test_a_malformed_line_is_skipped_not_fatal(tmp_path: Path) -> None:
    log = OutcomeLog(Ledger(tmp_path / "reviews"))
    report = ReviewReport(Outcome.SKIPPED_FORK, REPO, 7, SHA, detail="cross-repository")
    recorded("review-pr", request(tmp_path), log, lambda: report, lambda: NOW)
    with log.path(REPO, 7).open("a") as handle:
        handle.write("{not json\n")
    recorded("describe-pr", request(tmp_path), log, lambda: report, lambda: NOW)
    assert [(e.command, e.reason) for e in log.read(REPO, 7)] == [
        ("review-pr", "skipped_fork"),
        ("describe-pr", "skipped_fork"),
    ]


@pytest.mark.parametrize("value", ["0", "-3", "many"])
def test_a_bad_keep_setting_is_refused(value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        keep_from_env({"KDEV_OUTCOMES_KEEP": value})
    assert caught.value.reason == "invalid_outcomes_keep"


def test_a_torn_last_line_costs_only_itself_and_the_log_is_private(tmp_path: Path) -> None:
    """The outcome log appends through the ledger's one JSONL append (issue 16): a writer
    killed mid-line leaves no newline, and the next entry still starts a line of its own."""
    log = OutcomeLog(Ledger(tmp_path / "reviews"))
    first = OutcomeEntry(NOW, "review-pr", "reviewed", "reviewed", SHA, detail="first")
    log.append(REPO, 7, first)
    path = log.path(REPO, 7)
    with path.open("a") as handle:
        handle.write('{"at": "2026-11-30T09:01:00Z", "command": "rev')  # killed here
    log.append(REPO, 7, OutcomeEntry(NOW, "review-pr", "reviewed", "reviewed", SHA, detail="last"))
    assert [e.detail for e in log.read(REPO, 7)] == ["first", "last"]
    assert path.stat().st_mode & 0o777 == 0o600
