"""Issue 11: durations and timeouts have documented maxima, refused at add and apply."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import Engine

from engine.durations import MAX_TIMEOUT_SECONDS, parse_duration
from engine.errors import InvalidInput
from tests.engine.test_cli import Li, one_error_line


@pytest.fixture
def li(db: Engine, db_url: str) -> Li:
    return Li(db_url)


@pytest.mark.parametrize(
    "args",
    [
        ["--every", "1m", "--timeout", "3000000d"],
        ["--every", "1m", "--timeout", "8d"],
        ["--every", "367d"],
        ["--every", "99999999999999999999999d"],
        ["--github", "octo/widgets", "--poll-interval", "2d"],
    ],
)
def test_add_refuses_a_duration_over_its_maximum(li: Li, args: list[str]) -> None:
    _, _, stderr = li("schedule", "add", "big", *args, "--command", "true", code=2)
    one_error_line(stderr, "duration_too_long")
    assert li.json("schedule", "list") == []


def test_the_maximum_itself_is_accepted(li: Li) -> None:
    li("schedule", "add", "ok", "--every", "366d", "--timeout", "7d", "--command", "true")


@pytest.mark.parametrize(
    ("entry", "line"),
    [("    every: 1m\n    timeout: 3000000d\n", 6), ("    every: 400d\n", 5)],
)
def test_apply_refuses_a_duration_over_its_maximum(
    li: Li, tmp_path: Path, entry: str, line: int
) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "version: 1\nowner: ops\nschedules:\n  - name: a\n" + entry + '    command: "true"\n'
    )
    _, _, stderr = li("schedule", "apply", str(path), code=2)
    one_error_line(stderr, "invalid_schedule_file")
    assert f"s.yaml:{line}:" in stderr and "longer than the maximum" in stderr
    assert li.json("schedule", "list") == []


def test_parse_duration_names_the_maximum() -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_duration("3000000d", what="--timeout")
    assert caught.value.reason == "duration_too_long"
    assert parse_duration("7d", what="--timeout") == MAX_TIMEOUT_SECONDS
