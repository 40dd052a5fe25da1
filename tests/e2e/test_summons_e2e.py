"""Issue 29 end to end: ghsim + real git + `li engine run --once` on a mentions schedule
(the one docs/triggers.md shows) + `kdev review-pr --comment-id` + the stub reviewer. A
maintainer's summons gets one 👀 and one reply that links to the posted review; the
next passes fire nothing and add nothing; a second summons at the same head gets its
own 👀 and reply."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from demo.run_demo import setup_pipeline
from ghsim import GitHubSim

BIN = Path(sys.executable).parent
REPO = "octo/widgets"
MAINT = ("maint", 501)
BOT = ("review-bot", 5000)


def _li(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [str(BIN / "li"), *args], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _pass(env: dict[str, str]) -> list[dict[str, Any]]:
    """One engine pass of the schedule; the new runs' last JSON lines (kdev's reports)."""
    before = {r["id"] for r in json.loads(_li(env, "schedule", "runs", "--json"))}
    _li(env, "schedule", "trigger", "summon")
    _li(env, "engine", "run", "--once")
    reports = []
    for run in json.loads(_li(env, "schedule", "runs", "--json")):
        if run["id"] in before:
            continue
        detail = json.loads(_li(env, "schedule", "run", str(run["id"]), "--json"))
        assert detail["status"] == "succeeded", detail
        reports.append(json.loads(detail["stdout_tail"].strip().splitlines()[-1]))
    return reports


def _answers(sim: GitHubSim, comment_id: int) -> tuple[list[str], list[str]]:
    """The 👀 on ``comment_id`` (by whom) and the bodies of kdev's replies to it."""
    eyes = [r.user.login for r in sim.reactions(REPO, comment_id) if r.content == "eyes"]
    tag = f"<!-- kdev-summons: {comment_id} -->"
    replies = [
        c.body
        for c in sim.comments(REPO, "issue")
        if c.user.login == BOT[0] and c.body.rstrip().endswith(tag)
    ]
    return eyes, replies


def test_a_summons_through_li_is_answered_once(tmp_path: Path) -> None:
    token = f"tok-{uuid.uuid4().hex}"
    with GitHubSim(tmp_path / "github") as sim:
        sim.add_token(token, BOT)
        sim.create_repo(REPO, files={"app.py": "print('hi')\n"})
        checkout, env = setup_pipeline(sim, REPO, tmp_path, token)
        config = tmp_path / "kdev.yaml"
        config.write_text(
            config.read_text()
            + "mention_handle: kdev\nmention_allowlist: [501]\nreview_post: {enabled: true}\n"
        )
        _li(
            env, "schedule", "add", "summon", "--github", REPO, "--event", "mentions",
            "--handle", "kdev", "--allow-user", str(MAINT[1]), "--poll-interval", "1m",
            "--cwd", str(checkout), "--timeout", "5m", "--command", "kdev", "--",
            "review-pr", "--repo", "{{repo}}", "--pr", "{{pr_number}}",
            "--head-sha", "{{head_sha}}", "--comment-id={{ comment_id | default('') }}", "--json",
        )  # fmt: skip
        sim.advance(2)
        pr = sim.open_pr(REPO, "feature", {"util.py": "def f():\n    pass  # TODO\n"})
        asked = sim.comment(REPO, pr.number, "@kdev review please", MAINT)
        sim.advance(2)
        [report] = _pass(env)
        assert (report["pr"], report["outcome"]) == (pr.number, "reviewed")
        [review] = sim.reviews(REPO, pr.number)
        eyes, replies = _answers(sim, asked.id)
        assert eyes == [BOT[0]] and len(replies) == 1
        assert re.search(rf"#pullrequestreview-{review.id}\b", replies[0])

        sim.advance(2)
        assert _pass(env) == []  # the summons fired once; kdev's reply summons nobody
        assert _answers(sim, asked.id) == (eyes, replies)

        again = sim.comment(REPO, pr.number, "@kdev once more", MAINT)
        sim.advance(2)
        [second] = _pass(env)
        assert second["outcome"] == "carried_forward"
        eyes2, replies2 = _answers(sim, again.id)
        assert eyes2 == [BOT[0]] and len(replies2) == 1
        assert f"#pullrequestreview-{review.id}" in replies2[0]
        assert _answers(sim, asked.id) == (eyes, replies)
        assert len(sim.reviews(REPO, pr.number)) == 1
