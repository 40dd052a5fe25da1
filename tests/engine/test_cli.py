"""The li command line: verbs, JSON output, one-line errors with reason codes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import Engine
from typer.testing import CliRunner

from engine.cli.app import app
from engine.store import db as dbmod
from engine.store.store import Store

LI = str(Path(sys.executable).with_name("li"))


class Li:
    """Runs `li` in-process against one database with a given allow-list."""

    def __init__(self, url: str, allow: str = "sh,true,echo") -> None:
        self.env = {"LI_DATABASE_URL": url, "LI_COMMAND_ALLOWLIST": allow}
        self.runner = CliRunner()

    def __call__(self, *args: str, code: int | None = 0) -> tuple[int, str, str]:
        result = self.runner.invoke(app, list(args), env=self.env, catch_exceptions=False)
        if code is not None:
            assert result.exit_code == code, (result.stdout, result.stderr)
        return result.exit_code, result.stdout, result.stderr

    def json(self, *args: str) -> object:
        return json.loads(self(*args, "--json")[1])


@pytest.fixture
def li(db: Engine, db_url: str) -> Li:
    return Li(db_url)


def one_error_line(stderr: str, reason: str) -> None:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: ") and lines[0].endswith(f"[{reason}]"), stderr
    assert "Traceback" not in stderr


def test_add_list_show_and_remove_a_schedule(li: Li, tmp_path: Path) -> None:
    li(
        "schedule",
        "add",
        "nightly",
        "--cron",
        "0 3 * * *",
        "--timezone",
        "Europe/Paris",
        "--command",
        "echo",
        "--cwd",
        str(tmp_path),
        "--timeout",
        "10m",
        "--max-runs",
        "5",
        "--env-passthrough",
        "GITHUB_TOKEN",
        "--",
        "--repo",
        "{{ schedule_name }}",
    )
    [listed] = li.json("schedule", "list")  # type: ignore[misc]
    assert listed["name"] == "nightly" and listed["next_fire_at"]
    shown = li.json("schedule", "show", "nightly")
    assert isinstance(shown, dict)
    assert shown["args"] == ["--repo", "{{ schedule_name }}"]
    assert shown["timezone"] == "Europe/Paris" and shown["timeout_seconds"] == 600
    assert shown["env_passthrough"] == ["GITHUB_TOKEN"] and shown["max_runs"] == 5
    _, out, _ = li("schedule", "list")
    assert "nightly" in out and "cron 0 3 * * * Europe/Paris" in out
    li("schedule", "remove", "nightly", "--yes")
    assert li.json("schedule", "list") == []


@pytest.mark.parametrize(
    ("args", "code", "reason"),
    [
        (["--every", "5m", "--command", "curl"], 5, "command_not_allowlisted"),
        (["--every", "5m", "--command", "/bin/sh"], 5, "command_not_allowlisted"),
        (["--every", "5m", "--command", "../sh"], 5, "command_not_allowlisted"),
        (["--every", "5m", "--command", "-sh"], 5, "command_not_allowlisted"),
        (["--cron", "61 * * * *", "--command", "sh"], 2, "invalid_cron"),
        (["--cron", "* * *", "--command", "sh"], 2, "invalid_cron"),
        (
            ["--cron", "0 3 * * *", "--timezone", "Mars/Olympus", "--command", "sh"],
            2,
            "invalid_timezone",
        ),
        (["--every", "0s", "--command", "sh"], 2, "invalid_duration"),
        (["--every=-5m", "--command", "sh"], 2, "invalid_duration"),
        (["--every", "5x", "--command", "sh"], 2, "invalid_duration"),
        (["--every", "5m", "--timeout", "0s", "--command", "sh"], 2, "invalid_duration"),
        (["--every", "5m", "--cron", "* * * * *", "--command", "sh"], 2, "invalid_trigger"),
        (["--command", "sh"], 2, "invalid_trigger"),
        (["--every", "5m", "--command", "sh", "--cwd", "/no/such/dir"], 5, "cwd_missing"),
        (["--every", "5m", "--command", "sh", "--", "{{ unclosed"], 2, "template_syntax"),
        (["--every", "5m", "--command", "sh", "--max-runs", "0"], 2, "invalid_value"),
    ],
)
def test_bad_input_to_add_is_one_line_and_adds_nothing(
    li: Li, args: list[str], code: int, reason: str
) -> None:
    _, _, err = li("schedule", "add", "bad", *args, code=code)
    one_error_line(err, reason)
    assert li.json("schedule", "list") == []


def test_a_bad_schedule_name_is_refused(li: Li) -> None:
    _, _, err = li("schedule", "add", "no spaces", "--every", "5m", "--command", "sh", code=2)
    one_error_line(err, "invalid_name")


def test_adding_a_taken_name_is_a_conflict_and_keeps_the_first(li: Li) -> None:
    li("schedule", "add", "x", "--every", "5m", "--command", "echo", "--", "one")
    _, _, err = li(
        "schedule", "add", "x", "--every", "5m", "--command", "echo", "--", "two", code=4
    )
    one_error_line(err, "schedule_exists")
    shown = li.json("schedule", "show", "x")
    assert isinstance(shown, dict) and shown["args"] == ["one"]


def test_unknown_names_and_runs_are_not_found(li: Li) -> None:
    for args, reason in (
        (["schedule", "show", "ghost"], "schedule_not_found"),
        (["schedule", "runs", "ghost"], "schedule_not_found"),
        (["schedule", "pause", "ghost"], "schedule_not_found"),
        (["schedule", "trigger", "ghost"], "schedule_not_found"),
        (["schedule", "remove", "ghost", "--yes"], "schedule_not_found"),
        (["schedule", "run", "999"], "run_not_found"),
    ):
        _, _, err = li(*args, code=3)
        one_error_line(err, reason)


def test_trigger_wait_fires_now_and_runs_show_the_outcome(li: Li) -> None:
    li("schedule", "add", "ok", "--every", "1h", "--command", "sh", "--", "-c", "echo done")
    li(
        "schedule",
        "add",
        "bad",
        "--every",
        "1h",
        "--command",
        "sh",
        "--",
        "-c",
        "echo oops >&2; exit 4",
    )
    _, out, _ = li("schedule", "trigger", "ok", "--wait")
    assert "succeeded" in out
    code, out, _ = li("schedule", "trigger", "bad", "--wait", code=None)
    assert code == 7 and "failed" in out and "exit 4" in out
    runs = li.json("schedule", "runs")
    assert isinstance(runs, list)
    assert [(r["schedule"], r["status"], r["exit_code"]) for r in runs] == [
        ("bad", "failed", 4),
        ("ok", "succeeded", 0),
    ]
    _, table, _ = li("schedule", "runs", "--status", "failed")
    assert "FAILED" in table and "nonzero_exit" in table and "ok " not in table
    detail = li.json("schedule", "run", str(runs[0]["id"]))
    assert isinstance(detail, dict)
    assert detail["argv"] == ["sh", "-c", "echo oops >&2; exit 4"]
    assert detail["stderr_tail"] == "oops\n"
    assert detail["trigger_context"]["trigger"] == "manual"


def test_trigger_without_wait_makes_the_schedule_due_for_the_engine(li: Li) -> None:
    li("schedule", "add", "later", "--every", "1h", "--command", "true")
    li("schedule", "trigger", "later")
    _, out, _ = li("engine", "run", "--once")
    assert "1 run(s); 0 did not succeed" in out
    [run] = li.json("schedule", "runs", "later")  # type: ignore[misc]
    assert run["status"] == "succeeded"


def test_pause_and_resume(li: Li) -> None:
    li("schedule", "add", "p", "--every", "1h", "--command", "true")
    li("schedule", "pause", "p")
    shown = li.json("schedule", "show", "p")
    assert isinstance(shown, dict) and shown["enabled"] is False
    li("schedule", "resume", "p")
    shown = li.json("schedule", "show", "p")
    assert isinstance(shown, dict) and shown["enabled"] is True


def test_remove_without_yes_and_no_terminal_asks_for_confirmation(li: Li) -> None:
    li("schedule", "add", "keep", "--every", "1h", "--command", "true")
    _, _, err = li("schedule", "remove", "keep", code=2)
    one_error_line(err, "confirmation_required")
    assert len(li.json("schedule", "list")) == 1  # type: ignore[arg-type]


def test_apply_plans_then_applies_all_or_nothing(li: Li, tmp_path: Path) -> None:
    good = tmp_path / "set.yaml"
    good.write_text(
        "version: 1\nowner: ops\nschedules:\n"
        "  - name: a\n    every: 5m\n    command: 'true'\n"
        "  - name: b\n    cron: '0 * * * *'\n    command: echo\n    args: [hi]\n"
    )
    _, out, _ = li("schedule", "apply", str(good), "--dry-run")
    assert "CREATE" in out and "dry run" in out
    assert li.json("schedule", "list") == []
    li("schedule", "apply", str(good))
    names = [s["name"] for s in li.json("schedule", "list")]  # type: ignore[union-attr]
    assert names == ["a", "b"]
    mixed = tmp_path / "mixed.yaml"
    mixed.write_text(
        "version: 1\nowner: ops\nschedules:\n"
        "  - name: a\n    every: 10m\n    command: 'true'\n"
        "  - name: c\n    every: 5m\n    command: curl\n"
    )
    _, out, err = li("schedule", "apply", str(mixed), code=2)
    assert "ERROR" in out and "command_not_allowlisted" in out
    one_error_line(err, "plan_has_errors")
    shown = li.json("schedule", "show", "a")
    assert isinstance(shown, dict) and shown["interval_seconds"] == 300
    assert [s["name"] for s in li.json("schedule", "list")] == ["a", "b"]  # type: ignore[union-attr]
    smaller = tmp_path / "smaller.yaml"
    smaller.write_text(
        "version: 1\nowner: ops\nschedules:\n  - name: a\n    every: 10m\n    command: 'true'\n"
    )
    plan = li.json("schedule", "apply", str(smaller))
    assert isinstance(plan, dict)
    assert [(i["action"], i["name"]) for i in plan["items"]] == [("UPDATE", "a"), ("REMOVE", "b")]
    exported = li("schedule", "export", "--owner", "ops")[1]
    assert "name: a" in exported and "every: 10m" in exported


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (
            "version: 1\nowner: ops\nschedules:\n  - name: a\n    every: 5m\n    command: 'true'\n"
            "    colour: red\n",
            ":7:",
        ),
        (
            "version: 1\nowner: ops\nschedules:\n  - name: a\n    every: 5m\n    command: 'true'\n"
            "    enabled: 'yes'\n",
            ":7:",
        ),
        (
            "version: 1\nowner: ops\nschedules:\n  - name: a\n    every: 5m\n    command: 'true'\n"
            "  - name: a\n    every: 5m\n    command: 'true'\n",
            ":7:",
        ),
    ],
)
def test_a_bad_schedule_file_names_file_and_line_and_changes_nothing(
    li: Li, tmp_path: Path, body: str, needle: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(body)
    _, _, err = li("schedule", "apply", str(path), code=2)
    one_error_line(err, "invalid_schedule_file")
    assert f"{path}{needle}" in err
    assert li.json("schedule", "list") == []


def test_the_example_schedule_file_applies(li: Li) -> None:
    example = Path(__file__).resolve().parents[2] / "schedules.example.yaml"
    li.env["LI_COMMAND_ALLOWLIST"] = "kdev"
    _, out, _ = li("schedule", "apply", str(example))
    assert "applied" in out
    names = {s["name"] for s in li.json("schedule", "list")}  # type: ignore[union-attr]
    assert {"review-prs", "pr-sweep"} <= names


def test_db_current_reports_the_head(li: Li) -> None:
    _, out, _ = li("db", "current")
    assert "(head;" in out


def test_an_unwritable_database_path_is_one_line(tmp_path: Path) -> None:
    locked = tmp_path / "ro"
    locked.mkdir()
    locked.chmod(0o500)
    target = locked / "sub" / "li.db"
    if os.geteuid() == 0:
        # root ignores directory modes; a path under a regular file cannot be created.
        blocker = tmp_path / "file"
        blocker.write_text("")
        target = blocker / "li.db"
    li = Li(f"sqlite:///{target}")
    _, _, err = li("schedule", "list", code=6)
    one_error_line(err, "database_unwritable")


def test_a_malformed_setting_is_one_line() -> None:
    li = Li("sqlite:///:memory:")
    li.env["LI_MAX_CONCURRENT_ACTIONS"] = "many"
    _, _, err = li("schedule", "list", code=2)
    one_error_line(err, "invalid_setting")


def test_postgres_is_never_migrated_implicitly(db_url: str) -> None:
    if dbmod.is_sqlite(db_url):
        li = Li(db_url)
        li("schedule", "list")
        assert dbmod.current_revision(dbmod.make_engine(db_url)) is not None
        return
    li = Li(db_url)
    for args in (["schedule", "list"], ["engine", "run", "--once"]):
        _, _, err = li(*args, code=6)
        one_error_line(err, "schema_not_at_head")
        assert "li db upgrade" in err
    li("db", "upgrade")
    li("schedule", "list")


def test_the_console_script_runs_the_engine_until_sigterm(
    db: Engine, db_url: str, tmp_path: Path
) -> None:
    env = {
        **os.environ,
        "LI_DATABASE_URL": db_url,
        "LI_COMMAND_ALLOWLIST": "sh",
        "LI_SHUTDOWN_GRACE": "0.5",
        "LI_KILL_GRACE": "0.5",
        "LI_SYNC_INTERVAL": "0.3",
    }
    subprocess.run(
        [LI, "schedule", "add", "slow", "--every", "1s", "--command", "sh", "--", "-c", "sleep 60"],
        env=env,
        check=True,
        capture_output=True,
    )
    proc = subprocess.Popen(
        [LI, "engine", "run"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    store = Store(db)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not any(r.pid for r in store.list_runs("slow")):
        time.sleep(0.1)
    assert any(r.pid for r in store.list_runs("slow")), proc.stderr
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr
    statuses = {(r.status, r.reason) for r in store.list_runs("slow")}
    assert ("cancelled", "engine_shutdown") in statuses
    assert all(status != "running" for status, _ in statuses)
