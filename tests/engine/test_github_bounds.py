"""The bounds of one GitHub answer (issue 24): body size, one deadline, same-origin redirects.

Against ghsim over HTTP. The memory cases run one request in a fresh interpreter and
measure its peak RSS growth over the request (the peak is reset first and read as
``VmHWM``: a spawned child's ``ru_maxrss`` starts at its parent's peak, pytest's here):
a 1 GiB gzip bomb and a 100 MB body must end well below their size, a drip-fed body at
the deadline, a redirect to another origin without a request sent there.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine as SAEngine

from engine.config import Settings
from engine.github import GitHubClient, GitHubError, RequestPacer
from engine.health.status import schedule_health
from engine.poll.config import validate_poll_config
from engine.run.daemon import Engine
from engine.schedules.spec import ScheduleSpec
from engine.store.models import ScheduleRun, TriggerType
from engine.store.pollstore import PollStore
from engine.store.store import Store
from ghsim import GitHubSim
from tests.factories import FakeClock, settings_for
from tests.httpkit import serving

REPO = "octo/widgets"
TOKEN = "tok-bounds"
PULLS = f"repos/{REPO}/pulls"
MIB = 1024 * 1024

# One request in a fresh interpreter: its reason, seconds and peak RSS growth (MiB).
CHILD = """
import json, sys, time
from engine.config import Settings
from engine.github import GitHubError, github_client

def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise LookupError(field)

def reset_peak():
    # ru_maxrss of a spawned child carries its parent's peak (the exec folds it in), so
    # the peak is reset here and read as VmHWM, the figure ru_maxrss reports otherwise.
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")
    return status("VmRSS")

def peak():
    return status("VmHWM")

client = github_client(Settings.from_env(), record_rates=False)
before, start = reset_peak(), time.monotonic()
try:
    client.request("GET", sys.argv[1], expect=list)
    reason = "ok"
except GitHubError as exc:
    reason = exc.reason
