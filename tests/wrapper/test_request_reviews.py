"""``kdev request-reviews`` against ghsim: triggers posted through the gate, a bot's quota
message marks it exhausted for the day, and its turn falls to the next bot."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from engine.config import Settings
from engine.github import GitHubClient, RequestPacer
from ghsim import GitHubSim
from wrapper.authorloop.requests import (
    BotRequest,
    choose,
    exhausted_today,
    read_state,
    request_reviews,
)
from wrapper.config import DEFAULT_BOTS, KdevConfig, ReviewBots
from wrapper.errors import ConfigError
from wrapper.ledger.ledger import Ledger
from wrapper.post import PostingContext

REPO = "octo/widgets"
TOKEN = "tok-requests"
T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
GEMINI_QUOTA = (
    "You have reached your daily quota limit. Please wait up to 24 hours and I will start "
    "processing your requests again!"
)
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


def bodies(sim: GitHubSim, pr: int) -> list[tuple[str, str]]:
    return [(c.user.login, c.body) for c in sim.comments(REPO) if c.pull_number == pr]


def test_the_rules_are_pure() -> None:
    comments = [
        {"user": {"login": "gemini-code-assist[bot]"}, "body": f"Hi!\n{GEMINI_QUOTA}",
         "created_at": "2026-12-01T08:00:00Z"},
        {"user": {"login": "gemini-code-assist[bot]"}, "body": GEMINI_QUOTA,
         "created_at": "2026-11-30T08:00:00Z"},
        {"user": {"login": "someone"}, "body": GEMINI_QUOTA, "created_at": "2026-12-01T08:00:00Z"},
    ]  # fmt: skip
    today = T0.date()
    assert exhausted_today(DEFAULT_BOTS, comments, today) == {"gemini": GEMINI_QUOTA}
    assert exhausted_today(DEFAULT_BOTS, comments[1:], today) == {}
    plan = choose(DEFAULT_BOTS, {"gemini": "quota"}, per_round=1)
    assert plan == [
        BotRequest("gemini", "exhausted", "quota"),
        BotRequest("cursor", "requested"),
        BotRequest("claude", "not_needed", "the round is full"),
    ]
    with pytest.raises(ConfigError) as caught:
        choose(DEFAULT_BOTS[:1], {"gemini": "quota"}, per_round=None)
    assert caught.value.reason == "no_review_bot"


def test_every_bot_is_asked_and_an_exhausted_one_falls_to_the_next(
    sim: GitHubSim, client: GitHubClient, tmp_path: Path
) -> None:
    pull = sim.open_pr(REPO, "feature/x", {"app.py": "print(2)\n"})
    ledger = Ledger(tmp_path / "reviews")
    config = KdevConfig(review_bots=ReviewBots(per_round=2))
    ctx = PostingContext(client, ledger, config, {"GITHUB_TOKEN": TOKEN}, REPO, pull.number)
    first = request_reviews(ctx, clock=sim.now)
    assert [(r.bot, r.state) for r in first] == [
        ("gemini", "requested"),
        ("cursor", "requested"),
        ("claude", "not_needed"),
    ]
    assert [b for _, b in bodies(sim, pull.number)] == ["/gemini review", "@cursor review"]
    # Every trigger went through the gate: its id is in kdev's posted-comment record.
    assert all(r.comment_id in ledger.posted_comment_ids(REPO) for r in first if r.comment_id)

    sim.comment(REPO, pull.number, GEMINI_QUOTA, author=("gemini-code-assist[bot]", 9001))
    second = request_reviews(ctx, clock=sim.now)
    assert [(r.bot, r.state) for r in second] == [
        ("gemini", "exhausted"),
        ("cursor", "requested"),
        ("claude", "requested"),
    ]
    assert second[0].reason == GEMINI_QUOTA
    assert read_state(ledger, REPO, T0.date()) == {"gemini": GEMINI_QUOTA}
    # Tomorrow the mark has expired and the quota comment is yesterday's.
    sim.advance(timedelta(days=1).total_seconds())
    third = request_reviews(ctx, clock=sim.now)
    assert [(r.bot, r.state) for r in third][0] == ("gemini", "requested")


def test_the_console_script(sim: GitHubSim, tmp_path: Path) -> None:
    # The real kdev judges "today" by its own clock: the quota reply must be dated now,
    # not at the fixture's fixed T0 (a run after that day's midnight never saw it).
    sim.set_time(datetime.now(UTC))
    pull = sim.open_pr(REPO, "feature/x", {"app.py": "print(2)\n"})
    (tmp_path / "kdev.yaml").write_text(
        "review_bots:\n  bots:\n    - {name: gemini, login: 'gemini-code-assist[bot]',"
        " trigger: /gemini review, quota_pattern: daily quota limit}\n"
    )
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "GITHUB_API_URL": sim.url,
        "GITHUB_TOKEN": TOKEN,
        "KDEV_CONFIG": str(tmp_path / "kdev.yaml"),
        "KDEV_REVIEWS_DIR": str(tmp_path / "reviews"),
    }
    argv = [KDEV, "request-reviews", "--repo", REPO, "--pr", str(pull.number), "--json"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert [b["state"] for b in json.loads(done.stdout)["bots"]] == ["requested"]
    sim.comment(REPO, pull.number, GEMINI_QUOTA, author=("gemini-code-assist[bot]", 9001))
    none_left = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    assert none_left.returncode == 2 and "[no_review_bot]" in none_left.stderr
    assert TOKEN not in done.stdout + done.stderr + none_left.stderr


def test_a_bad_bot_config_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "kdev.yaml").write_text(
        "review_bots:\n  bots:\n    - {name: x, login: y, trigger: z, quota_pattern: '(' }\n"
    )
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    shown = subprocess.run(
        [KDEV, "--config", str(tmp_path / "kdev.yaml"), "config", "validate"],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert shown.returncode == 2 and "quota_pattern" in shown.stdout
