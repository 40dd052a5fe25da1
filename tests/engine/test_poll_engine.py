"""github_poll end to end: the engine polls ghsim over HTTP and fires one command per event."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine as SAEngine

from engine.github import GitHubClient
from engine.health.assess import HealthState
from engine.health.status import schedule_health
from engine.poll.config import validate_poll_config
from engine.poll.pollpass import poll_once
from engine.run.daemon import Engine
from engine.schedules.plan import PlanAction, PlanItem
from engine.schedules.spec import ScheduleSpec
from engine.store.models import RunStatus, ScheduleRun, TriggerType
from engine.store.pollstore import PollStore
from engine.store.store import Store, spec_of
from ghsim import GitHubSim
from tests.factories import FakeClock, settings_for

REPO = "octo/widgets"
ARGS = [
    "-c",
    'echo "$@"',
    "fire",
    "--repo",
    "{{ repo }}",
    "--pr",
    "{{ pr_number }}",
    "--head-sha",
    "{{ head_sha }}",
    "--author",
    "{{ pr_author }}",
]


@dataclass
class World:
    sim: GitHubSim
    clock: FakeClock
    store: Store
    db_url: str
    token: str

    def settings(self, **overrides: Any) -> Any:
        return settings_for(
            self.db_url, github_api_url=self.sim.url, github_token=self.token, **overrides
        )

    def add(self, name: str = "watch", args: list[str] | None = None, **config: Any) -> int:
        trigger = validate_poll_config({"repo": REPO, "poll_interval_seconds": 60, **config})
        spec = ScheduleSpec(
            name=name,
            trigger_type=TriggerType.GITHUB_POLL,
            trigger_config=trigger.model_dump(mode="json"),
            command="sh",
            args=ARGS if args is None else args,
        )
        return self.store.add_schedule(spec).id

    def poll(self, **overrides: Any) -> list[ScheduleRun]:
        """Advance past the poll interval and run one engine pass."""
        self.clock.advance(61)
        engine = Engine(self.settings(**overrides), self.store)
        engine.start()
        try:
            return engine.run_once()
        finally:
            engine.close()

    def cursor(self, schedule_id: int) -> Any:
        return PollStore(self.store).get_state(schedule_id).cursor_at


@pytest.fixture
def world(db: SAEngine, db_url: str, tmp_path: Path) -> Iterator[World]:
    clock = FakeClock()
    token = f"tok-{uuid.uuid4().hex}"
    with GitHubSim(tmp_path / "sim", clock=clock) as sim:
        sim.add_token(token, ("li-bot", 900))
        sim.create_repo(REPO)
        yield World(sim, clock, Store(db, clock), db_url, token)


def fired_prs(runs: list[ScheduleRun]) -> list[int]:
    return sorted(
        int(r.trigger_context["pr_number"]) for r in runs if r.status != RunStatus.REFUSED.value
    )


def test_a_new_pull_request_fires_one_command_with_its_event(world: World) -> None:
    sid = world.add()
    world.clock.advance(5)
    pr = world.sim.open_pr(REPO, "feature", {"a.py": "x = 1\n"}, author=("alice", 71))
    [run] = world.poll()
    assert run.status == RunStatus.SUCCEEDED.value
    assert run.argv == [
        "sh",
        *ARGS[:3],
        "--repo",
        REPO,
        "--pr",
        str(pr.number),
        "--head-sha",
        pr.head_sha,
        "--author",
        "alice",
    ]
    assert run.stdout_tail.strip() == (
        f"--repo {REPO} --pr {pr.number} --head-sha {pr.head_sha} --author alice"
    )
    assert run.trigger_context["is_same_repo"] is True
    assert world.poll() == []  # nothing new: the re-offered boundary event costs nothing
    state = PollStore(world.store).get_state(sid)
    assert state.dispatched == 1 and state.polls == 2


def test_an_idle_poll_is_one_conditional_request_answered_304(world: World) -> None:
    world.add()
    world.poll()
    world.sim.clear_requests()
    world.poll()
    pulls = world.sim.requests_to(r"/pulls$")
    assert [r.status for r in pulls] == [304]  # the settled ETag outlives the process
    world.sim.clear_requests()
    engine = Engine(world.settings(), world.store)
    engine.start()
    try:
        world.clock.advance(61)
        engine.run_once()
        world.clock.advance(61)
        engine.run_once()
    finally:
        engine.close()
    assert [r.status for r in world.sim.requests_to(r"/pulls$")] == [304, 304]


def test_the_open_backlog_is_not_fired_unless_backfill(world: World) -> None:
    world.sim.open_pr(REPO, "old", {"a.py": "1\n"})
    world.clock.advance(5)
    world.add("plain")
    world.add("backfill", backfill=True)
    runs = world.poll()
    assert [r.schedule_name for r in runs] == ["backfill"]


def test_a_push_fires_again_for_the_new_head(world: World) -> None:
    world.add()
    world.clock.advance(1)
    pr = world.sim.open_pr(REPO, "feature", {"a.py": "1\n"})
    first = world.poll()
    world.clock.advance(5)
    sha = world.sim.push(REPO, pr.number, {"a.py": "2\n"})
    second = world.poll()
    assert len(first) == 1 and len(second) == 1
    assert second[0].trigger_context["head_sha"] == sha


@pytest.mark.parametrize("first_number_first", [True, False])
def test_two_prs_updated_in_one_second_across_polls_both_fire_once(
    world: World, first_number_first: bool
) -> None:
    world.add()
    world.clock.advance(1)
    a = world.sim.open_pr(REPO, "a", {"a.py": "1\n"})
    b = world.sim.open_pr(REPO, "b", {"b.py": "1\n"})
    # Both stamped in the same second, but the listing showed only one at the first poll:
    # push the other one afterwards within the same second.
    world.clock.advance(61)
    same_second = world.clock()
    world.sim.set_time(same_second)
    early, late = (a, b) if first_number_first else (b, a)
    world.sim.push(REPO, early.number, {"x.py": "early\n"})
    engine = Engine(world.settings(), world.store)
    engine.start()
    try:
        runs_1 = engine.run_once()
        world.sim.push(REPO, late.number, {"x.py": "late\n"})  # same second as `early`
        world.clock.advance(61)
        runs_2 = engine.run_once()
        world.clock.advance(61)
        runs_3 = engine.run_once()
    finally:
        engine.close()
    at = {r.trigger_context["pr_number"]: r.trigger_context["updated_at"] for r in runs_1 + runs_2}
    assert at[early.number] == at[late.number]  # the same second
    stamps = [
        (r.trigger_context["pr_number"], r.trigger_context["updated_at"])
        for r in runs_1 + runs_2 + runs_3
    ]
    assert len(stamps) == len(set(stamps))  # nothing fired twice
    assert (late.number, at[late.number]) in stamps and (early.number, at[early.number]) in stamps


@pytest.mark.parametrize(
    ("setup", "filters", "reason"),
    [
        ("draft", {"draft": False}, "draft"),
        ("other_base", {"base": "main"}, "base_mismatch"),
        ("fork", {"same_repo_only": True}, "not_same_repo"),
        ("deleted_fork", {"same_repo_only": True}, "head_repo_missing"),
    ],
)
def test_filtered_prs_never_fire_and_the_cursor_moves_past_them(
    world: World, setup: str, filters: dict[str, Any], reason: str
) -> None:
    sid = world.add(filters=filters)
    world.clock.advance(1)
    if setup == "draft":
        pr = world.sim.open_pr(REPO, "wip", {"a.py": "1\n"}, draft=True)
    elif setup == "other_base":
        world.sim.commit_to_base(REPO, {"r.txt": "1\n"}, branch="release")
        pr = world.sim.open_pr(REPO, "topic", {"a.py": "1\n"}, base="release")
    else:
        pr = world.sim.open_pr(REPO, "evil", {"a.py": "1\n"}, from_fork="mallory/widgets")
        if setup == "deleted_fork":
            world.sim.set_head_repo_null(REPO, pr.number)
    runs = world.poll()
    assert runs == []
    assert (
        world.cursor(sid) is not None
        and world.cursor(sid) >= world.sim.pull(REPO, pr.number).updated_at
    )
    assert PollStore(world.store).get_state(sid).excluded == 1
    ticket = PollStore(world.store).claim_poll(sid, "preview", peek=True)
    assert ticket is not None
    with GitHubClient(world.settings()) as client:
        report = poll_once(
            PollStore(world.store), world.settings(), client, ticket, "preview", dry_run=True
        )
    assert [d.decision for d in report.decisions] == [f"excluded:{reason}"]


def test_the_fire_cap_holds_the_rest_and_fires_them_first_next_pass(world: World) -> None:
    sid = world.add(backfill=True, max_fires_per_poll=3)
    for i in range(5):
        world.sim.open_pr(REPO, f"b{i}", {f"f{i}.py": "1\n"})
        world.clock.advance(1)
    first = world.poll()
    assert fired_prs(first) == [1, 2, 3]
    state = PollStore(world.store).get_state(sid)
    assert [h["pr_number"] for h in state.held_batch] == [4, 5]
    world.clock.advance(1)
    world.sim.open_pr(REPO, "late", {"late.py": "1\n"})
    second = world.poll()
    assert fired_prs(second) == [4, 5, 6]
    assert PollStore(world.store).get_state(sid).held_batch == []


def test_more_than_a_page_of_prs_between_polls_all_fire_once(world: World) -> None:
    world.add(max_fires_per_poll=500)
    world.clock.advance(1)
    for i in range(130):
        world.sim.open_pr(REPO, f"p{i}", {f"p{i}.py": "1\n"})
    runs = world.poll()
    assert fired_prs(runs) == list(range(1, 131))
    assert world.poll() == []


def test_a_ghost_author_is_skipped_and_the_rest_fire(world: World) -> None:
    world.add()
    world.clock.advance(1)
    ghost = world.sim.open_pr(REPO, "ghost", {"g.py": "1\n"})
    world.sim.set_pr_user_null(REPO, ghost.number)
    other = world.sim.open_pr(REPO, "fine", {"f.py": "1\n"})
    assert fired_prs(world.poll()) == [other.number]


def test_three_auth_failures_make_the_schedule_blind_without_printing_the_token(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    world.add()
    world.sim.remove_token(world.token)
    for _ in range(3):
        assert world.poll() == []
    [health] = schedule_health(world.store, "watch")
    assert health.health.state is HealthState.BLIND
    assert health.facts.last_error_reason == "auth_error"
    assert world.token not in caplog.text
    assert all(world.token not in str(r.trigger_context) for r in world.store.list_runs())


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ({"status": 500}, "server_error"),
        ({"status": 502}, "server_error"),
        ({"truncate": True}, "network_error"),
        ({"malformed": True}, "malformed_payload"),
    ],
)
def test_a_failing_poll_holds_the_cursor_and_the_next_poll_recovers(
    world: World, fault: dict[str, Any], reason: str
) -> None:
    sid = world.add()
    before = world.cursor(sid)
    world.clock.advance(1)
    pr = world.sim.open_pr(REPO, "feature", {"a.py": "1\n"})
    world.sim.inject_fault("GET", r"/pulls$", **fault)
    assert world.poll() == []
    assert world.cursor(sid) == before
    state = PollStore(world.store).get_state(sid)
    assert state.last_error_reason == reason and state.consecutive_errors == 1
    assert fired_prs(world.poll()) == [pr.number]
    state = PollStore(world.store).get_state(sid)
    assert state.last_error_reason is None and state.consecutive_errors == 0


def test_an_exhausted_rate_limit_holds_the_cursor_until_reset(world: World) -> None:
    sid = world.add()
    before = world.cursor(sid)
    world.clock.advance(1)
    world.sim.open_pr(REPO, "feature", {"a.py": "1\n"})
    world.sim.set_rate_limit(world.token, remaining=0, reset_at=world.clock().timestamp() + 3600)
    assert world.poll() == []
    assert world.cursor(sid) == before
    [health] = schedule_health(world.store, "watch")
    assert health.health.state is HealthState.RATE_LIMITED


def test_an_event_whose_argv_cannot_render_holds_the_cursor_then_is_skipped(world: World) -> None:
    sid = world.add(args=["-c", "true", "{{ no_such_variable }}"])
    world.clock.advance(1)
    pr = world.sim.open_pr(REPO, "feature", {"a.py": "1\n"})
    before = world.cursor(sid)
    for attempt in range(2):
        assert world.poll() == []
        assert world.cursor(sid) == before, attempt
    world.poll()
    [run] = world.store.list_runs("watch")
    assert (run.status, run.reason) == (RunStatus.REFUSED.value, "template_undefined")
    assert run.trigger_context["pr_number"] == pr.number
    world.poll()
    assert len(world.store.list_runs("watch")) == 1
    # Those polls were 304s (the ETag outlives each process), and a 304 never moves the
    # cursor; the next 200 moves it past the skipped event, which is claimed.
    world.clock.advance(1)
    world.sim.open_pr(REPO, "other", {"b.py": "1\n"})
    world.poll()
    assert world.cursor(sid) >= world.sim.pull(REPO, pr.number).updated_at


def test_merged_mode_fires_once_per_merge_with_the_merge_commit(world: World) -> None:
    world.add(event="pr_merged")
    world.clock.advance(1)
    pr = world.sim.open_pr(REPO, "feature", {"a.py": "1\n"})
    assert world.poll() == []
    world.clock.advance(1)
    sha = world.sim.merge(REPO, pr.number)
    [run] = world.poll()
    assert run.trigger_context["merge_commit_sha"] == sha
    assert run.trigger_context["merged_at"] is not None
    assert world.poll() == []


def test_a_claim_whose_process_never_launched_is_refired_as_a_second_attempt(
    world: World,
) -> None:
    sid = world.add()
    world.clock.advance(1)
    pr = world.sim.open_pr(REPO, "feature", {"a.py": "1\n"})
    world.clock.advance(61)
    crashed = Engine(world.settings(), world.store)
    crashed.start()
    polls = PollStore(world.store)
    ticket = polls.claim_poll(sid, crashed.engine_id)
    assert ticket is not None
    report = poll_once(
        polls, world.settings(), crashed.github, ticket, crashed.engine_id, launch=None
    )  # the process "dies" before spawning
    assert [d.decision for d in report.decisions] == ["fired"]
    crashed._release_lock()  # killed: no clean stop, heartbeat goes stale
    crashed.github.close()
    world.clock.advance(3600)
    [retry] = world.poll()
    assert retry.status == RunStatus.SUCCEEDED.value
    assert retry.trigger_context["pr_number"] == pr.number
    first = world.store.list_runs("watch")[-1]
    assert (first.status, first.reason) == (RunStatus.CANCELLED.value, "abandoned_before_launch")
    assert (first.attempt, first.fire_id) == (1, None)
    assert (retry.attempt, retry.fire_id) == (2, first.id)
    assert world.poll() == []  # delivered once: nothing more


def test_a_secondary_limit_is_recorded_and_honoured(world: World) -> None:
    sid = world.add()
    before = world.cursor(sid)
    world.clock.advance(1)
    pr = world.sim.open_pr(REPO, "feature", {"a.py": "1\n"})
    world.sim.inject_secondary_limit(retry_after=1, path_regex=r"/pulls$")
    assert world.poll() == []
    state = PollStore(world.store).get_state(sid)
    assert state.last_error_reason == "secondary_rate_limited"
    assert world.cursor(sid) == before
    assert fired_prs(world.poll()) == [pr.number]


def test_a_slow_github_times_out_as_a_network_error(world: World) -> None:
    sid = world.add()
    world.sim.inject_fault("GET", r"/pulls$", delay=2.0)
    assert world.poll(github_timeout_seconds=0.3) == []
    assert PollStore(world.store).get_state(sid).last_error_reason == "network_error"


def test_a_scan_capped_three_times_makes_the_schedule_overdue(world: World) -> None:
    sid = world.add(max_fires_per_poll=500)
    world.clock.advance(1)
    for i in range(301):  # more than the default 3 pages of 100 since the cursor
        world.sim.open_pr(REPO, f"p{i}", {f"p{i}.py": "1\n"})
    before = world.cursor(sid)
    for attempt in range(3):
        assert world.poll() == [], attempt
        assert world.cursor(sid) == before
    state = PollStore(world.store).get_state(sid)
    assert state.poller_consecutive_cap_no_dispatch == 3
    [health] = schedule_health(world.store, "watch")
    assert health.health.state is HealthState.OVERDUE
    assert any("page_limit" in (c.advice or "") for c in health.health.causes)
    # The operator raises the page limit: the scan completes, every event fires once.
    row = world.store.get_schedule("watch")
    raised = validate_poll_config({**row.trigger_config, "page_limit": 5})
    spec = spec_of(row).model_copy(update={"trigger_config": raised.model_dump(mode="json")})
    world.store.apply_plan([PlanItem(PlanAction.UPDATE, "watch", spec, ("trigger_config",))], "ops")
    world.clock.advance(120)
    runs = world.poll()
    assert fired_prs(runs) == list(range(1, 302))
    assert PollStore(world.store).get_state(sid).poller_consecutive_cap_no_dispatch == 0


def test_paging_stops_once_it_reaches_the_cursor(world: World) -> None:
    world.add(backfill=True, max_fires_per_poll=500)
    for i in range(150):
        world.sim.open_pr(REPO, f"p{i}", {f"p{i}.py": "1\n"})
        world.clock.advance(1)
    assert len(world.poll()) == 150  # backfill: no cursor, both pages read
    world.clock.advance(5)
    world.sim.push(REPO, 7, {"p7.py": "2\n"})
    world.sim.clear_requests()
    engine_runs = world.poll()
    assert fired_prs(engine_runs) == [7]
    # A new process lists with a 200 and stops after page 1: it reached the cursor.
    assert len(world.sim.requests_to(r"/pulls$")) == 1


def test_a_failing_command_still_moves_the_cursor(world: World) -> None:
    world.add(args=["-c", "exit 9"])
    world.clock.advance(1)
    world.sim.open_pr(REPO, "feature", {"a.py": "1\n"})
    [run] = world.poll()
    assert (run.status, run.exit_code) == (RunStatus.FAILED.value, 9)
    assert world.poll() == []
    assert len(world.store.list_runs("watch")) == 1


class LongEngine:
    """One engine process across several passes (its ETags live on: later polls are 304s)."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.engine = Engine(world.settings(), world.store)
        self.engine.start()

    def poll(self) -> list[ScheduleRun]:
        self.world.clock.advance(61)
        return self.engine.run_once()

    def close(self) -> None:
        self.engine.close()