seconds = time.monotonic() - start
print(json.dumps({"reason": reason, "seconds": seconds, "growth_mib": peak() - before}))
"""


@pytest.fixture(scope="module")
def sims() -> Iterator[tuple[GitHubSim, GitHubSim]]:
    """The API (with one pull) and another origin on 127.0.0.2 that answers as GitHub
    would, anonymously, with a pull of its own."""
    with GitHubSim() as sim, GitHubSim(host="127.0.0.2", anonymous=True) as other:
        sim.add_token(TOKEN)
        sim.create_repo(REPO)
        sim.open_pr(REPO, "feature", {"a.txt": "hi\n"})
        other.create_repo(REPO)
        other.open_pr(REPO, "elsewhere", {"b.txt": "x\n"})
        yield sim, other


@pytest.fixture
def sim(sims: tuple[GitHubSim, GitHubSim]) -> Iterator[GitHubSim]:
    sims[0].clear_faults()
    sims[0].clear_requests()
    sims[1].clear_requests()
    yield sims[0]
    sims[0].clear_faults()


def one_request(sim: GitHubSim, path: str = PULLS, **env: str) -> dict[str, Any]:
    environ = {**os.environ, "GITHUB_API_URL": sim.url, "GITHUB_TOKEN": TOKEN, **env}
    result = subprocess.run(
        [sys.executable, "-c", CHILD, path],
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    outcome: dict[str, Any] = json.loads(result.stdout)
    return outcome


def client(sim: GitHubSim, **settings: Any) -> GitHubClient:
    return GitHubClient(
        Settings(github_api_url=sim.url, github_token=TOKEN, **settings),
        pacer=RequestPacer(600_000),
        record_rates=False,
    )


# == memory and time, one fresh process a case ===========================================


def test_a_normal_answer_still_works(sim: GitHubSim) -> None:
    outcome = one_request(sim)
    assert outcome["reason"] == "ok" and outcome["growth_mib"] < 8


def test_a_gzip_bomb_stops_at_the_cap_in_bounded_memory(sim: GitHubSim) -> None:
    sim.inject_body_fault("gzip_bomb", "GET", r"/pulls$")
    outcome = one_request(sim)
    assert outcome["reason"] == "body_too_large"
    # The default cap is 32 MiB; inflating the whole 1 GiB took over 2 GB before.
    assert outcome["growth_mib"] < 64, outcome
    assert outcome["seconds"] < 10


def test_a_lower_cap_bounds_the_bomb_lower(sim: GitHubSim) -> None:
    sim.inject_body_fault("gzip_bomb", "GET", r"/pulls$")
    outcome = one_request(sim, LI_GITHUB_MAX_BODY_BYTES=str(4 * MIB))
    assert outcome["reason"] == "body_too_large" and outcome["growth_mib"] < 16, outcome


def test_a_100_mb_body_stops_at_the_cap(sim: GitHubSim) -> None:
    sim.inject_body_fault("huge", "GET", r"/pulls$")
    outcome = one_request(sim)
    assert outcome["reason"] == "body_too_large"
    assert outcome["growth_mib"] < 64, outcome
    assert outcome["seconds"] < 10


def test_a_dripped_body_ends_at_the_deadline_not_after_every_byte(sim: GitHubSim) -> None:
    sim.inject_body_fault("drip", "GET", r"/pulls$", drip_seconds=0.5)
    outcome = one_request(sim, LI_GITHUB_DEADLINE="2")
    assert outcome["reason"] == "request_deadline"
    # Each read answers within 0.5 s, so only the deadline ends it (the body takes hours).
    assert 1.9 < outcome["seconds"] < 6, outcome


def test_a_redirect_to_another_origin_is_refused_before_anything_goes_there(
    sims: tuple[GitHubSim, GitHubSim], sim: GitHubSim
) -> None:
    other = sims[1]
    sim.inject_redirect(f"{other.url}/{PULLS}", "GET", r"/pulls$")
    outcome = one_request(sim)
    assert outcome["reason"] == "redirect_refused"
    assert other.requests_to(r"/pulls$") == []


# == redirects in process ================================================================


def test_a_renamed_repository_301_is_followed_with_the_token(sim: GitHubSim) -> None:
    sim.inject_redirect(f"/{PULLS}", "GET", r"/repos/octo/old-name/pulls$")
    with client(sim) as github:
        pulls = github.request("GET", "repos/octo/old-name/pulls", params={"state": "all"},
                               expect=list)  # fmt: skip
    assert [pull["head"]["ref"] for pull in pulls] == ["feature"]
    [followed] = sim.requests_to(rf"^/{PULLS}$")
    assert followed.user is not None  # authenticated: the token went along, same origin
    assert followed.query == {"state": "all"}  # the query survives the hop


def test_a_307_repeats_a_post_with_its_body(sim: GitHubSim) -> None:
    [pull] = sim.pulls(REPO)
    path = f"repos/{REPO}/issues/{pull.number}/comments"
    sim.inject_redirect(f"/{path}", "POST", rf"/{path}$", status=307)
    with client(sim) as github:
        made = github.request("POST", path, body={"body": "kept"}, expect=dict)
    assert made["body"] == "kept"
    assert [r.status for r in sim.requests_to(rf"/{path}$", "POST")] == [307, 201]


@pytest.mark.parametrize("status", [301, 302, 303])
def test_a_redirect_that_would_turn_a_post_into_a_get_is_refused(
    sim: GitHubSim, status: int
) -> None:
    [pull] = sim.pulls(REPO)
    path = f"repos/{REPO}/issues/{pull.number}/comments"
    sim.inject_redirect(f"/{path}", "POST", rf"/{path}$", status=status)
    with client(sim) as github, pytest.raises(GitHubError) as caught:
        github.request("POST", path, body={"body": "dropped"}, expect=dict)
    assert caught.value.reason == "redirect_refused"
    assert len(sim.requests_to(rf"/{path}$")) == 1


def test_a_redirect_loop_stops_after_the_configured_hops(sim: GitHubSim) -> None:
    sim.inject_redirect(f"/{PULLS}", "GET", r"/pulls$", times=None)
    with client(sim, github_max_redirects=2) as github, pytest.raises(GitHubError) as caught:
        github.request("GET", PULLS, expect=list)
    assert caught.value.reason == "redirect_refused"
    assert "more than 2 redirects" in caught.value.message
    assert len(sim.requests_to(r"/pulls$")) == 3


def test_zero_redirects_refuses_even_a_same_origin_one(sim: GitHubSim) -> None:
    sim.inject_redirect(f"/{PULLS}", "GET", r"/old-name/pulls$")
    with client(sim, github_max_redirects=0) as github, pytest.raises(GitHubError) as caught:
        github.request("GET", "repos/octo/old-name/pulls", expect=list)
    assert caught.value.reason == "redirect_refused"


def test_a_slow_first_byte_ends_at_the_deadline(sim: GitHubSim) -> None:
    sim.inject_fault("GET", r"/pulls$", delay=3.0)
    with client(sim, github_deadline_seconds=1.0) as github, pytest.raises(GitHubError) as caught:
        github.request("GET", PULLS, expect=list)
    assert caught.value.reason == "request_deadline"


class _Encoded(BaseHTTPRequestHandler):
    """Answers ``[]`` under the Content-Encoding the path names (``/br``, ``/gzip``)."""

    def do_GET(self) -> None:
        coding = self.path.rsplit("/", 1)[-1]
        body = gzip.compress(b"[]") if coding == "gzip" else b"[]"
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-encoding", coding)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


@pytest.mark.parametrize(("coding", "reason"), [("gzip", "ok"), ("br", "malformed_payload")])
def test_only_the_encodings_the_client_inflates_itself_are_read(coding: str, reason: str) -> None:
    with serving(_Encoded) as url:
        github = GitHubClient(
            Settings(github_api_url=url, github_token=TOKEN),
            pacer=RequestPacer(600_000),
            record_rates=False,
        )
        with github:
            try:
                assert github.request("GET", f"x/{coding}", expect=list) == []
                got = "ok"
            except GitHubError as exc:
                got = exc.reason
    assert got == reason


# == the poller ==========================================================================


@dataclass
class World:
    sim: GitHubSim
    clock: FakeClock
    store: Store
    db_url: str

    def add(self) -> int:
        trigger = validate_poll_config({"repo": REPO, "poll_interval_seconds": 60})
        spec = ScheduleSpec(
            name="watch",
            trigger_type=TriggerType.GITHUB_POLL,
            trigger_config=trigger.model_dump(mode="json"),
            command="true",
            args=[],
        )
        return self.store.add_schedule(spec).id

    def poll(self, **overrides: Any) -> list[ScheduleRun]:
        self.clock.advance(61)
        settings = settings_for(
            self.db_url, github_api_url=self.sim.url, github_token=TOKEN, **overrides
        )
        engine = Engine(settings, self.store)
        engine.start()
        try:
            return engine.run_once()
        finally:
            engine.close()


@pytest.fixture
def world(db: SAEngine, db_url: str, tmp_path: Path) -> Iterator[World]:
    clock = FakeClock()
    with GitHubSim(tmp_path / "sim", clock=clock) as sim:
        sim.add_token(TOKEN, ("li-bot", 900))
        sim.create_repo(REPO)
        yield World(sim, clock, Store(db, clock), db_url)


@pytest.mark.parametrize(
    ("kind", "reason", "settings"),
    [
        ("gzip_bomb", "body_too_large", {}),
        ("huge", "body_too_large", {}),
        ("drip", "request_deadline", {"github_deadline_seconds": 1.0}),
    ],
)
def test_a_poll_hitting_an_unbounded_answer_records_a_failure(
    world: World, kind: str, reason: str, settings: dict[str, Any]
) -> None:
    sid = world.add()
    world.clock.advance(1)
    pr = world.sim.open_pr(REPO, "feature", {"a.py": "1\n"})
    world.sim.inject_body_fault(kind, "GET", r"/pulls$", drip_seconds=0.3)
    assert world.poll(**settings) == []
    state = PollStore(world.store).get_state(sid)
    assert state.last_error_reason == reason and state.consecutive_errors == 1
    [health] = schedule_health(world.store, "watch")
    assert health.facts.last_error_reason == reason
    [run] = world.poll()  # the next healthy poll fires the pull it could not read
    assert run.trigger_context["pr_number"] == pr.number


def test_a_poll_redirected_to_another_origin_fires_nothing_from_there(
    world: World, tmp_path: Path
) -> None:
    sid = world.add()
    with GitHubSim(tmp_path / "other", host="127.0.0.2", anonymous=True) as other:
        other.create_repo(REPO)
        other.open_pr(REPO, "elsewhere", {"b.txt": "x\n"})
        world.sim.inject_redirect(f"{other.url}/{PULLS}", "GET", r"/pulls$", times=None)
        assert world.poll() == []
        assert other.requests_to(r"/pulls$") == []
    state = PollStore(world.store).get_state(sid)
    assert state.last_error_reason == "redirect_refused" and state.consecutive_errors == 1
