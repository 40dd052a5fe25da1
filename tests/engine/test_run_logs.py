"""Runs are logged (issue 25): one line as a run starts, one as it ends, the failure at
WARNING with its status, reason and exit code; an idle engine still says nothing."""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from engine.run.actions import end_level
from engine.store.models import RunStatus
from engine.store.store import FinishedRun, Store
from tests.enginekit import logged_engine
from tests.factories import interval_spec

LI = str(Path(sys.executable).with_name("li"))
IDLE_WINDOW_SECONDS = 4.0  # more than ten syncs (0.3 s), heartbeats and recovery passes


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _run_lines(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r.get("phase") in ("start", "end")]


def test_each_run_logs_one_start_and_one_end_line_and_idle_stays_silent(
    db: Engine, db_url: str, tmp_path: Path
) -> None:
    # Added two hours ago with an hourly interval: both are due once as the engine starts.
    store = Store(db, lambda: datetime.now(UTC) - timedelta(hours=2))
    store.add_schedule(interval_spec(name="works", every=3600, command="true", args=[]))
    store.add_schedule(
        interval_spec(name="breaks", every=3600, command="sh", args=["-c", "exit 3"])
    )
    env = {
        **os.environ,
        "LI_DATABASE_URL": db_url,
        "LI_COMMAND_ALLOWLIST": "true,sh",
        "LI_SYNC_INTERVAL": "0.3",
    }
    log_path = tmp_path / "engine.log"
    reader = Store(db)
    with logged_engine(env, log_path):
        deadline = time.monotonic() + 30
        while (
            time.monotonic() < deadline
            and len([r for r in _run_lines(_records(log_path)) if r["phase"] == "end"]) < 2
        ):
            time.sleep(0.1)
        time.sleep(0.5)  # anything a settled run might still log
        busy = log_path.read_text()
        time.sleep(IDLE_WINDOW_SECONDS)
        idle = log_path.read_text()[len(busy) :]
    assert idle == "", idle
    lines = _run_lines(_records(log_path))
    runs = {
        run.schedule_name: run for name in ("works", "breaks") for run in reader.list_runs(name)
    }
    assert set(runs) == {"works", "breaks"}, runs
    for name, run in runs.items():
        mine = [r for r in lines if r["schedule"] == name]
        assert [r["phase"] for r in mine] == ["start", "end"], mine
        assert all(r["run_id"] == run.id for r in mine), mine
        assert "pr" not in mine[0]  # a timed fire has no pull request
    works_end = next(r for r in lines if r["schedule"] == "works" and r["phase"] == "end")
    assert works_end["level"] == "info" and works_end["status"] == "succeeded"
    assert works_end["exit_code"] == 0 and works_end["reason"] is None
    breaks_end = next(r for r in lines if r["schedule"] == "breaks" and r["phase"] == "end")
    assert breaks_end["level"] == "warning", breaks_end
    assert (breaks_end["status"], breaks_end["reason"], breaks_end["exit_code"]) == (
        "failed",
        "nonzero_exit",
        3,
    )
    assert (
        f"run {runs['breaks'].id} of breaks ended: failed (nonzero_exit, exit 3)"
        in (breaks_end["message"])
    )


@pytest.mark.parametrize(
    ("status", "reason", "level"),
    [
        (RunStatus.SUCCEEDED, None, logging.INFO),
        (RunStatus.CANCELLED, "engine_shutdown", logging.INFO),
        (RunStatus.FAILED, "nonzero_exit", logging.WARNING),
        (RunStatus.TIMED_OUT, "deadline_exceeded", logging.WARNING),
        (RunStatus.REFUSED, "command_not_allowlisted", logging.WARNING),
        (RunStatus.CANCELLED, "fenced", logging.WARNING),
    ],
)
def test_every_ending_but_success_and_a_requested_stop_is_a_warning(
    status: RunStatus, reason: str | None, level: int
) -> None:
    assert end_level(FinishedRun(status=status, reason=reason)) == level
