"""`li engine run --once` runs at most LI_POLL_THREADS poll passes at once, as the daemon
does (issue 19); before, it ran up to ``max_concurrent_actions + 2``."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from sqlalchemy import Engine as SAEngine

from engine.github import GitHubClient
from engine.poll.config import validate_poll_config
from engine.run.daemon import Engine
from engine.schedules.spec import ScheduleSpec
from engine.store.models import TriggerType
from engine.store.store import Store
from ghsim import GitHubSim
from tests.engine.test_pacer_limits import CountingTransport
from tests.factories import FakeClock, settings_for


@pytest.mark.parametrize("threads", [1, 3])
def test_once_runs_at_most_li_poll_threads_polls_at_once(
    db: SAEngine, db_url: str, tmp_path: Path, threads: int
) -> None:
    clock = FakeClock()
    token = f"tok-{uuid.uuid4().hex}"
    with GitHubSim(tmp_path / "sim", clock=clock) as sim:
        sim.add_token(token, ("li-bot", 900))
        store = Store(db, clock)
        for index in range(8):
            repo = f"octo/r{index}"
            sim.create_repo(repo)
            config = validate_poll_config({"repo": repo, "poll_interval_seconds": 60})
            store.add_schedule(
                ScheduleSpec(
                    name=f"watch-{index}",
                    trigger_type=TriggerType.GITHUB_POLL,
                    trigger_config=config.model_dump(mode="json"),
                    command="true",
                )
            )
        # Each listing takes 0.3 s, so passes that may overlap do.
        sim.inject_fault("GET", r"/pulls$", delay=0.3, times=None)
        clock.advance(61)
        settings = settings_for(
            db_url,
            github_api_url=sim.url,
            github_token=token,
            github_requests_per_minute=60_000,
            poll_threads_setting=threads,
            max_concurrent_actions=4,
        )
        transport = CountingTransport()
        client = GitHubClient(settings, transport=transport)
        engine = Engine(settings, store, github=client)
        engine.start()
        try:
            engine.run_once()
        finally:
            engine.close()
    assert transport.total >= 8  # every schedule polled
    assert transport.peak == threads
