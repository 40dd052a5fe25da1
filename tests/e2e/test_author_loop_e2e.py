"""The author's loop end to end against ghsim (issue 18): review rounds by kdev, review
bots asked by ``request-reviews`` and answering with comments in their real formats, one
bot out of quota, a finding that contradicts an earlier accepted fix, triage, close-out,
and ``loop-status`` walking ``continue`` -> ``escalate`` -> ``one_more_round`` ->
``stop_clean``. Every kdev verb runs as the real console script.

The independent validator (an INVALID roster finding withdrawn) is exercised in
tests/wrapper/test_findings_withdraw.py; here the bots are outside reviewers, whom kdev does not
validate.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from ghsim import GitHubSim
from tests.wrapper.reviewbench import BIN, REPO, Bench, open_bench

GEMINI = ("gemini-code-assist[bot]", 9001)
CURSOR = ("cursor[bot]", 9002)
CLAUDE = ("claude[bot]", 9003)
QUOTA = (
    "You have reached your daily quota limit. Please wait up to 24 hours and I will start "
    "processing your requests again!"
)
BUGBOT = (
    "### Bug: Unvalidated input reaches the division\n\n**High Severity**\n\n"
    "`ratio` divides by `count` without checking it is non-zero."
)
BUGBOT_AGAIN = (
    "### Bug: The zero check hides a real error\n\n**Medium Severity**\n\n"
    "Returning 0 when `count` is 0 hides the caller's mistake; raise instead."
)
CLAUDE_NIT = "nit: consider a docstring for `ratio`."


def kdev(bench: Bench, env: dict[str, str], *args: str) -> Any:
    argv = [str(BIN / "kdev"), *args, "--repo", REPO, "--json"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, f"{args}: {done.stdout}{done.stderr}"
    return json.loads(done.stdout)


def state(bench: Bench, env: dict[str, str], pr: int) -> str:
    return str(kdev(bench, env, "loop-status", "--pr", str(pr))["state"])


def bot_comments(sim: GitHubSim, pr: int) -> list[Any]:
    bots = {GEMINI[0], CURSOR[0], CLAUDE[0]}
    return [c for c in sim.comments(REPO) if c.pull_number == pr and c.user.login in bots]


def test_the_loop_reaches_stop_clean_and_closes_every_thread(tmp_path: Path) -> None:
    files = {"calc.py": "def ratio(total, count):\n    return total / count\n"}
    with open_bench(tmp_path, files) as bench:
        sim = bench.sim
        config = bench.config(
            budgets={"daily_rounds_per_pr": 20, "daily_legs_per_repo": 100},
            review_bots={"per_round": 2},
        )
        env = bench.kdev_env(config)
        change = {"calc.py": "def ratio(total, count):\n    return total / count  # TODO\n"}
        pr = sim.open_pr(REPO, "feature/ratio", change, author=("author", 77)).number
        n = str(pr)

        # Round 1: kdev's review asks for changes (the stub flags the TODO).
        assert bench.review(pr).verdict == "REQUEST_CHANGES"
        asked = kdev(bench, env, "request-reviews", "--pr", n)["bots"]
        assert [b["state"] for b in asked] == ["requested", "requested", "not_needed"]
        sim.comment(REPO, pr, QUOTA, GEMINI)
        finding = sim.comment(REPO, pr, BUGBOT, CURSOR, kind="review", path="calc.py", line=2)
        again = kdev(bench, env, "request-reviews", "--pr", n)["bots"]
        assert [(b["bot"], b["state"]) for b in again] == [
            ("gemini", "exhausted"),
            ("cursor", "requested"),
            ("claude", "requested"),
        ]
        nit = sim.comment(REPO, pr, CLAUDE_NIT, CLAUDE)
        decided = {
            d["comment_id"]: d["decision"]
            for d in kdev(bench, env, "triage", "--pr", n)["decisions"]
        }
        assert decided[finding.id] == "fix" and decided[nit.id] == "reject"
        assert state(bench, env, pr) == "continue"

        # Round 2: the author fixes the division; a bot now asks to undo a line of it.
        sim.push(
            REPO,
            pr,
            {"calc.py": "def ratio(total, count):\n    return total / count if count else 0\n"},
        )
        assert bench.review(pr).verdict == "APPROVE"
        reversal = sim.comment(
            REPO, pr, BUGBOT_AGAIN, CURSOR, kind="review", path="calc.py", line=2
        )
        kdev(bench, env, "triage", "--pr", n)
        status = kdev(bench, env, "loop-status", "--pr", n)
        assert status["state"] == "escalate" and "possible reversal" in status["reason"]
        kdev(
            bench, env, "triage", "--pr", n,
            "--decide", f"{reversal.id}=reject:reverses the accepted fix of round 1",
        )  # fmt: skip
        assert state(bench, env, pr) == "continue"  # one clean round is not enough

        # Rounds 3 and 4: clean; two clean rounds ask for one verification round.
        sim.push(REPO, pr, {"README.md": "ratio() returns 0 for an empty count\n"})
        assert bench.review(pr).verdict == "APPROVE"
        assert state(bench, env, pr) == "one_more_round"
        sim.push(REPO, pr, {"README.md": "ratio() returns 0 for an empty count.\n"})
        assert bench.review(pr).verdict == "APPROVE"
        final = kdev(bench, env, "loop-status", "--pr", n)
        assert (final["state"], final["rounds"]) == ("stop_clean", 4)

        # Close-out: every settled bot comment replied (inline ones in their thread),
        # its thread resolved, and hidden; a second run does nothing.
        closed = kdev(bench, env, "close-out", "--pr", n)["closed"]
        assert {c["comment_id"] for c in closed} >= {finding.id, nit.id, reversal.id}
        for comment in bot_comments(sim, pr):
            assert sim.minimized(REPO, comment.id), comment.body
            if comment.kind == "review":
                assert sim.thread_resolved(REPO, comment.id)
                assert any(r.in_reply_to_id == comment.id for r in sim.comments(REPO))
        assert all(c["done_now"] == [] for c in kdev(bench, env, "close-out", "--pr", n)["closed"])
        summary = kdev(bench, env, "pr-status", "--pr", n)
        assert summary["dispositions"]["fixed"] == 1
        assert summary["dispositions"]["wont_fix"] == 1  # the reversal, rejected by hand
