"""``kdev pr-status``: ledger rounds + GitHub feedback, threads and CI (ghsim over HTTP),
and the CLI commands end to end through the typer app."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from engine.config import Settings
from engine.github import GitHubClient, RequestPacer
from ghsim import GitHubSim
from ghsim.model import node_id
from wrapper.authorloop.pr_status import ci_summary, pr_status
from wrapper.cli.app import app
from wrapper.ledger.ledger import IndexEntry, Ledger, VerdictRecord

REPO = "octo/widgets"
T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


@pytest.fixture
def sim() -> Iterator[GitHubSim]:
    with GitHubSim() as running:
        running.add_token("tok-status", ("author-agent", 501))
        running.create_repo(REPO, files={"app.py": "print('hi')\n"})
        yield running


@pytest.fixture
def client(sim: GitHubSim) -> Iterator[GitHubClient]:
    settings = Settings(github_api_url=sim.url, github_token="tok-status")
    with GitHubClient(settings, pacer=RequestPacer(1_000_000)) as made:
        yield made


def add_round(
    ledger: Ledger, pr: int, n: int, verdict: str, body: str, carried: list[str] = ()
) -> str:
    head, patch = f"{n:x}" * 40, f"{n + 8:x}" * 40
    when = T0 + timedelta(hours=n)
    ledger.write_verdict(
        REPO,
        pr,
        VerdictRecord(verdict, "http://x/pull/1", head, patch, "main", when, "stub", body),
    )
    ledger.record_index(REPO, pr, head, IndexEntry(patch, verdict, when))
    for other in carried:
        ledger.record_index(REPO, pr, other, IndexEntry(patch, verdict, when, carried_from=head))
    return head


def test_pr_status_joins_rounds_feedback_threads_and_ci(
    sim: GitHubSim, client: GitHubClient, tmp_path: Path
) -> None:
    pr = sim.open_pr(REPO, "feature", {"a.py": "x = 1\n"})
    ledger = Ledger(tmp_path)
    add_round(ledger, pr.number, 1, "REQUEST_CHANGES", "- [P1] the lock leaks")
    add_round(ledger, pr.number, 2, "APPROVE", "- [P3] naming", carried=["c" * 40])
    sim.comment(REPO, pr.number, "![medium] unchecked None", "gemini-code-assist[bot]",
                kind="review", path="a.py", line=1)  # fmt: skip
    sim.comment(REPO, pr.number, "nit: spacing", "alice")
    sim.set_check_run(REPO, pr.head_sha, "tests")
    sim.set_check_run(REPO, pr.head_sha, "lint", status="in_progress")
    status = pr_status(client, ledger, REPO, pr.number)
    assert [r.verdict for r in status.rounds] == ["REQUEST_CHANGES", "APPROVE"]
    assert status.rounds[1].carried_heads == ["c" * 40]
    assert not status.last_two_rounds_clean  # round 1 had a P1
    data = status.to_json()
    assert data["feedback_by_priority"] == {"P1": 0, "P2": 1, "P3": 1}
    assert data["feedback_by_source"] == {"gemini": 1, "human": 1}
    assert data["open_threads"] == 1
    assert data["ci_state"] == "pending" and data["ci"] == {"tests": "pass", "lint": "pending"}
    assert data["posting"] is None  # no roster round, no findings record
    assert "posting integrity: no findings record for the newest round" in status.lines()
    add_round(ledger, pr.number, 3, "APPROVE", "Looks good.")
    assert pr_status(client, ledger, REPO, pr.number).last_two_rounds_clean
    assert any(line.startswith("ci: pending") for line in status.lines())


def test_ci_summary_states() -> None:
    run = {"status": "completed", "conclusion": "success", "name": "a", "id": 1}
    assert ci_summary([]) == ({}, "none")
    assert ci_summary([run])[1] == "passing"
    assert ci_summary([run, {**run, "id": 2, "conclusion": "failure"}])[1] == "failing"


@pytest.fixture
def cli_env(sim: GitHubSim, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    config = tmp_path / "kdev.yaml"
    config.write_text(f"mention_handle: kdev-bot\nreviews_dir: {tmp_path / 'reviews'}\n")
    monkeypatch.setenv("KDEV_CONFIG", str(config))
    monkeypatch.setenv("GITHUB_API_URL", sim.url)
    monkeypatch.setenv("GITHUB_TOKEN", "tok-status")
    return tmp_path


def test_cli_comments_reply_resolve_hide_and_status(sim: GitHubSim, cli_env: Path) -> None:
    runner = CliRunner()
    pr = sim.open_pr(REPO, "feature", {"a.py": "x = 1\n"})
    root = sim.comment(REPO, pr.number, "### Bug: off by one\n\n<!-- **High Severity** -->",
                       "cursor[bot]", kind="review", path="a.py", line=1)  # fmt: skip
    node = node_id("PullRequestReviewComment", root.id)
    base = ["--repo", REPO, "--pr", str(pr.number)]

    listed = runner.invoke(app, ["comments", *base, "--json"])
    assert listed.exit_code == 0, listed.output
    assert json.loads(listed.stdout)["by_priority"]["P1"] == 1

    replied = runner.invoke(app, ["reply", *base, "--comment-id", str(root.id), "Fixed."])
    assert replied.exit_code == 0, replied.output
    assert replied.stdout.startswith("replied: inline")
    resolved = runner.invoke(app, ["resolve", *base, "--node", node])
    assert resolved.exit_code == 0 and resolved.stdout.startswith("resolved: thread")
    hidden = runner.invoke(app, ["hide", "--node", node])
    assert hidden.exit_code == 0 and "outdated" in hidden.output
    assert sim.thread_resolved(REPO, root.id) and sim.minimized(REPO, root.id) == "OUTDATED"

    open_only = runner.invoke(app, ["comments", *base, "--unresolved"])
    assert open_only.exit_code == 0 and "open threads: 0" in open_only.output

    missing = runner.invoke(app, ["resolve", *base, "--node", "MDEyOk5vdGhpbmc5OQ=="])
    assert missing.exit_code == 1
    assert missing.output.strip().endswith("[thread_not_found]")

    status = runner.invoke(app, ["pr-status", *base, "--json"])
    assert status.exit_code == 0, status.output
    assert json.loads(status.stdout)["open_threads"] == 0

    bad = runner.invoke(app, ["watch", *base, "--interval", "soon"])
    assert bad.exit_code == 2 and "[invalid_interval]" in bad.output
