"""``kdev pr-status`` reports branch protection from GitHub (issue 18): classic protection
and rulesets served by ghsim over HTTP, read by the real console script.

Required approvals against the approvals GitHub counts, a stale approval dismissed by a
push, ruleset-only protection, an unprotected branch, and tokens without admin rights
(a user's: 404, a bot's: 403) that still read the rules and never report ``satisfied``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ghsim import GitHubSim

REPO = "octo/widgets"
BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[2]
ADMIN, USER, APP = "tok-admin-owner", "tok-plain-user", "tok-some-app"
ALICE, BOB, CAROL = ("alice", 7001), ("bob", 7002), ("carol", 7003)


@dataclass
class Env:
    sim: GitHubSim
    root: Path

    def status(self, pr: int, token: str = ADMIN, *, text: bool = False) -> Any:
        config = self.root / "kdev.yaml"
        config.write_text(f"mention_handle: kdev-bot\nreviews_dir: {self.root / 'reviews'}\n")
        env = {
            "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
            "HOME": str(self.root),
            "PYTHONPATH": str(ROOT),
            "GITHUB_API_URL": self.sim.url,
            "GITHUB_TOKEN": token,
            "KDEV_CONFIG": str(config),
        }
        argv = [str(BIN / "kdev"), "pr-status", "--repo", REPO, "--pr", str(pr)]
        done = subprocess.run(
            argv + ([] if text else ["--json"]),
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert token not in done.stdout + done.stderr
        if text:
            return done.stdout
        return json.loads(done.stdout)["protection"]


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    with GitHubSim(tmp_path / "github") as sim:
        sim.add_token(ADMIN, ("octo", 500))  # the repository owner: admin rights
        sim.add_token(USER, ("plain-user", 501))
        sim.add_token(APP, ("some-app[bot]", 502))
        sim.create_repo(REPO, owner_id=500, files={"app.py": "print('hi')\n"})
        for who in (ALICE, BOB):
            sim.add_collaborator(REPO, who)
        yield Env(sim, tmp_path)


def test_two_required_approvals_and_one_given_is_unsatisfied(env: Env) -> None:
    sim = env.sim
    sim.protect_branch(REPO, "main", required_approvals=2, required_checks=["tests"])
    pr = sim.open_pr(REPO, "feature", {"a.py": "x = 1\n"}, author=("author", 7000))
    sim.set_check_run(REPO, pr.head_sha, "tests")
    sim.review(REPO, pr.number, "APPROVED", author=ALICE)
    sim.review(REPO, pr.number, "APPROVED", author=CAROL)  # no write access
    sim.review(REPO, pr.number, "APPROVED", author=("author", 7000))  # the author's own
    got = env.status(pr.number)
    assert (got["state"], got["codes"]) == ("unsatisfied", ["approvals_missing"])
    assert got["reasons"] == ["approvals 1 of 2"]
    assert got["approvals"] == ["alice"] and got["requirements"]["required_approvals"] == 2
    assert got["not_counted"] == {"carol": "no_write_access", "author": "author"}
    assert (got["classic"], got["rules"], got["checks"]) == (
        "protected",
        "read",
        {"tests": "passed"},
    )
    text = env.status(pr.number, text=True)
    assert "protection: unsatisfied (approvals 1 of 2)\n" in text
    assert "  required checks: tests: passed\n" in text

    sim.review(REPO, pr.number, "CHANGES_REQUESTED", author=BOB)
    got = env.status(pr.number)
    assert got["codes"] == ["approvals_missing", "changes_requested"]
    sim.review(REPO, pr.number, "COMMENTED", author=BOB)  # a comment changes nothing
    assert env.status(pr.number)["changes_requested_by"] == ["bob"]
    sim.review(REPO, pr.number, "APPROVED", author=BOB)  # the latest decisive review wins
    assert env.status(pr.number)["state"] == "satisfied"
    sim.set_check_run(REPO, pr.head_sha, "tests", status="completed", conclusion="failure")
    got = env.status(pr.number)
    assert (got["state"], got["reasons"]) == ("unsatisfied", ["check tests failing"])


def test_a_push_dismisses_a_stale_approval(env: Env) -> None:
    sim = env.sim
    sim.protect_branch(REPO, "main", required_approvals=1, dismiss_stale_reviews=True)
    pr = sim.open_pr(REPO, "feature", {"a.py": "x = 1\n"}, author=("author", 7000))
    sim.review(REPO, pr.number, "APPROVED", author=ALICE)
    assert env.status(pr.number)["state"] == "satisfied"
    sim.push(REPO, pr.number, {"a.py": "x = 2\n"})
    assert [r.state for r in sim.reviews(REPO, pr.number)] == ["DISMISSED"]
    got = env.status(pr.number)
    assert (got["state"], got["not_counted"]) == ("unsatisfied", {"alice": "dismissed"})
    sim.review(REPO, pr.number, "APPROVED", author=ALICE)
    got = env.status(pr.number)
    assert (got["state"], got["approvals"], got["approvals_at_head"]) == ("satisfied", ["alice"], 1)


def test_without_dismissal_an_older_approval_counts_unless_the_last_push_needs_one(
    env: Env,
) -> None:
    """As on GitHub: stale approvals count when they are not dismissed on push; a rule that
    wants the last push approved counts only approvals of the head."""
    sim = env.sim
    sim.protect_branch(REPO, "main", required_approvals=1)
    pr = sim.open_pr(REPO, "feature", {"a.py": "x = 1\n"}, author=("author", 7000))
    sim.review(REPO, pr.number, "APPROVED", author=ALICE)
    sim.push(REPO, pr.number, {"a.py": "x = 2\n"})
    got = env.status(pr.number)
    assert (got["state"], got["approvals"], got["approvals_at_head"]) == ("satisfied", ["alice"], 0)
    sim.add_ruleset(REPO, "last push", required_approvals=1, require_last_push_approval=True)
    got = env.status(pr.number)
    assert got["state"] == "unsatisfied"
    assert got["codes"] == ["approvals_missing", "last_push_not_approved"]
    assert got["not_counted"] == {"alice": "stale"}


def test_ruleset_only_protection(env: Env) -> None:
    sim = env.sim
    sim.add_ruleset(REPO, "main", required_approvals=1, required_checks=["lint"], strict=True)
    sim.add_ruleset(REPO, "no deletes", include=["~ALL"], rules=[{"type": "deletion"}])
    sim.add_ruleset(REPO, "trial", include=["~ALL"], enforcement="evaluate", required_approvals=5)
    pr = sim.open_pr(REPO, "feature", {"a.py": "x = 1\n"}, author=("author", 7000))
    got = env.status(pr.number)
    assert (got["classic"], got["rules"], got["state"]) == ("not_protected", "read", "unsatisfied")
    assert got["codes"] == ["approvals_missing", "check_missing"]
    assert got["requirements"]["required_approvals"] == 1  # not the "evaluate" ruleset's 5
    sim.set_status(REPO, pr.head_sha, "lint", "pending")
    sim.review(REPO, pr.number, "APPROVED", author=BOB)
    assert env.status(pr.number)["reasons"] == ["check lint pending"]
    sim.set_status(REPO, pr.head_sha, "lint", "success")
    got = env.status(pr.number)
    assert (got["state"], got["behind_by"]) == ("satisfied", 0)
    sim.commit_to_base(REPO, {"base.txt": "moved on\n"})  # strict: the head must be current
    got = env.status(pr.number)
    assert (got["state"], got["codes"], got["behind_by"]) == ("unsatisfied", ["behind_base"], 1)


def test_an_unprotected_branch_is_none(env: Env) -> None:
    pr = env.sim.open_pr(REPO, "feature", {"a.py": "x = 1\n"})
    got = env.status(pr.number)
    assert (got["state"], got["classic"], got["rules"], got["unknown"]) == (
        "none",
        "not_protected",
        "read",
        [],
    )
    assert "protection: none\n" in env.status(pr.number, text=True)


@pytest.mark.parametrize("token", [USER, APP], ids=["user-404", "bot-403"])
def test_no_admin_rights_is_unknown_but_the_rules_are_still_read(env: Env, token: str) -> None:
    sim = env.sim
    pr = sim.open_pr(REPO, "feature", {"a.py": "x = 1\n"}, author=("author", 7000))
    got = env.status(pr.number, token)  # unprotected, but this token cannot know that
    assert (got["state"], got["unknown"], got["classic"]) == (
        "unknown",
        ["no_admin_read"],
        "unreadable",
    )
    sim.protect_branch(REPO, "main", required_approvals=3)  # invisible to this token
    sim.add_ruleset(REPO, "main", required_approvals=1)
    sim.clear_requests()
    got = env.status(pr.number, token)
    assert (got["state"], got["codes"]) == ("unsatisfied", ["approvals_missing"])
    assert got["unknown"] == ["no_admin_read"]
    assert sim.requests_to(r"/rules/branches/main$")[0].status == 200
    expected = 404 if token == USER else 403
    assert sim.requests_to(r"/branches/main/protection$")[0].status == expected
    sim.review(REPO, pr.number, "APPROVED", author=ALICE)
    got = env.status(pr.number, token)  # the rules are met; classic protection is unknown
    assert (got["state"], got["approvals"]) == ("unknown", ["alice"])
    text = env.status(pr.number, token, text=True)
    assert "protection: unknown (no_admin_read)\n" in text
    assert env.status(pr.number)["state"] == "unsatisfied"  # the owner sees all 3 required


def test_a_failed_read_is_unknown_never_satisfied(env: Env) -> None:
    sim = env.sim
    sim.protect_branch(REPO, "main", required_approvals=1)
    pr = sim.open_pr(REPO, "feature", {"a.py": "x = 1\n"}, author=("author", 7000))
    sim.review(REPO, pr.number, "APPROVED", author=ALICE)
    assert env.status(pr.number)["state"] == "satisfied"
    sim.inject_fault("GET", r"/rules/branches/", status=502, times=None)
    got = env.status(pr.number)
    assert (got["state"], got["rules"], got["unknown"]) == (
        "unknown",
        "unreadable",
        ["rules:server_error"],
    )
    sim.clear_faults()
    sim.inject_fault("GET", r"/branches/main/protection$", status=500, times=None)
    got = env.status(pr.number)
    assert (got["state"], got["unknown"]) == ("unknown", ["classic:server_error"])
    sim.clear_faults()
    sim.protect_branch(REPO, "main", required_approvals=1, required_checks=["tests", "e2e"])
    sim.set_check_run(REPO, pr.head_sha, "tests")
    sim.inject_fault("GET", r"/commits/[0-9a-f]+/status$", status=500, times=None)
    got = env.status(pr.number)
    assert (got["state"], got["checks"]) == ("unknown", {"tests": "passed", "e2e": "unknown"})
    assert got["unknown"] == ["statuses:server_error"]