def test_two_schedules_on_one_repository_each_see_every_event(world: World) -> None:
    world.add("first")
    world.add("second")
    long = LongEngine(world)
    try:
        long.poll()
        world.clock.advance(1)
        world.sim.open_pr(REPO, "feature", {"a.py": "1\n"})
        runs = long.poll()
    finally:
        long.close()
    assert sorted(r.schedule_name for r in runs) == ["first", "second"]


def test_a_refused_event_is_retried_on_304_polls_then_skipped(world: World) -> None:
    sid = world.add(args=["-c", "true", "{{ no_such_variable }}"])
    world.clock.advance(1)
    world.sim.open_pr(REPO, "feature", {"a.py": "1\n"})
    long = LongEngine(world)
    try:
        for _ in range(4):
            long.poll()
    finally:
        long.close()
    [run] = world.store.list_runs("watch")
    assert (run.status, run.reason) == (RunStatus.REFUSED.value, "template_undefined")
    assert PollStore(world.store).get_state(sid).not_modified >= 2


def test_a_capped_scan_in_a_long_running_engine_becomes_overdue(world: World) -> None:
    world.add()
    world.clock.advance(1)
    for i in range(301):
        world.sim.open_pr(REPO, f"p{i}", {f"p{i}.py": "1\n"})
    long = LongEngine(world)
    try:
        for _ in range(3):
            assert long.poll() == []
    finally:
        long.close()
    [health] = schedule_health(world.store, "watch")
    assert health.health.state is HealthState.OVERDUE
    assert all(r.status == 200 for r in world.sim.requests_to(r"/pulls$"))


