"""Every trigger decision of a github_poll pass is logged once at DEBUG with its reason
code, accepted ones included, and none at INFO (issue 18): the log at DEBUG is a full
audit of a pass, and an idle poller stays quiet at INFO.

Real parts: ghsim over HTTP, the real store (SQLite or PostgreSQL), one real pass."""

from __future__ import annotations

import logging
from collections import Counter

import pytest

from engine.github import GitHubClient
from engine.poll.pollpass import poll_once
from engine.store.pollstore import PollStore
from tests.engine.test_poll_engine import REPO, World, world  # noqa: F401 - the fixture

LOGGER = "engine.poll.pollpass"


def test_every_decision_of_a_pulls_pass_is_logged_once_at_debug_with_its_reason(
    world: World,  # noqa: F811 - the imported fixture
    caplog: pytest.LogCaptureFixture,
) -> None:
    sid = world.add(filters={"draft": False}, max_fires_per_poll=1, backfill=True)
    world.clock.advance(1)
    draft = world.sim.open_pr(REPO, "wip", {"w.py": "1\n"}, draft=True).number
    first = world.sim.open_pr(REPO, "a", {"a.py": "1\n"}).number
    world.clock.advance(1)
    second = world.sim.open_pr(REPO, "b", {"b.py": "1\n"}).number
    world.clock.advance(61)
    ticket = PollStore(world.store).claim_poll(sid, "test-owner", manual=True)
    assert ticket is not None
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    with GitHubClient(world.settings()) as client:
        report = poll_once(PollStore(world.store), world.settings(), client, ticket, "test-owner")
    decided = {d.event.pr_number: d.decision for d in report.decisions}
    assert decided == {draft: "excluded:draft", first: "fired", second: "held"}
    logged = [
        (getattr(r, "pr", None), getattr(r, "reason", None), r.levelno)
        for r in caplog.records
        if r.name == LOGGER and hasattr(r, "decision")
    ]
    assert Counter(logged) == Counter(
        (pr, decision, logging.DEBUG) for pr, decision in decided.items()
    )
    assert [
        r for r in caplog.records if r.name.startswith("engine.poll") and r.levelno >= logging.INFO
    ] == []
