"""The author's loop end to end against ghsim (issue 18, "Acceptance").

Review bots are scripted ghsim accounts (ghsim/bots.py) that answer the trigger comments
``kdev request-reviews`` posts, by themselves, in their real formats: Gemini answers its
first trigger with its daily-quota message, Cursor Bugbot with a ``### title`` /
``**High Severity**`` line comment (and, two rounds later, with a finding that would undo
the accepted fix), Claude with a nit. The test never posts a bot's answer itself; it
finds them through the simulator. Every kdev verb runs as the real console script.

kdev's own review of round 1 runs in roster mode with the independent validator on (the
roster files and the scripted reviewer/validator of tests/wrapper/test_roster.py and
tests/wrapper/test_findings_withdraw.py): its P1 finding on ``plugins/auth/card.py`` is
found INVALID, posted as a line comment, then withdrawn on its thread (a reply with the
validator's reason, then resolved) and counted as withdrawn by ``pr-status``.

Rounds are kdev's reviewed heads (``loop-status``): round 1 asks for changes (the roster
reviewers' VALID P2 as well as the INVALID P1); round 2 fixes the division and is clean
by kdev but brings the bot's reversal (``escalate``, settled by hand); rounds 3 and 4 are
clean. ``loop-status`` stops clean when the last three rounds had no P1/P2 (two clean
rounds and the verification round), so rounds 2, 3, 4 make ``stop_clean`` at 4, with
``one_more_round`` at 3. Only round 1 runs in roster mode, and it asks for changes on its
own account (the VALID P2); a withdrawn finding blocks nothing (D57, found by this test:
tests/wrapper/test_withdrawn_verdict.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from ghsim import Comment, GitHubSim
from tests.wrapper.reviewbench import BIN, REPO, Bench, open_bench
from tests.wrapper.test_findings_withdraw import VALIDATING_REVIEWER, WITHDRAWN
from tests.wrapper.test_roster import PCI_ONLY, ROOT_FILE, roster_config
from wrapper.config import KdevConfig
from wrapper.review.findings import signed_by

GEMINI = ("gemini-code-assist[bot]", 9001)
CURSOR = ("cursor[bot]", 9002)
CLAUDE = ("claude[bot]", 9003)
QUOTA = (
    "You have reached your daily quota limit. Please wait up to 24 hours and I will start "
    "processing your requests again!"
)
BUGBOT = (
    "### Bug: Unvalidated input reaches the division\n\n**High Severity**\n\n"
    "<!-- DESCRIPTION START -->\n"
    "`ratio` divides by `count` without checking it is non-zero.\n"
    "<!-- DESCRIPTION END -->\n\n"
    "<!-- BUGBOT_BUG_ID: 6f1c2a0e-3d4b-4c5a-9e8f-0a1b2c3d4e5f -->"
)
BUGBOT_AGAIN = (
    "### Bug: The zero check hides a real error\n\n**Medium Severity**\n\n"
    "<!-- DESCRIPTION START -->\n"
    "Returning 0 when `count` is 0 hides the caller's mistake; raise instead.\n"
    "<!-- DESCRIPTION END -->\n\n"
    "<!-- BUGBOT_BUG_ID: 0b9e8d7c-6a5f-4e3d-8c2b-1a0f9e8d7c6b -->"
)
CLAUDE_NIT = "nit: consider a docstring for `ratio`."
BASE_FILES = {
    "calc.py": "def ratio(total, count):\n    return total / count\n",
    "AGENT-REVIEWERS.md": ROOT_FILE,
    "plugins/auth/AGENT-REVIEWERS.md": PCI_ONLY,
}


def kdev(bench: Bench, env: dict[str, str], *args: str) -> Any:
    argv = [str(BIN / "kdev"), *args, "--repo", REPO, "--json"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, f"{args}: {done.stdout}{done.stderr}"
    return json.loads(done.stdout)


def state(bench: Bench, env: dict[str, str], pr: int) -> str:
    return str(kdev(bench, env, "loop-status", "--pr", str(pr))["state"])


def answers(sim: GitHubSim, login: str, pr: int) -> list[Comment]:
    """What the scripted bot ``login`` posted on ``pr`` by itself, oldest first."""
    (bot,) = [b for b in sim.review_bots(REPO) if b.user.login == login]
    return [c for c in sim.comments(REPO) if c.id in bot.posted and c.pull_number == pr]


def bot_comments(sim: GitHubSim, pr: int) -> list[Comment]:
    return [a for login, _ in (GEMINI, CURSOR, CLAUDE) for a in answers(sim, login, pr)]


def add_bots(sim: GitHubSim) -> None:
    sim.add_review_bot(REPO, *GEMINI, trigger="/gemini review", answers=[QUOTA])
    sim.add_review_bot(
        REPO,
        *CURSOR,
        trigger="@cursor review",
        answers=[
            {"body": BUGBOT, "path": "calc.py", "line": 2},  # round 1
            None,  # round 1, asked again: nothing new on the same head
            {"body": BUGBOT_AGAIN, "path": "calc.py", "line": 2},  # round 2: the reversal
        ],  # later rounds: the script is used up, the bot stays silent
    )
    sim.add_review_bot(REPO, *CLAUDE, trigger="@claude review", answers=[CLAUDE_NIT, None])


def configs(bench: Bench) -> tuple[KdevConfig, KdevConfig]:
    """The loop's config (the stub reviewer, one leg a round) and round 1's: the same in
    roster mode, with the scripted reviewer/validator of test_findings_withdraw.py."""
    config = bench.config(
        budgets={"daily_rounds_per_pr": 20, "daily_legs_per_repo": 100},
        review_bots={"per_round": 2},
        mention_handle="kdev",
    )
    script = bench.root / "validating_reviewer.py"
    script.write_text(VALIDATING_REVIEWER)
    roster = roster_config(bench, [sys.executable, "-P", str(script)])
    budgets = config.budgets.model_copy(update={"max_concurrent_legs_per_repo": 3})
    return config, config.model_copy(update={"reviewer": roster.reviewer, "budgets": budgets})


def check_the_invalid_finding(bench: Bench, env: dict[str, str], pr: int) -> None:
    """Round 1's INVALID finding: posted as a line comment, replied to with the
    validator's reason, resolved, and counted as withdrawn."""
    sim = bench.sim
    (invalid,) = [
        c
        for c in sim.comments(REPO, "review")
        if c.pull_number == pr and signed_by(c.body) == "pci-auditor" and c.in_reply_to_id is None
    ]
    assert "reaches the log" in invalid.body
    assert (invalid.path, invalid.line) == ("plugins/auth/card.py", 1)
    (reply,) = [c for c in sim.comments(REPO, "review") if c.in_reply_to_id == invalid.id]
    assert reply.body.startswith(f"{WITHDRAWN}: INVALID: the log call masks the number")
    assert "@kdev" not in reply.body  # the validator's reason went through the gate
    assert sim.thread_resolved(REPO, invalid.id)
    shown = kdev(bench, env, "comments", "--pr", str(pr), "--agent", "pci-auditor")["items"]
    assert [i["resolved"] for i in shown if i["id"] == invalid.id] == [True]
    # pr-status counts it withdrawn (with the UNCERTAIN one the roster drops) and shows
    # the validator's acceptance of the pci-auditor's findings: none of one.
    posting = kdev(bench, env, "pr-status", "--pr", str(pr))["posting"]
    assert (posting["expected"], posting["posted"], posting["withdrawn"]) == (4, 4, 2)
    assert posting["complete"] is True
    assert posting["validator_acceptance"]["pci-auditor"] == {
        "valid": 0,
        "invalid": 1,
        "uncertain": 0,
    }


