"""``kdev watch`` against ghsim over HTTP, with the sim clock as the watch clock and a
sleep that moves it (no real waiting)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime

import pytest

from engine.config import Settings
from engine.github import GitHubClient, RequestPacer
from ghsim import GitHubSim
from ghsim.model import node_id
from wrapper.authorloop.watch import (
    EXIT_MAX_DURATION,
    PrWatch,
    WatchEvent,
    auto_interval,
    check_bucket,
    choose_interval,
    one_line,
)
from wrapper.errors import ConfigError

REPO = "octo/widgets"
T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


@pytest.fixture
def sim() -> Iterator[GitHubSim]:
    with GitHubSim() as running:
        running.set_time(T0)
        running.add_token("tok-watch", ("author-agent", 501))
        running.create_repo(REPO, files={"app.py": "print('hi')\n"})
        yield running


@pytest.fixture
def client(sim: GitHubSim) -> Iterator[GitHubClient]:
    settings = Settings(github_api_url=sim.url, github_token="tok-watch")
    with GitHubClient(settings, pacer=RequestPacer(1_000_000)) as made:
        yield made


def make_watch(
    sim: GitHubSim,
    client: GitHubClient,
    pr: int,
    scenario: dict[int, Callable[[], None]] | None = None,
    **kwargs: object,
) -> tuple[PrWatch, list[str], list[float]]:
    """A watch whose sleep advances the sim clock and then runs ``scenario[n]`` (n: the
    number of sleeps so far), so events land between polls."""
    lines: list[str] = []
    sleeps: list[float] = []
    steps = scenario or {}

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        sim.advance(seconds)
        step = steps.get(len(sleeps))
        if step is not None:
            step()

    watch = PrWatch(
        client,
        REPO,
        pr,
        lambda event: lines.append(event.line()),
        clock=sim.now,
        sleep=sleep,
        **kwargs,  # type: ignore[arg-type]
    )
    return watch, lines, sleeps


# -- pure pieces -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lines", "seconds"), [(0, 180), (199, 180), (200, 300), (1000, 300), (1001, 480)]
)
def test_auto_interval_at_each_boundary(lines: int, seconds: int) -> None:
    assert auto_interval(lines) == seconds
    assert choose_interval("auto", lines) == seconds


def test_interval_floor_and_bad_values() -> None:
    assert choose_interval("5", 10) == 60
    assert choose_interval("60", 10) == 60
    assert choose_interval("90", 5000) == 90
    assert choose_interval("90s", 5000) == 90 and choose_interval("5m", 0) == 300
    assert choose_interval("1h30m", 0) == 5400
    for bad in ("fast", "-3", "0", "1.5", "0s", "2d"):
        with pytest.raises(ConfigError) as caught:
            choose_interval(bad, 0)
        assert caught.value.reason == "invalid_interval"


def test_check_buckets() -> None:
    assert check_bucket("in_progress", None) == "pending"
    assert check_bucket("completed", "success") == "pass"
    assert check_bucket("completed", "neutral") == "pass"
    assert check_bucket("completed", "skipped") == "skipping"
    assert check_bucket("completed", "cancelled") == "cancel"
    assert check_bucket("completed", "timed_out") == "fail"


def test_every_line_format() -> None:
    assert WatchEvent("ci", {"name": "lint", "bucket": "fail"}).line() == "[ci] lint: fail"
    issue = WatchEvent("issue", {"node_id": "IC_1", "id": 7, "user": "bob", "body": "a\nb\\c"})
    assert issue.line() == "[comment] issue node=IC_1 id=7 @bob: a\\nb\\\\c"
    inline = WatchEvent(
        "inline",
        {"node_id": "RC_2", "id": 8, "user": "cursor[bot]", "path": "a.py", "line": 3, "body": "x"},
    )
    assert inline.line() == "[comment] inline node=RC_2 id=8 @cursor[bot] a.py:3: x"
    review = WatchEvent(
        "review",
        {"node_id": "PRR_3", "id": 9, "user": "alice", "state": "APPROVED", "body": "ok\r\n"},
    )
    assert review.line() == "[comment] review node=PRR_3 id=9 @alice [APPROVED]: ok\\r\\n"
    assert one_line("a\tb") == "a\\tb"


# -- the loop against ghsim --------------------------------------------------------------


def test_first_poll_shows_everything_since_creation_with_both_ids(
    sim: GitHubSim, client: GitHubClient
) -> None:
    pr = sim.open_pr(REPO, "feature", {"a.py": "x = 1\n"})
    sim.advance(30)
    early = sim.comment(REPO, pr.number, "First!\nTwo lines.", "alice")
    inline = sim.comment(
        REPO,
        pr.number,
        "![high] leak",
        "gemini-code-assist[bot]",
        kind="review",
        path="a.py",
        line=1,
    )
    review = sim.review(REPO, pr.number, "CHANGES_REQUESTED", "bob", body="Please fix.")
    sim.set_check_run(REPO, pr.head_sha, "tests", conclusion="failure")
    sim.set_check_run(REPO, pr.head_sha, "lint", status="in_progress")
    watch, lines, _ = make_watch(sim, client, pr.number)
    events = [e.line() for e in watch.poll()]
    assert events == [
        "[ci] tests: fail",
        f"[comment] issue node={node_id('IssueComment', early.id)} id={early.id} @alice: "
        "First!\\nTwo lines.",
        f"[comment] inline node={node_id('PullRequestReviewComment', inline.id)} "
        f"id={inline.id} @gemini-code-assist[bot] a.py:1: ![high] leak",
        f"[comment] review node={node_id('PullRequestReview', review.id)} id={review.id} "
        "@bob [CHANGES_REQUESTED]: Please fix.",
    ]
    assert watch.poll() == []  # nothing new


def test_dedup_by_node_including_the_boundary_second_and_idle_polls_are_free(
    sim: GitHubSim, client: GitHubClient
) -> None:
    pr = sim.open_pr(REPO, "feature", {"a.py": "x = 1\n"})
    sim.comment(REPO, pr.number, "one", "alice")
    watch, _, _ = make_watch(sim, client, pr.number)
    assert len(watch.poll()) == 1
    # Same second as the window's edge: since is inclusive, "one" comes back, "two" is new.
    two = sim.comment(REPO, pr.number, "two", "alice")
    assert [e.fields["id"] for e in watch.poll()] == [two.id]
    watch.poll()  # the window moved: one 200 per feed, then
    sim.clear_requests()
    assert watch.poll() == []
    idle = sim.requests
    assert idle and all(r.status == 304 and not r.counted for r in idle)


def test_a_500_mid_watch_does_not_end_it(sim: GitHubSim, client: GitHubClient) -> None:
    pr = sim.open_pr(REPO, "feature", {"a.py": "x = 1\n"})

    def outage() -> None:
        sim.inject_fault("GET", r"/issues/\d+/comments", status=500, times=1)
        sim.comment(REPO, pr.number, "during the outage", "alice")

    scenario = {1: outage, 3: lambda: sim.merge(REPO, pr.number)}
    watch, lines, _ = make_watch(sim, client, pr.number, scenario)
    result = watch.run()
    assert result.exit_code == 0 and result.polls == 4
    assert sum("during the outage" in line for line in lines) == 1
    assert lines[-1] == "[pr] merged"
    assert watch.state.errors and "server_error" in watch.state.errors[0]


def test_ci_lines_once_per_terminal_bucket(sim: GitHubSim, client: GitHubClient) -> None:
    pr = sim.open_pr(REPO, "feature", {"a.py": "x = 1\n"})
    sim.set_check_run(REPO, pr.head_sha, "tests", status="in_progress")
    watch, _, _ = make_watch(sim, client, pr.number)
    assert watch.poll() == []
    sim.set_check_run(REPO, pr.head_sha, "tests", conclusion="success")
    sim.set_check_run(REPO, pr.head_sha, "docs", conclusion="skipped")
    assert sorted(e.line() for e in watch.poll()) == ["[ci] docs: skipping", "[ci] tests: pass"]
    assert watch.poll() == []
    sim.set_check_run(REPO, pr.head_sha, "tests", conclusion="cancelled")  # a re-run
    assert [e.line() for e in watch.poll()] == ["[ci] tests: cancel"]


def test_auto_interval_from_pr_size_and_max_duration_cap(
    sim: GitHubSim, client: GitHubClient
) -> None:
    body = "".join(f"line {i}\n" for i in range(250))
    pr = sim.open_pr(REPO, "feature", {"big.py": body})
    sim.set_check_run(REPO, pr.head_sha, "tests", status="in_progress")
    sim.comment(REPO, pr.number, "what about X?", "alice", kind="review", path="big.py", line=2)
    watch, lines, sleeps = make_watch(sim, client, pr.number, max_duration=1000)
    result = watch.run()
    assert result.exit_code == EXIT_MAX_DURATION
    assert sleeps == [300, 300, 300, 100]  # 250 lines -> 300 s, the last sleep to the cap
    assert result.unsettled == [
        "check tests: pending",
        "comments: 1 unanswered (1 inline, 0 conversation)",
    ]
    assert lines[-2:] == [
        "[unsettled] check tests: pending",
        "[unsettled] comments: 1 unanswered (1 inline, 0 conversation)",
    ]


def test_explicit_interval_is_floored_and_settled_watch_says_nothing(
    sim: GitHubSim, client: GitHubClient
) -> None:
    pr = sim.open_pr(REPO, "feature", {"a.py": "x = 1\n"})
    sim.set_check_run(REPO, pr.head_sha, "tests")
    watch, lines, sleeps = make_watch(sim, client, pr.number, interval="10", max_duration=150)
    result = watch.run()
    assert sleeps == [60, 60, 30]
    assert result.exit_code == EXIT_MAX_DURATION and result.unsettled == []
    assert lines == ["[ci] tests: pass", "[unsettled] nothing"]
