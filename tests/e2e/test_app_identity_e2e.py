"""The whole loop as a GitHub App (issue 30): li polls and kdev reviews with the App's
installation token, shared through one cache file; what they post is the bot's."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from demo.run_demo import REVIEW_ARGS, setup_pipeline
from engine.github.tokencache import CachedToken, TokenCache
from ghsim import GitHubSim
from tests.appkit import SimApp, install_app
from tests.e2e.test_review_e2e import Loop

BIN = Path(sys.executable).parent
REPO = "octo/widgets"
BOT = "kdev-review[bot]"


def app_environment(env: dict[str, str], app: SimApp, root: Path) -> dict[str, str]:
    """``env`` with the App instead of the token; the handover names it to kdev."""
    env = {k: v for k, v in env.items() if k != "GITHUB_TOKEN"}
    env["LI_ENV_PASSTHROUGH"] = "GITHUB_API_URL,KDEV_CONFIG,KDEV_REVIEWS_DIR"
    env["GITHUB_APP_ID"] = str(app.app.id)
    env["GITHUB_APP_PRIVATE_KEY_FILE"] = str(app.key_file)
    env["GITHUB_APP_INSTALLATION_ID"] = str(app.installation.id)
    env["GITHUB_APP_TOKEN_CACHE"] = str(root / "state" / "app-token.json")
    return env


@pytest.fixture
def app_loop(tmp_path: Path) -> Iterator[tuple[Loop, SimApp]]:
    with GitHubSim(tmp_path / "github") as sim:
        sim.create_repo(REPO, files={"app.py": "print('hi')\n"})
        app = install_app(sim, tmp_path / "github")
        checkout, env = setup_pipeline(sim, REPO, tmp_path, "no-token")
        config = Path(env["KDEV_CONFIG"])
        # notify ends the file: a notice posted on the PR too, then the gate and one review.
        gate = (
            "  - type: github-comment\nmerge_gate:\n  enabled: true\n"
            "mention_handle: kdev\nreview_post:\n  enabled: true\n"
        )
        config.write_text(config.read_text() + gate)
        loop = Loop(sim, app_environment(env, app, tmp_path), tmp_path)
        loop.li(
            "schedule", "add", "review", "--github", REPO, "--poll-interval", "1m",
            "--cwd", str(checkout), "--timeout", "5m", "--command", "kdev", "--",
            *REVIEW_ARGS, "--json",
        )  # fmt: skip
        sim.advance(2)
        yield loop, app


def minted(sim: GitHubSim) -> int:
    return len(sim.requests_to(r"/access_tokens$", "POST"))


def test_a_pr_is_reviewed_as_the_bot_and_a_refused_token_is_refreshed_mid_pass(
    app_loop: tuple[Loop, SimApp],
) -> None:
    loop, app = app_loop
    sim = loop.sim
    pr = sim.open_pr(REPO, "feature", {"util.py": "def f():\n    pass  # TODO\n"})
    # GitHub stops taking the engine's token when kdev first reads the pull: kdev's call
    # gets 401, drops the shared token, mints one and goes on (no failed run).
    sim.inject_fault("GET", rf"^/repos/{REPO}/pulls/{pr.number}$", status=401)
    runs = loop.engine_pass()
    assert loop.outcomes(runs) == [(pr.number, "reviewed")]
    assert minted(sim) == 2  # the engine's, then kdev's after the 401
    reviews = sim.reviews(REPO, pr.number)
    assert reviews  # the round, posted as one review (review_post)
    authors = {c.user.login for c in sim.comments(REPO)} | {r.user.login for r in reviews}
    assert authors == {BOT}
    # As an App the merge gate is the App's check run, not a commit status (D109).
    head = sim.pull(REPO, pr.number).head_sha
    assert sim.statuses_for(sim.repo(REPO), head) == []
    [gate] = sim.check_runs_for(sim.repo(REPO), head)
    assert gate.name == "kdev/review" and gate.app_id == app.app.id
    assert sim.app(gate.app_id).bot.login == BOT
    # With review_post off the round is a PR comment (the github-comment notice): the
    # bot's too, and the next pass takes the shared token without minting.
    config = Path(loop.env["KDEV_CONFIG"])
    config.write_text(config.read_text().replace("review_post:\n  enabled: true", ""))
    second = sim.open_pr(REPO, "second", {"b.py": "y = 2\n"})
    sim.advance(2)
    assert (second.number, "reviewed") in loop.outcomes(loop.engine_pass())
    notices = [c for c in sim.comments(REPO) if c.kind == "issue"]
    assert notices and {c.user.login for c in notices} == {BOT}
    assert minted(sim) == 2
    assert sim.user(BOT).type == "Bot"
    cache = Path(loop.env["GITHUB_APP_TOKEN_CACHE"])
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    token = TokenCache(cache).read()
    assert token is not None
    for run in runs:
        detail = loop.li("schedule", "run", str(run["id"]), "--json")
        assert token.token not in detail and "PRIVATE KEY" not in detail


def kdev_check_ci(env: dict[str, str], pr: int) -> subprocess.Popen[str]:
    argv = [str(BIN / "kdev"), "check-ci", "--repo", REPO, "--pr", str(pr), "--json"]
    return subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def test_kdevs_started_after_expiry_mint_one_token_between_them(
    app_loop: tuple[Loop, SimApp],
) -> None:
    loop, app = app_loop
    sim = loop.sim
    pr = sim.open_pr(REPO, "feature", {"util.py": "x = 1\n"})
    sim.set_check_run(REPO, pr.head_sha, "tests", conclusion="success")
    env = {k: v for k, v in loop.env.items() if not k.startswith("LI_")}
    first = kdev_check_ci(env, pr.number)
    said = first.communicate(timeout=60)
    assert first.returncode == 0, said
    assert minted(sim) == 1
    cache = TokenCache(Path(env["GITHUB_APP_TOKEN_CACHE"]))
    old = cache.read()
    assert old is not None
    # An hour later, as far as this host can tell: the shared token has expired.
    cache.write(CachedToken(old.token, old.expires_at - timedelta(hours=1), old.installation_id))
    procs = [kdev_check_ci(env, pr.number) for _ in range(4)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], outs
    assert all(json.loads(out)["state"] == "green" for out, _ in outs)
    assert minted(sim) == 2  # one fresh token for the four of them
    fresh = cache.read()
    assert fresh is not None and fresh.token != old.token
    assert all(fresh.token not in out + err for out, err in outs)
    assert os.environ.get("GITHUB_APP_ID") is None


def break_revoked(sim: GitHubSim, app: SimApp, env: dict[str, str]) -> None:
    sim.revoke_app_key(app.app.id, app.keys.public)


def break_suspended(sim: GitHubSim, app: SimApp, env: dict[str, str]) -> None:
    sim.suspend_installation(app.installation.id)


def break_outside(sim: GitHubSim, app: SimApp, env: dict[str, str]) -> None:
    sim.create_repo("other/thing")
    env["GITHUB_APP_REPOSITORY"] = "other/thing"  # must be in the installation: it is not


def break_clock(sim: GitHubSim, app: SimApp, env: dict[str, str]) -> None:
    from datetime import UTC, datetime

    sim.set_time(datetime.now(UTC) - timedelta(minutes=10))  # GitHub's clock, behind ours


@pytest.mark.parametrize(
    ("breakage", "reason"),
    [
        (break_revoked, "app_key_rejected"),
        (break_suspended, "app_installation_suspended"),
        (break_outside, "app_not_installed"),
        (break_clock, "app_clock_skew"),
    ],
)
def test_each_app_failure_is_one_line_with_a_reason_and_health_that_pages(
    app_loop: tuple[Loop, SimApp], breakage, reason: str
) -> None:
    loop, app = app_loop
    breakage(loop.sim, app, loop.env)
    loop.li("schedule", "trigger", "review")
    loop.li("engine", "run", "--once")
    health = subprocess.run(
        [str(BIN / "li"), "schedule", "health", "review", "--json"],
        env=loop.env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert health.returncode == 20, health.stdout + health.stderr  # blind: pages
    [row] = json.loads(health.stdout)
    assert row["state"] == "blind"
    assert [c["code"] for c in row["causes"]][0] == reason
    env = {k: v for k, v in loop.env.items() if not k.startswith("LI_")}
    done = subprocess.run(
        [str(BIN / "kdev"), "check-ci", "--repo", REPO, "--pr", "1"],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    last = done.stderr.strip().splitlines()
    assert done.returncode != 0 and len(last) == 1, done.stderr
    assert last[0].startswith("error: ") and last[0].endswith(f"[{reason}]")
    assert "PRIVATE KEY" not in done.stderr + health.stdout


def test_tokens_that_age_out_within_a_pass_are_refreshed_before_github_refuses_them(
    app_loop: tuple[Loop, SimApp],
) -> None:
    """On the real clock, tokens that are inside the 5-minute refresh margin as soon as
    they are minted (ghsim's clock runs a little ahead of this host's here: its lifetime
    is set to match), so every token ages out while the pass uses it and the next
    request takes a fresh one, and GitHub never answers 401. (A margin entered some
    seconds after minting made the test depend on how fast the machine ran the pass.)"""
    from datetime import UTC, datetime

    loop, app = app_loop
    sim = loop.sim
    pr = sim.open_pr(REPO, "feature", {"util.py": "def f():\n    pass  # TODO\n"})
    sim.advance(2)
    ahead = (sim.now() - datetime.now(UTC)).total_seconds()
    sim.set_token_lifetime(300 - ahead - 1)
    assert loop.outcomes(loop.engine_pass()) == [(pr.number, "reviewed")]
    assert minted(sim) >= 2  # the engine's token aged out before kdev was done with it
    assert [r.path for r in sim.requests if r.status == 401] == []
    [gate] = sim.check_runs_for(sim.repo(REPO), pr.head_sha)  # the App's (D109)
    assert (gate.name, gate.app_id, gate.conclusion) == ("kdev/review", app.app.id, "failure")
