"""A schedule's retry policy: a failed run is tried again as attempts of one fire."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from engine.errors import InvalidInput
from engine.schedules.dump import dump_schedule_set
from engine.schedules.schedulefile import load_schedule_set
from tests.engine.test_cli import Li

# Fails until it has been run three times (the count lives in a file).
FLAKY = 'n=$(cat "$1" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$1"; [ $n -ge 3 ]'


@pytest.fixture
def li(db: Engine, db_url: str) -> Li:
    return Li(db_url)


def runs_of(li: Li, name: str) -> list[dict[str, Any]]:
    runs = li.json("schedule", "runs", name)
    assert isinstance(runs, list)
    return sorted(runs, key=lambda r: r["id"])


def add(li: Li, name: str, counter: Path, *retry: str) -> None:
    li("schedule", "add", name, "--every", "1h", "--command", "sh", *retry, "--",
       "-c", FLAKY, "flaky", str(counter))  # fmt: skip


def test_a_command_failing_twice_under_retry_shows_three_attempts_and_succeeds(
    li: Li, tmp_path: Path
) -> None:
    add(li, "flaky", tmp_path / "n", "--retry-max-attempts", "3", "--retry-backoff", "1s")
    _, out, _ = li("schedule", "trigger", "flaky", "--wait")
    assert "succeeded" in out
    runs = runs_of(li, "flaky")
    assert [(r["status"], r["attempt"]) for r in runs] == [
        ("failed", 1),
        ("failed", 2),
        ("succeeded", 3),
    ]
    first = runs[0]["id"]
    assert [r["fire_id"] for r in runs] in ([None, first, first], [first, first, first])
    started = [r["started_at"] for r in runs]
    assert started == sorted(started)
    assert (tmp_path / "n").read_text().strip() == "3"


def test_without_a_policy_a_failure_is_one_attempt(li: Li, tmp_path: Path) -> None:
    add(li, "once", tmp_path / "n")
    code, out, _ = li("schedule", "trigger", "once", "--wait", code=None)
    assert code == 7 and "failed" in out
    assert [r["attempt"] for r in runs_of(li, "once")] == [1]


def test_attempts_stop_at_max_attempts_and_the_fire_fails(li: Li, tmp_path: Path) -> None:
    add(li, "short", tmp_path / "n", "--retry-max-attempts", "2", "--retry-backoff", "1s")
    code, _, _ = li("schedule", "trigger", "short", "--wait", code=None)
    assert code == 7
    assert [(r["status"], r["attempt"]) for r in runs_of(li, "short")] == [
        ("failed", 1),
        ("failed", 2),
    ]


def test_a_bad_retry_policy_is_one_line(li: Li) -> None:
    _, _, err = li("schedule", "add", "x", "--every", "1h", "--command", "true",
                   "--retry-max-attempts", "0", code=2)  # fmt: skip
    assert "[invalid_value]" in err and len(err.strip().splitlines()) == 1
    _, _, err = li("schedule", "add", "x", "--every", "1h", "--command", "true",
                   "--retry-backoff", "2h", code=2)  # fmt: skip
    assert "[duration_too_long]" in err


def test_the_schedule_file_takes_retry_and_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "schedules.yaml"
    path.write_text(
        "version: 1\nowner: me\nschedules:\n"
        "  - name: nightly\n    cron: '0 3 * * *'\n    command: 'true'\n"
        "    retry: {max_attempts: 4, backoff: 2m}\n"
    )
    specs = load_schedule_set(path).schedules
    assert (specs[0].retry_max_attempts, specs[0].retry_backoff_seconds) == (4, 120)
    again = tmp_path / "again.yaml"
    again.write_text(dump_schedule_set("me", specs))
    assert load_schedule_set(again).schedules == specs


def test_a_bad_retry_in_the_file_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "schedules.yaml"
    path.write_text(
        "version: 1\nowner: me\nschedules:\n"
        "  - name: nightly\n    cron: '0 3 * * *'\n    command: 'true'\n"
        "    retry:\n      max_attempts: 2\n      backoff: soon\n"
    )
    with pytest.raises(InvalidInput) as caught:
        load_schedule_set(path)
    assert f"{path}:9:" in str(caught.value)