def test_turning_a_schedule_into_a_github_poll_does_not_fire_the_backlog(world: World) -> None:
    world.sim.open_pr(REPO, "old", {"a.py": "1\n"})
    world.clock.advance(5)
    interval = ScheduleSpec(
        name="watch",
        trigger_type=TriggerType.INTERVAL,
        interval_seconds=60,
        command="sh",
        args=["-c", "true"],
    )
    world.store.add_schedule(interval)
    trigger = validate_poll_config({"repo": REPO, "poll_interval_seconds": 60})
    github = interval.model_copy(
        update={
            "trigger_type": TriggerType.GITHUB_POLL,
            "interval_seconds": None,
            "trigger_config": trigger.model_dump(mode="json"),
        }
    )
    world.store.apply_plan(
        [PlanItem(PlanAction.UPDATE, "watch", github, ("trigger_type", "trigger_config"))], "ops"
    )
    assert world.poll() == []
    world.clock.advance(1)
    new = world.sim.open_pr(REPO, "new", {"b.py": "1\n"})
    assert fired_prs(world.poll()) == [new.number]


def test_preview_shows_claimed_and_held_events_as_the_engine_would(world: World) -> None:
    sid = world.add(max_fires_per_poll=1)
    world.clock.advance(1)
    world.sim.open_pr(REPO, "a", {"a.py": "1\n"})
    world.sim.open_pr(REPO, "b", {"b.py": "1\n"})
    world.poll()  # fires #1, holds #2
    ticket = PollStore(world.store).claim_poll(sid, "preview", peek=True)
    assert ticket is not None
    with GitHubClient(world.settings()) as client:
        report = poll_once(
            PollStore(world.store), world.settings(), client, ticket, "preview", dry_run=True
        )
    decisions = {d.event.pr_number: d.decision for d in report.decisions}
    assert decisions == {1: "already_claimed", 2: "would_fire"}
