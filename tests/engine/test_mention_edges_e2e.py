"""Issue 29 over HTTP (D98): in a pass whose pulls listing is incomplete (more open pulls
than the pages read, so the open-PR set is unknown and the filter off), a mention on a
plain issue does not fire, while one on a pull request, read or not, still does; the
comment's own page (``html_url``) says which it is."""

from __future__ import annotations

import logging

import pytest

from tests.engine.test_mention_engine import (  # noqa: F401
    HANDLE,
    MAINT,
    REPO,
    World,
    fired,
    reasons,
    world,
)

_ = world  # the shared fixture


def test_a_plain_issue_mention_does_not_fire_while_the_listing_is_incomplete(
    world: World,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
) -> None:
    sid = world.add(pr_opened=False)
    world.clock.advance(1)
    for i in range(301):  # more than the default 3 pages of 100
        world.sim.open_pr(REPO, f"p{i}", {f"p{i}.py": "1\n"})
    issue = world.sim.open_issue(REPO)
    world.clock.advance(5)
    world.sim.comment(REPO, issue, f"@{HANDLE} review", author=MAINT)
    on_pull = world.sim.comment(REPO, 1, f"@{HANDLE} review", author=MAINT)
    caplog.set_level(logging.DEBUG, logger="engine.poll.pollpass")
    runs = fired(world.poll())
    assert [run.trigger_context["comment_id"] for run in runs] == [on_pull.id]
    assert (issue, "not_a_pull") in reasons(caplog)
    assert world.state(sid).open_prs is None  # the set stayed unknown
    assert world.trigger_keys() == [f"mention:{REPO}:1:{on_pull.id}"]


def test_with_a_complete_listing_the_open_pr_set_filters_a_plain_issue(
    world: World,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
) -> None:
    world.add(pr_opened=False)
    world.sim.open_pr(REPO, "p", {"p.py": "1\n"})
    issue = world.sim.open_issue(REPO)
    world.clock.advance(5)
    world.sim.comment(REPO, issue, f"@{HANDLE} review", author=MAINT)
    caplog.set_level(logging.DEBUG, logger="engine.poll.pollpass")
    assert world.poll() == []
    assert (issue, "pr_not_open") in reasons(caplog)
