"""kdev review-pr, step by step: each decision, each failure path, crash and concurrency."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from tests.wrapper.reviewbench import BIN, REPO, STUB, Bench, stub_reviewers
from wrapper.config import KdevConfig
from wrapper.errors import ConfigError, Outcome, ReviewerFailed, ReviewerTimedOut


def test_a_review_writes_the_verdict_file_index_and_notification(bench: Bench) -> None:
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "x = 1  # TODO\n"})
    report = bench.review(pr.number)
    assert report.outcome is Outcome.REVIEWED and report.verdict == "REQUEST_CHANGES"
    text = Path(report.artifact).read_text()
    header = text.split("\n---\n", 1)[0].splitlines()
    assert [line.split(":", 1)[0] for line in header] == [
        "VERDICT",
        "PR",
        "PR_URL",
        "HEAD_SHA",
        "PATCH_ID",
        "BASE",
        "REVIEWED_AT",
        "REVIEWER_MODEL",
        "USAGE",  # the stub reports nothing: unknown, never zero (D103)
    ]
    assert (
        header[-1]
        == "USAGE: 1 leg: tokens of 1 unknown; cost of 1 unknown (reviewer_reports_no_usage)"
    )
    assert f"HEAD_SHA: {pr.head_sha}" in header
    assert f"PR: {pr.number}" in header
    [url_line] = [line for line in header if line.startswith("PR_URL: ")]
    assert url_line.startswith("PR_URL: http") and url_line.endswith(f"/pull/{pr.number}")
    index = bench.ledger().read_index(REPO, pr.number)
    assert index[pr.head_sha].patch_id == report.patch_id
    [note] = bench.notes()
    assert note["subject"] == f"PR review: {REPO} #{pr.number} REQUEST_CHANGES"
    assert report.artifact in note["body"]


def test_an_identical_diff_is_carried_forward_without_a_leg(bench: Bench) -> None:
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "x = 1\n"})
    reviewed_head = pr.head_sha
    first = bench.review(pr.number)
    bench.sim.advance(2)
    bench.sim.force_push(REPO, pr.number, {"a.py": "x = 1\n"})
    second = bench.review(pr.number)
    assert second.outcome is Outcome.CARRIED_FORWARD and second.patch_id == first.patch_id
    assert bench.legs() == 1
    entry = bench.ledger().read_index(REPO, pr.number)[bench.sim.pull(REPO, pr.number).head_sha]
    assert entry.carried_from == reviewed_head


def test_force_forgets_the_verdict_and_reviews_again(bench: Bench) -> None:
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "x = 1\n"})
    bench.review(pr.number)
    again = bench.review(pr.number, force=True)
    assert again.outcome is Outcome.REVIEWED and bench.legs() == 2


def test_an_empty_diff_is_skipped(bench: Bench) -> None:
    subprocess.run(["git", "branch", "same", "main"], cwd=bench.sim.repo_path(REPO), check=True)
    pr = bench.sim.open_pr(REPO, "same")  # a head with no commits of its own
    assert bench.review(pr.number).outcome is Outcome.SKIPPED_EMPTY_DIFF
    assert bench.legs() == 0


def test_a_stale_head_is_skipped(bench: Bench) -> None:
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    old = pr.head_sha
    bench.sim.advance(2)
    bench.sim.push(REPO, pr.number, {"a.py": "2\n"})
    report = bench.review(pr.number, head_sha=old)
    assert report.outcome is Outcome.SKIPPED_STALE_HEAD and bench.legs() == 0


@pytest.mark.parametrize("kind", ["fork", "deleted_fork"])
def test_the_fork_backstop_never_fetches_the_head(bench: Bench, kind: str) -> None:
    pr = bench.sim.open_pr(REPO, "evil", {"a.py": "1  # TODO\n"}, from_fork="mallory/widgets")
    if kind == "deleted_fork":
        bench.sim.set_head_repo_null(REPO, pr.number)
    report = bench.review(pr.number, head_sha=pr.head_sha)
    assert report.outcome is Outcome.SKIPPED_FORK
    refs = subprocess.run(
        ["git", "for-each-ref", "--format=%(refname)"],
        cwd=bench.checkout,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "refs/kdev/pull" not in refs and bench.legs() == 0


def test_over_budget_writes_a_deferred_marker_and_notifies(bench: Bench) -> None:
    config = bench.config(budgets={"daily_legs_per_repo": 1})
    first = bench.sim.open_pr(REPO, "a", {"a.py": "1\n"})
    second = bench.sim.open_pr(REPO, "b", {"b.py": "1\n"})
    assert bench.review(first.number, config=config).outcome is Outcome.REVIEWED
    report = bench.review(second.number, config=config)
    assert report.outcome is Outcome.DEFERRED_BUDGET
    [(repo, pr_number, marker)] = bench.ledger().list_deferred(REPO)
    assert (repo, pr_number, marker.budget, marker.count, marker.limit) == (
        REPO,
        second.number,
        "daily_legs_per_repo",
        1,
        1,
    )
    assert marker.reopens_at is not None
    assert any("DEFERRED" in n["subject"] for n in bench.notes())
    rows = [r.kind for r in bench.ledger().list_ledger(REPO)]
    assert "deferred" in rows


def test_a_failing_reviewer_is_an_error_with_a_failure_notice(bench: Bench) -> None:
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    with pytest.raises(ReviewerFailed):
        bench.review(pr.number, environ={"KDEV_STUB_EXIT": "3"})
    [note] = bench.notes()
    assert note["subject"].endswith("FAILURE")
    assert bench.ledger().read_index(REPO, pr.number) == {}
    worktrees = subprocess.run(
        ["git", "worktree", "list"], cwd=bench.checkout, capture_output=True, text=True, check=True
    ).stdout
    assert len(worktrees.strip().splitlines()) == 1  # pruned


def test_a_slow_reviewer_times_out(bench: Bench) -> None:
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    config = bench.config(reviewer={"backend": "command", "argv": STUB, "timeout_seconds": 1})
    with pytest.raises(ReviewerTimedOut):
        bench.review(pr.number, config=config, environ={"KDEV_STUB_SLEEP": "30"})


def test_a_verdict_containing_a_secret_is_refused(bench: Bench) -> None:
    secret = f"sk-canary-{uuid.uuid4().hex}"
    pr = bench.sim.open_pr(REPO, "f", {"a.py": f"KEY = '{secret}'\n"})
    echo = {"backend": "command", "argv": ["sh", "-c", "cat; echo 'VERDICT: APPROVE'"]}
    config = bench.config(secret_env=["LEAKY"], reviewer=echo)
    with pytest.raises(Exception) as caught:
        bench.review(pr.number, config=config, environ={"LEAKY": secret})
    assert getattr(caught.value, "reason", "") == "secret_in_output"
    assert not list((bench.root / "reviews").rglob("patch-*.md"))


def test_no_reviewer_configured_is_a_config_error(bench: Bench) -> None:
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    with pytest.raises(ConfigError):
        bench.review(pr.number, config=KdevConfig())


def test_two_concurrent_runs_for_one_pr_run_one_leg(bench: Bench) -> None:
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    env = bench.kdev_env()
    env["KDEV_STUB_SLEEP"] = "2"
    argv = [
        str(BIN / "kdev"),
        "review-pr",
        "--repo",
        REPO,
        "--pr",
        str(pr.number),
        "--head-sha",
        pr.head_sha,
        "--checkout",
        str(bench.checkout),
        "--json",
    ]
    procs = [
        subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outcomes = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        outcomes.append(json.loads(out.strip().splitlines()[-1])["outcome"])
    assert sorted(outcomes) == ["carried_forward", "reviewed"]
    assert bench.legs() == 1


def test_kill_9_during_the_review_leaves_no_verdict_and_no_stuck_lock(bench: Bench) -> None:
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    env = bench.kdev_env()
    env["KDEV_STUB_SLEEP"] = "30"
    argv = [
        str(BIN / "kdev"),
        "review-pr",
        "--repo",
        REPO,
        "--pr",
        str(pr.number),
        "--head-sha",
        pr.head_sha,
        "--checkout",
        str(bench.checkout),
    ]
    proc = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and bench.legs() == 0:
        time.sleep(0.1)
    assert bench.legs() == 1
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not stub_reviewers(bench.root):
        time.sleep(0.1)
    assert stub_reviewers(bench.root)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    assert not list((bench.root / "reviews").rglob("patch-*.md"))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and stub_reviewers(bench.root):
        time.sleep(0.1)
    assert stub_reviewers(bench.root) == []  # the reviewer died with its wrapper
    del env["KDEV_STUB_SLEEP"]
    result = subprocess.run(
        argv + ["--json"], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1])["outcome"] == "reviewed"


@pytest.mark.parametrize(
    ("args", "code", "reason"),
    [
        (["review-pr", "--repo", "../etc", "--pr", "1", "--head-sha", "a" * 40], 2, "invalid_repo"),
        (["review-pr", "--repo", REPO, "--pr", "x", "--head-sha", "a"], 2, "usage_error"),
        (["verdict", "show", REPO, "7"], 1, "verdict_not_found"),
    ],
)
def test_bad_kdev_input_is_one_line(bench: Bench, args: list[str], code: int, reason: str) -> None:
    result = subprocess.run(
        [str(BIN / "kdev"), *args],
        env=bench.kdev_env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == code, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].endswith(f"[{reason}]"), result.stderr


def test_an_invalid_kdev_config_is_one_line(bench: Bench) -> None:
    env = bench.kdev_env()
    Path(env["KDEV_CONFIG"]).write_text("reviewer:\n  backend: command\n  argv: []\ncolour: 1\n")
    result = subprocess.run(
        [str(BIN / "kdev"), "verdicts"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.strip().endswith("[invalid_config]")
