"""kdev's human output of GitHub text is terminal-safe; ``--json`` keeps it exact
(issue 24). An attacker's comment body, login, file path, check name and a reviewer's
verdict text carry ESC sequences (CSI, OSC 52, OSC 8), 8-bit C1 controls and bidi
controls; each command runs against ghsim through the typer app."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ghsim import GitHubSim
from tests.termsafe_kit import HOSTILE, forbidden
from wrapper.cli.app import app
from wrapper.ledger.ledger import IndexEntry, Ledger, VerdictRecord

REPO = "octo/widgets"
LOGIN = "mallory\u202e"
CHECK = "lint\x1b]8;;http://evil\x1b\\ok\x1b]8;;\x1b\\\u202e"


@pytest.fixture
def sim() -> Iterator[GitHubSim]:
    with GitHubSim() as running:
        running.add_token("tok-safe", ("author-agent", 501))
        running.create_repo(REPO, files={"a.py": "x = 0\n"})
        yield running


@pytest.fixture
def cli_env(sim: GitHubSim, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    config = tmp_path / "kdev.yaml"
    config.write_text(f"mention_handle: kdev-bot\nreviews_dir: {tmp_path / 'reviews'}\n")
    monkeypatch.setenv("KDEV_CONFIG", str(config))
    monkeypatch.setenv("GITHUB_API_URL", sim.url)
    monkeypatch.setenv("GITHUB_TOKEN", "tok-safe")
    return tmp_path / "reviews"


def hostile_pr(sim: GitHubSim) -> int:
    pr = sim.open_pr(REPO, "feature", {"a.py": "x = 1\n"})
    sim.comment(REPO, pr.number, HOSTILE, LOGIN)
    sim.comment(REPO, pr.number, HOSTILE, (LOGIN, 777), kind="review", path="a.py", line=1)
    sim.set_check_run(REPO, pr.head_sha, CHECK, conclusion="failure")
    return pr.number


def run(*args: str, code: int = 0) -> str:
    """The command's stdout and stderr (stdout alone with ``--json``)."""
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == code, result.output
    return result.stdout if "--json" in args else result.output


def test_comments_are_escaped_and_json_is_exact(sim: GitHubSim, cli_env: Path) -> None:
    base = ["--repo", REPO, "--pr", str(hostile_pr(sim))]
    shown = run("comments", *base)
    assert forbidden(shown) == []
    assert "@mallory\\u202e" in shown and "fix^[[2Jthis^[]52;c;ZXZpbA==^G" in shown
    items = json.loads(run("comments", *base, "--json"))["items"]
    assert [(i["body"], i["user"]) for i in items] == [(HOSTILE, LOGIN)] * 2


def test_watch_escapes_comments_and_check_names(sim: GitHubSim, cli_env: Path) -> None:
    number = hostile_pr(sim)
    sim.close(REPO, number)
    base = ["watch", "--repo", REPO, "--pr", str(number), "--interval", "1s"]
    shown = run(*base, "--max-duration", "2s")
    assert forbidden(shown) == [] and "[ci] lint^[]8;;http://evil" in shown
    events = [json.loads(line) for line in run(*base, "--json").splitlines()]
    assert {e.get("body") for e in events if e["event"] != "ci"} >= {HOSTILE}
    assert CHECK in {e.get("name") for e in events}


def test_pr_status_and_check_ci_escape_check_names(sim: GitHubSim, cli_env: Path) -> None:
    base = ["--repo", REPO, "--pr", str(hostile_pr(sim))]
    status = run("pr-status", *base)
    failing = run("check-ci", *base, code=18)
    for shown in (status, failing):
        assert forbidden(shown) == [] and "lint^[]8;;http://evil^[\\ok" in shown
    assert CHECK in json.loads(run("pr-status", *base, "--json"))["ci"]
    checks = json.loads(run("check-ci", *base, "--json", code=18))["checks"]
    assert CHECK in {c["name"] for c in checks}


def test_verdict_show_escapes_the_reviewers_text(sim: GitHubSim, cli_env: Path) -> None:
    head, patch = "a" * 40, "b" * 40
    ledger = Ledger(cli_env)
    body = f"- [P2] quoted from the diff: {HOSTILE}\n"
    when = datetime(2026, 1, 1, tzinfo=UTC)
    record = VerdictRecord("APPROVE", "http://x/pull/1", head, patch, "main", when, "stub", body)
    ledger.write_verdict(REPO, 1, record)
    ledger.record_index(REPO, 1, head, IndexEntry(patch, "APPROVE", when))
    shown = run("verdict", "show", REPO, "1")
    assert forbidden(shown) == [] and "quoted from the diff: fix^[[2Jthis" in shown
    text = json.loads(run("verdict", "show", REPO, "1", "--json"))["text"]
    assert HOSTILE.replace("\r", "\n") in text  # a text file: CR is a line end


def test_error_lines_are_escaped(cli_env: Path) -> None:
    shown = run("verdict", "show", REPO, "1", "--head", HOSTILE, code=1)
    assert forbidden(shown) == [] and shown.startswith("error: no verdict for head fix^[[2J")
