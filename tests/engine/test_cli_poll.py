"""`li` verbs for github_poll schedules, and the token canary over real console scripts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from ghsim import GitHubSim
from tests.engine.test_cli import Li, one_error_line

LI = str(Path(sys.executable).with_name("li"))
REPO = "octo/widgets"


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[GitHubSim]:
    with GitHubSim(tmp_path / "sim") as running:
        running.create_repo(REPO)
        yield running


@pytest.fixture
def li(db: Engine, db_url: str, sim: GitHubSim) -> Li:
    token = f"tok-{uuid.uuid4().hex}"
    sim.add_token(token, ("li-bot", 900))
    runner = Li(db_url, allow="sh,kdev")
    runner.env.update({"GITHUB_API_URL": sim.url, "GITHUB_TOKEN": token})
    return runner


def add_watch(li: Li, *extra: str) -> None:
    li(
        "schedule",
        "add",
        "watch",
        "--github",
        REPO,
        "--poll-interval",
        "1m",
        "--filter",
        "draft=false",
        "--filter",
        "base=main",
        *extra,
        "--command",
        "sh",
        "--",
        "-c",
        "true",
        "{{ pr_number }}",
        "{{ head_sha }}",
    )


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["--github", "-octo/widgets"], "invalid_repo"),
        (["--github", "octo/.."], "invalid_repo"),
        (["--github", "a" * 40 + "/x"], "invalid_repo"),
        (["--github", REPO, "--filter", "draft=maybe"], "invalid_filter"),
        (["--github", REPO, "--filter", "colour=red"], "invalid_filter"),
        (["--github", REPO, "--filter", "draft=true", "--filter", "draft=false"], "invalid_filter"),
        (["--github", REPO, "--event", "pr_closed"], "invalid_trigger_config"),
        (["--github", REPO, "--page-limit", "4"], "invalid_trigger_config"),
        (["--github", REPO, "--max-fires-per-poll", "0"], "invalid_trigger_config"),
        (["--github", REPO, "--poll-interval", "0s"], "invalid_duration"),
        (["--github", REPO, "--every", "5m"], "invalid_trigger"),
    ],
)
def test_bad_github_options_are_one_line_and_add_nothing(
    li: Li, args: list[str], reason: str
) -> None:
    _, _, err = li("schedule", "add", "watch", *args, "--command", "sh", code=2)
    one_error_line(err, reason)
    assert li.json("schedule", "list") == []


def test_a_github_schedule_shows_its_config_and_seeded_cursor(li: Li) -> None:
    add_watch(li)
    shown = li.json("schedule", "show", "watch")
    assert isinstance(shown, dict)
    config = shown["trigger_config"]
    assert config["repo"] == REPO and config["poll_interval_seconds"] == 60
    assert config["filters"]["draft"] is False and config["filters"]["base"] == "main"
    cursor = li.json("schedule", "cursor", "watch")
    assert isinstance(cursor, dict) and cursor["cursor_at"] is not None


def test_moving_the_cursor_needs_a_reason_and_is_recorded(li: Li) -> None:
    add_watch(li)
    _, _, err = li("schedule", "cursor", "watch", "--set", "2026-01-01T00:00:00Z", code=2)
    one_error_line(err, "reason_required")
    _, _, err = li("schedule", "cursor", "watch", "--set", "yesterday", "--reason", "x", code=2)
    one_error_line(err, "invalid_value")
    _, _, err = li(
        "schedule", "cursor", "watch", "--set", "2026-01-01T00:00:00", "--reason", "x", code=2
    )
    one_error_line(err, "invalid_value")
    moved = li.json(
        "schedule",
        "cursor",
        "watch",
        "--set",
        "2025-06-01T00:00:00Z",
        "--reason",
        "reconcile after outage",
    )
    assert isinstance(moved, dict) and moved["cursor_at"] == "2025-06-01T00:00:00Z"
    detail = li.json("schedule", "run", str(moved["run_id"]))
    assert isinstance(detail, dict) and detail["reason"] == "cursor_set"
    assert detail["trigger_context"]["reason"] == "reconcile after outage"


def test_cursor_of_a_cron_schedule_is_refused(li: Li) -> None:
    li("schedule", "add", "c", "--cron", "0 * * * *", "--command", "sh")
    _, _, err = li("schedule", "cursor", "c", code=2)
    one_error_line(err, "not_github_poll")


def test_preview_lists_events_and_argv_without_firing_or_moving_the_cursor(
    li: Li, sim: GitHubSim
) -> None:
    add_watch(li)
    before = li.json("schedule", "cursor", "watch")
    sim.advance(5)
    pr = sim.open_pr(REPO, "feature", {"a.py": "1\n"})
    sim.open_pr(REPO, "wip", {"b.py": "1\n"}, draft=True)
    preview = li.json("schedule", "preview", "watch")
    assert isinstance(preview, dict)
    events = {e["pr_number"]: e for e in preview["events"]}
    assert events[pr.number]["decision"] == "would_fire"
    assert events[pr.number]["argv"] == ["sh", "-c", "true", str(pr.number), pr.head_sha]
    assert events[pr.number + 1]["decision"] == "excluded:draft"
    assert events[pr.number + 1]["dispatchable"] is False
    assert li.json("schedule", "cursor", "watch") == before
    assert li.json("schedule", "runs") == []
    _, out, _ = li("schedule", "preview", "watch")
    assert "would_fire" in out and "excluded:draft" in out


def test_health_reports_never_polled_then_healthy(li: Li, sim: GitHubSim) -> None:
    add_watch(li)
    [first] = li.json("schedule", "health")  # type: ignore[misc]
    assert first["state"] == "never_polled"
    li("schedule", "trigger", "watch")
    li("engine", "run", "--once")
    [after] = li.json("schedule", "health", "watch")  # type: ignore[misc]
    assert after["state"] == "healthy" and after["counters"]["polls"] == 1
    _, out, _ = li("schedule", "health")
    assert "watch" in out and "healthy" in out


def test_the_token_never_appears_in_any_output_or_row(
    db: Engine, db_url: str, sim: GitHubSim
) -> None:
    canary = f"ghp_CANARY{uuid.uuid4().hex}"
    env = {
        **os.environ,
        "LI_DATABASE_URL": db_url,
        "LI_COMMAND_ALLOWLIST": "sh",
        "GITHUB_API_URL": sim.url,
        "GITHUB_TOKEN": canary,
    }
    outputs: list[str] = []

    def li(*args: str) -> None:
        result = subprocess.run(
            [LI, *args], env=env, capture_output=True, text=True, check=False, timeout=120
        )
        outputs.extend([result.stdout, result.stderr])

    li("schedule", "add", "watch", "--github", REPO, "--command", "sh", "--", "-c", "true")
    for _ in range(3):  # the canary is not a valid token: 401 three times -> blind
        li("schedule", "trigger", "watch")
        li("engine", "run", "--once")
    li("schedule", "preview", "watch")
    for verb in ("health", "runs", "list"):
        li("schedule", verb, "--json")
    li("engine", "status", "--json")
    health = json.loads(outputs[-8])
    assert health[0]["state"] == "blind"
    with db.connect() as connection:
        for table in (
            "schedules",
            "schedule_runs",
            "engine_instances",
            "poll_states",
            "http_cache",
        ):
            rows = connection.execute(text(f"SELECT * FROM {table}")).all()
            outputs.append(repr(rows))
    outputs.append(repr([r.__dict__ for r in sim.requests]))
    everything = "\n".join(outputs)
    assert "auth_error" in everything
    assert canary not in everything
    assert canary[4:] not in everything


def test_trigger_wait_on_a_github_schedule_polls_and_runs_each_event(
    li: Li, sim: GitHubSim
) -> None:
    add_watch(li)
    sim.advance(5)
    pr = sim.open_pr(REPO, "feature", {"a.py": "1\n"})
    result = li.json("schedule", "trigger", "watch", "--wait")
    assert isinstance(result, dict) and result["status"] == "ok"
    [run] = result["runs"]
    assert run["status"] == "succeeded"
    assert run["argv"] == ["sh", "-c", "true", str(pr.number), pr.head_sha]
    again = li.json("schedule", "trigger", "watch", "--wait")
    assert isinstance(again, dict) and again["runs"] == []


def test_json_logs_carry_the_decision_reason_per_pr(
    db: Engine, db_url: str, sim: GitHubSim
) -> None:
    token = f"tok-{uuid.uuid4().hex}"
    sim.add_token(token, ("li-bot", 900))
    env = {
        **os.environ,
        "LI_DATABASE_URL": db_url,
        "LI_COMMAND_ALLOWLIST": "sh",
        "GITHUB_API_URL": sim.url,
        "GITHUB_TOKEN": token,
    }

    def li(*args: str) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [LI, "--log-format", "json", "--log-level", "debug", *args],
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        return result

    li(
        "schedule",
        "add",
        "m",
        "--github",
        REPO,
        "--event",
        "mentions",
        "--handle",
        "kdev",
        "--allow-user",
        "42",
        "--command",
        "sh",
        "--",
        "-c",
        "true",
    )
    sim.advance(5)
    pr = sim.open_pr(REPO, "feature", {"a.py": "1\n"})
    sim.comment(REPO, pr.number, "@kdev review please", author=("maintainer", 42))
    sim.comment(REPO, pr.number, "@kdev review", author=("stranger", 77))
    sim.comment(REPO, pr.number, "just a note", author=("maintainer", 42))
    li("schedule", "trigger", "m")
    stderr = li("engine", "run", "--once").stderr
    records = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    decisions = sorted((r["pr"], r["reason"]) for r in records if r.get("reason"))
    assert (pr.number, "accepted") in decisions
    assert (pr.number, "commenter_not_allowlisted") in decisions
    assert (pr.number, "no_mention") in decisions
