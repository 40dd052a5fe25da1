"""``kdev check-ci`` against ghsim over HTTP: the sim clock is the clock and the sleep
moves it (no real waiting); the console script once for the exit code and JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from engine.config import Settings
from engine.github import GitHubClient, RequestPacer
from ghsim import GitHubSim
from wrapper.authorloop.checkci import EXIT_CHECKS_FAILED, Check, CiCheck, state_of
from wrapper.authorloop.watch import EXIT_MAX_DURATION

REPO = "octo/widgets"
TOKEN = "tok-check-ci"
T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
KDEV = str(Path(sys.executable).with_name("kdev"))


@pytest.fixture
def sim() -> Iterator[GitHubSim]:
    with GitHubSim() as running:
        running.set_time(T0)
        running.add_token(TOKEN, ("author-agent", 501))
        running.create_repo(REPO, files={"app.py": "print('hi')\n"})
        yield running


@pytest.fixture
def client(sim: GitHubSim) -> Iterator[GitHubClient]:
    settings = Settings(github_api_url=sim.url, github_token=TOKEN)
    with GitHubClient(settings, pacer=RequestPacer(1_000_000)) as made:
        yield made


def checker(
    sim: GitHubSim, client: GitHubClient, pr: int, steps: dict[int, Callable[[], None]]
) -> tuple[CiCheck, list[float]]:
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        sim.advance(seconds)
        if (step := steps.get(len(sleeps))) is not None:
            step()

    made = CiCheck(client, REPO, pr, max_duration=1800, clock=sim.now, sleep=sleep)
    return made, sleeps


def test_the_state_rule() -> None:
    def c(bucket: str) -> Check:
        return Check("x", bucket, None)

    assert state_of(()) == "pending"
    assert state_of((c("pass"), c("pending"))) == "pending"
    assert state_of((c("pass"), c("skipping"))) == "green"
    assert state_of((c("pass"), c("cancel"))) == "failing"
    assert state_of((c("fail"),)) == "failing"


def test_wait_until_a_check_fails_then_name_it_with_its_log_url(
    sim: GitHubSim, client: GitHubClient
) -> None:
    pull = sim.open_pr(REPO, "feature/x", {"app.py": "print(2)\n"})
    sim.set_check_run(REPO, pull.head_sha, "lint")
    sim.set_check_run(REPO, pull.head_sha, "tests", status="in_progress")
    steps = {2: lambda: sim.set_check_run(REPO, pull.head_sha, "tests", conclusion="failure")}
    check, sleeps = checker(sim, client, pull.number, steps)
    report = check.run(wait=True)
    assert (report.state, report.looks, report.exit_code) == ("failing", 3, EXIT_CHECKS_FAILED)
    assert sleeps == [180, 180]  # auto interval of a small PR, as kdev watch
    [failing] = report.failing
    assert (
        failing.name == "tests"
        and failing.url
        and failing.url.endswith(
            f"/runs/{sim.check_runs_for(sim.repo(REPO), pull.head_sha)[-1].id}"
        )
    )
    assert report.lines()[0].endswith(": failing (1 pass, 1 fail)")


def test_one_look_without_wait_and_a_rerun_replaces_the_failed_run(
    sim: GitHubSim, client: GitHubClient
) -> None:
    pull = sim.open_pr(REPO, "feature/x", {"app.py": "print(2)\n"})
    sim.set_check_run(REPO, pull.head_sha, "tests", status="queued")
    check, sleeps = checker(sim, client, pull.number, {})
    pending = check.run(wait=False)
    assert (pending.state, pending.looks, pending.exit_code, sleeps) == (
        "pending",
        1,
        EXIT_MAX_DURATION,
        [],
    )
    sim.set_check_run(REPO, pull.head_sha, "tests", conclusion="success")
    assert check.run(wait=False).exit_code == 0


def test_running_out_of_time_is_exit_16_and_a_push_moves_the_wait(
    sim: GitHubSim, client: GitHubClient
) -> None:
    pull = sim.open_pr(REPO, "feature/x", {"app.py": "print(2)\n"})
    first = pull.head_sha  # the sim's Pull moves with a push
    sim.set_check_run(REPO, first, "tests", conclusion="failure")
    pushed: dict[str, str] = {}

    def push() -> None:
        pushed["head"] = sim.push(REPO, pull.number, {"app.py": "print(3)\n"})

    check, _ = checker(sim, client, pull.number, {})
    assert check.run(wait=True).state == "failing"  # settled at once: no wait
    check, sleeps = checker(sim, client, pull.number, {1: push})
    sim.set_check_run(REPO, first, "tests", status="in_progress")
    report = check.run(wait=True)
    # The new head has no checks at all: pending until --max-duration (1800 s).
    assert report.head_sha == pushed["head"] != first
    assert (report.state, report.exit_code, report.checks) == ("pending", 16, ())
    assert sum(sleeps) == 1800


def test_the_console_script_prints_json_and_exits_18(sim: GitHubSim) -> None:
    pull = sim.open_pr(REPO, "feature/x", {"app.py": "print(2)\n"})
    sim.set_check_run(REPO, pull.head_sha, "tests", conclusion="timed_out")
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/tmp"),
        "GITHUB_API_URL": sim.url,
        "GITHUB_TOKEN": TOKEN,
    }
    argv = [KDEV, "check-ci", "--repo", REPO, "--pr", str(pull.number)]
    done = subprocess.run([*argv, "--json"], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == EXIT_CHECKS_FAILED, done.stderr
    data = json.loads(done.stdout)
    assert data["state"] == "failing" and [c["name"] for c in data["failing"]] == ["tests"]
    assert TOKEN not in done.stdout + done.stderr
    bad = subprocess.run(
        [*argv, "--interval", "soon"], env=env, capture_output=True, text=True, check=False
    )
    assert bad.returncode == 2 and "invalid_interval" in bad.stderr
