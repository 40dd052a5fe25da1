"""Quiet, structured logs: an idle engine says nothing at INFO; JSON times carry a zone.

The contract since issue 25: an engine logs each run it starts and settles (one line
each, tests/engine/test_run_logs.py) and nothing per tick: no run, no line."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import Engine

from engine.clikit import JsonFormatter, TextFormatter
from engine.store.store import Store
from tests.enginekit import logged_engine

LI = str(Path(sys.executable).with_name("li"))
IDLE_WINDOW_SECONDS = 6.0  # more than one heartbeat and recovery pass (5 s) and ~20 syncs


def test_an_idle_engine_logs_nothing_at_info(db: Engine, db_url: str, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "LI_DATABASE_URL": db_url,
        "LI_COMMAND_ALLOWLIST": "true",
        "LI_SYNC_INTERVAL": "0.3",
    }
    subprocess.run(
        [LI, "schedule", "add", "later", "--every", "1h", "--command", "true"],
        env=env,
        check=True,
        capture_output=True,
    )
    log_path = tmp_path / "engine.log"
    with logged_engine(env, log_path):
        store = Store(db)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and "running" not in log_path.read_text():
            time.sleep(0.1)
        startup = log_path.read_text()
        assert "running" in startup, startup
        assert store.list_engines(), "the engine registered no row"
        time.sleep(IDLE_WINDOW_SECONDS)
        idle = log_path.read_text()[len(startup) :]
    assert idle == "", idle
    for line in startup.splitlines():
        record = json.loads(line)
        assert record["level"] == "info"
        assert datetime.fromisoformat(record["time"]).utcoffset() is not None, line


def test_json_and_text_log_times_carry_the_utc_offset() -> None:
    record = logging.LogRecord("li", logging.INFO, __file__, 1, "hello %s", ("you",), None)
    data = json.loads(JsonFormatter().format(record))
    when = datetime.fromisoformat(data["time"])
    assert when.utcoffset() is not None and abs(when.timestamp() - record.created) < 0.001
    text = TextFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s").format(record)
    stamp, rest = text.split(" ", 1)
    assert datetime.fromisoformat(stamp).utcoffset() is not None and rest == "INFO li: hello you"


def test_debug_logging_never_turns_on_httpx_url_lines() -> None:
    from engine.clikit import configure_logging

    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    try:
        configure_logging("debug", "json")
        assert logging.getLogger("apscheduler").level == logging.DEBUG
        assert logging.getLogger("httpx").level == logging.WARNING
        assert logging.getLogger("httpcore").level == logging.WARNING
        configure_logging("info", "text")
        assert logging.getLogger("apscheduler").level == logging.WARNING
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])


def test_an_engine_whose_polls_fire_nothing_logs_no_decision_at_info(
    db: Engine, db_url: str, tmp_path: Path
) -> None:
    """Refused and ignored trigger decisions are DEBUG like every other (issue 18): an
    engine whose mention poll turns away a stranger, a bot and small talk says nothing."""
    from engine.poll.config import validate_poll_config
    from engine.schedules.spec import ScheduleSpec
    from engine.store.models import TriggerType
    from engine.store.pollstore import PollStore
    from ghsim import GitHubSim

    token = "tok-quiet-logs-0123456789"
    with GitHubSim(tmp_path / "sim") as sim:
        sim.add_token(token, ("li-bot", 900))
        sim.create_repo("octo/widgets")
        pr = sim.open_pr("octo/widgets", "f", {"a.py": "1\n"}, author=("forker", 777))
        sim.comment("octo/widgets", pr.number, "@claude review", author=("stranger", 4444))
        sim.comment("octo/widgets", pr.number, "@claude review", author=("ci[bot]", 600))
        sim.comment("octo/widgets", pr.number, "thanks", author=("maint", 501))
        mentions = {"handle": "claude", "allowlist": [501], "self_user_id": 900}
        mentions |= {"verbs": ["review"], "default_verb": "review"}
        trigger = validate_poll_config(
            {"repo": "octo/widgets", "event": "mentions", "mentions": mentions, "backfill": True}
        )
        # Added "five minutes ago", so its first pass is due as soon as the engine runs.
        store = Store(db, lambda: datetime.now(UTC) - timedelta(minutes=5))
        sid = store.add_schedule(
            ScheduleSpec(
                name="mentions",
                trigger_type=TriggerType.GITHUB_POLL,
                trigger_config=trigger.model_dump(mode="json"),
                command="true",
                args=[],
            )
        ).id
        env = {
            **os.environ,
            "LI_DATABASE_URL": db_url,
            "LI_COMMAND_ALLOWLIST": "true",
            "LI_SYNC_INTERVAL": "0.3",
            "GITHUB_API_URL": sim.url,
            "GITHUB_TOKEN": token,
        }
        log_path = tmp_path / "engine.log"
        with logged_engine(env, log_path):
            deadline = time.monotonic() + 30
            while (
                time.monotonic() < deadline
                and PollStore(store).get_state(sid).comments_watermark is None
            ):
                time.sleep(0.2)
            time.sleep(1.0)  # the pass's last lines
    assert PollStore(store).get_state(sid).comments_watermark is not None, "never polled"
    text = log_path.read_text()
    for line in text.splitlines():
        record = json.loads(line)
        assert "reason" not in record and "decision" not in record, line
        for word in ("commenter_not_allowlisted", "author_not_allowlisted", "bot_commenter"):
            assert word not in line, line