def own_findings(sim: GitHubSim, pr: int) -> dict[str, int]:
    """kdev's posted roster findings that were not withdrawn: a word of their text -> id."""
    texts = ("the loop in app.py never ends", "the name card is vague")
    found = {}
    for comment in sim.comments(REPO):
        text = next((t for t in texts if t in comment.body), None)
        if comment.pull_number == pr and text and signed_by(comment.body):
            found[text] = comment.id
    assert set(found) == set(texts)
    return found


def test_the_loop_reaches_stop_clean_and_closes_every_thread(tmp_path: Path) -> None:
    with open_bench(tmp_path, BASE_FILES) as bench:
        sim = bench.sim
        add_bots(sim)
        config, roster = configs(bench)
        env = bench.kdev_env(config)
        change = {
            "calc.py": "def ratio(total, count):\n    return total / count  # TODO\n",
            "plugins/auth/card.py": "card = 2\n",
        }
        pr = sim.open_pr(REPO, "feature/ratio", change, author=("author", 77)).number
        n = str(pr)

        # Round 1: kdev's roster review asks for changes; the validator withdraws one.
        assert bench.review(pr, config=roster).verdict == "REQUEST_CHANGES"
        check_the_invalid_finding(bench, env, pr)
        # The bots answer request-reviews by themselves: Gemini is out of quota, Bugbot
        # posts a finding; the next request skips Gemini and asks Claude instead.
        asked = kdev(bench, env, "request-reviews", "--pr", n)["bots"]
        assert [b["state"] for b in asked] == ["requested", "requested", "not_needed"]
        ((quota,), (finding,)) = answers(sim, GEMINI[0], pr), answers(sim, CURSOR[0], pr)
        assert quota.body == QUOTA and quota.kind == "issue"
        assert (finding.kind, finding.path, finding.line) == ("review", "calc.py", 2)
        assert finding.id > asked[1]["comment_id"]  # answered after its trigger
        again = kdev(bench, env, "request-reviews", "--pr", n)["bots"]
        assert [(b["bot"], b["state"]) for b in again] == [
            ("gemini", "exhausted"),
            ("cursor", "requested"),
            ("claude", "requested"),
        ]
        assert again[0]["reason"] == QUOTA
        assert answers(sim, CURSOR[0], pr) == [finding]  # nothing new on the same head
        (nit,) = answers(sim, CLAUDE[0], pr)
        assert nit.body == CLAUDE_NIT
        decided = {
            d["comment_id"]: d["decision"]
            for d in kdev(bench, env, "triage", "--pr", n)["decisions"]
        }
        assert decided[finding.id] == "fix" and decided[nit.id] == "reject"
        # kdev's own roster findings join the loop (D63): the VALID P2 is to be fixed, the
        # P3 rejected; the two the validator withdrew are closed by their withdrawal.
        own = own_findings(sim, pr)
        assert {own[text]: decided.get(own[text]) for text in own} == {
            own["the loop in app.py never ends"]: "fix",
            own["the name card is vague"]: "reject",
        }
        assert state(bench, env, pr) == "continue"

        # Round 2: the author fixes the division; Bugbot now asks to undo a line of it.
        sim.push(
            REPO,
            pr,
            {"calc.py": "def ratio(total, count):\n    return total / count if count else 0\n"},
        )
        assert bench.review(pr, config=config).verdict == "APPROVE"
        asked = kdev(bench, env, "request-reviews", "--pr", n)["bots"]
        assert [b["state"] for b in asked] == ["exhausted", "requested", "requested"]
        reversal = answers(sim, CURSOR[0], pr)[-1]
        assert reversal.body == BUGBOT_AGAIN and (reversal.path, reversal.line) == ("calc.py", 2)
        assert len(answers(sim, CLAUDE[0], pr)) == 1  # Claude had nothing more to say
        kdev(bench, env, "triage", "--pr", n)
        status = kdev(bench, env, "loop-status", "--pr", n)
        assert status["state"] == "escalate" and "possible reversal" in status["reason"]
        kdev(
            bench, env, "triage", "--pr", n,
            "--decide", f"{reversal.id}=reject:reverses the accepted fix of round 1",
        )  # fmt: skip
        assert state(bench, env, pr) == "continue"  # one clean round is not enough

        # Rounds 3 and 4: clean, and the bots have nothing more to say; two clean rounds
        # ask for one verification round, and a clean one stops the loop.
        for text, expected in (("0 for an empty count\n", "one_more_round"), (".\n", None)):
            sim.push(REPO, pr, {"README.md": f"ratio() returns {text}"})
            assert bench.review(pr, config=config).verdict == "APPROVE"
            kdev(bench, env, "request-reviews", "--pr", n)
            if expected is not None:
                assert state(bench, env, pr) == expected
        assert len(bot_comments(sim, pr)) == 4  # quota, finding, nit, reversal
        final = kdev(bench, env, "loop-status", "--pr", n)
        assert (final["state"], final["rounds"]) == ("stop_clean", 4)

        # Close-out: every settled bot comment replied (inline ones in their thread),
        # its thread resolved, and hidden; a second run does nothing.
        closed = kdev(bench, env, "close-out", "--pr", n)["closed"]
        assert {c["comment_id"] for c in closed} >= {finding.id, nit.id, reversal.id}
        assert {c["comment_id"] for c in closed} >= set(own.values())
        assert all(sim.minimized(REPO, ident) for ident in own.values())
        replied_to = {c.in_reply_to_id for c in sim.comments(REPO)}
        for comment in bot_comments(sim, pr):
            assert sim.minimized(REPO, comment.id), comment.body
            if comment.kind == "review":
                assert sim.thread_resolved(REPO, comment.id) and comment.id in replied_to
        # Every review thread on the PR, the withdrawn finding's included, is answered
        # and resolved.
        roots = [
            c
            for c in sim.comments(REPO, "review")
            if c.pull_number == pr and c.in_reply_to_id is None
        ]
        assert len(roots) == 3
        assert all(sim.thread_resolved(REPO, c.id) and c.id in replied_to for c in roots)
        assert all(c["done_now"] == [] for c in kdev(bench, env, "close-out", "--pr", n)["closed"])
        summary = kdev(bench, env, "pr-status", "--pr", n)
        assert summary["dispositions"]["fixed"] == 2  # Bugbot's finding and kdev's own P2
        assert summary["dispositions"]["wont_fix"] == 1  # the reversal, rejected by hand
