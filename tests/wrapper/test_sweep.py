"""kdev pr-sweep: update-branch, approval digest, poller health, each failure path.

Real parts: ghsim over HTTP, real git checkouts, the stub reviewer as a real process, and
a real li database written by the real ``li`` command for the health section.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from engine.api import HealthCause, ScheduleHealthRow
from engine.config import Settings
from engine.github import GitHubClient, RequestPacer
from ghsim import GhsimError, GitHubSim
from tests.wrapper.reviewbench import ROOT, Bench
from wrapper.config import KdevConfig
from wrapper.errors import ConfigError, Outcome
from wrapper.gh import get_pull
from wrapper.ledger.ledger import IndexEntry
from wrapper.sweep.config import SweepConfig, load_sweep_config
from wrapper.sweep.sweep import (
    SweepContext,
    SweepReport,
    UpdateOutcome,
    is_verdict_clean,
    run_sweep,
    schedule_problems,
    update_branch,
)

REPO = "octo/widgets"
OTHER = "octo/gadgets"
BIN = Path(sys.executable).parent
IDENTITY = {"name": "Sweep Bot", "email": "sweep@example.invalid"}
SHA_A, SHA_B = "a" * 40, "b" * 40


@pytest.fixture
def bench(tmp_path: Path) -> Iterator[Bench]:
    token = f"tok-{uuid.uuid4().hex}"
    with GitHubSim(tmp_path / "github") as sim:
        sim.add_token(token, ("review-bot", 5000))
        sim.create_repo(REPO, files={"app.py": "one\ntwo\nthree\n"})
        checkout = tmp_path / "checkout"
        subprocess.run(["git", "clone", "-q", str(sim.repo_path(REPO)), str(checkout)], check=True)
        yield Bench(sim, checkout, tmp_path, token)


def environ(bench: Bench) -> dict[str, str]:
    return {
        "PATH": os.environ["PATH"],
        "HOME": str(bench.root),
        "PYTHONPATH": str(ROOT),
        "GITHUB_TOKEN": bench.token,
        **(bench.app_env or {}),  # an App's variables name the gate a check run (D109)
    }


def sweep_config(
    bench: Bench, repos: list[dict[str, Any]] | None = None, **health: Any
) -> SweepConfig:
    return SweepConfig.model_validate(
        {
            "identity": IDENTITY,
            "repositories": repos or [{"repo": REPO, "checkout": str(bench.checkout)}],
            # The schedule check is off unless a test turns it on (default: every
            # github_poll schedule of the repos, tests/wrapper/test_sweep_health_default.py).
            "health": {"review_schedules": [], **health},
        }
    )


def sweep(
    bench: Bench,
    *,
    config: SweepConfig | None = None,
    kdev: KdevConfig | None = None,
    dry_run: bool = False,
    later: timedelta = timedelta(0),
    retry_deferred: bool = True,
    schedule_health: Callable[..., list[ScheduleHealthRow]] | None = None,
) -> SweepReport:
    settings = Settings(github_api_url=bench.sim.url, github_token=bench.token)
    with GitHubClient(settings, pacer=RequestPacer(100_000)) as client:
        ctx = SweepContext(
            config=config or sweep_config(bench),
            kdev=kdev or bench.config(),
            ledger=bench.ledger(),
            github=client,
            environ=environ(bench),
            dry_run=dry_run,
            retry_deferred=retry_deferred,
            clock=lambda: datetime.now(UTC) + later,
            schedule_health=schedule_health,
        )
        return run_sweep(ctx)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout.strip()


def approved_pr(bench: Bench, branch: str, files: dict[str, str]) -> int:
    number = bench.sim.open_pr(REPO, branch, files).number
    report = bench.review(number)
    assert report.outcome is Outcome.REVIEWED and report.verdict == "APPROVE"
    return number


# -- pure decisions ----------------------------------------------------------------------


def entry(verdict: str) -> IndexEntry:
    return IndexEntry(patch_id="c" * 40, verdict=verdict, reviewed_at=datetime.now(UTC))


def test_an_approve_verdict_at_the_current_head_is_clean() -> None:
    assert is_verdict_clean({SHA_A: entry("APPROVE")}, SHA_A)


def test_a_request_changes_verdict_is_not_clean() -> None:
    assert not is_verdict_clean({SHA_A: entry("REQUEST_CHANGES")}, SHA_A)


def test_a_head_absent_from_the_index_is_not_clean() -> None:
    assert not is_verdict_clean({SHA_A: entry("APPROVE")}, SHA_B)


def test_stale_blind_overdue_and_missing_review_schedules_are_health_problems() -> None:
    def row(name: str, state: str, *messages: str) -> ScheduleHealthRow:
        causes = tuple(HealthCause("c", message) for message in messages)
        paging = state in ("stale", "blind", "overdue", "failing")
        return ScheduleHealthRow(name, state, paging, causes, None, None, None)

    rows = [
        row("ok", "healthy"),
        row("old", "stale", "no healthy poll for 1h"),
        row("dark", "blind"),
        row("slow", "overdue"),
        row("limited", "rate_limited", "not paging"),
    ]
    problems = schedule_problems(["ok", "old", "dark", "slow", "limited", "gone"], rows)
    assert [(p.code, p.subject) for p in problems] == [
        ("schedule_stale", "old"),
        ("schedule_blind", "dark"),
        ("schedule_overdue", "slow"),
        ("schedule_missing", "gone"),
    ]
    assert problems[0].message == "no healthy poll for 1h"


# -- (a) update-branch -------------------------------------------------------------------


def test_a_clean_pr_behind_its_base_is_merged_pushed_and_then_carried_forward(
    bench: Bench,
) -> None:
    number = approved_pr(bench, "feature", {"a.py": "x = 1\n"})
    old_head = bench.sim.pull(REPO, number).head_sha
    bench.sim.commit_to_base(REPO, {"b.py": "y = 2\n"})
    report = sweep(bench)
    [update] = report.repos[0].updates
    assert update.outcome is UpdateOutcome.UPDATED and update.head_sha == old_head
    bench.sim.sync(REPO)
    new_head = bench.sim.pull(REPO, number).head_sha
    assert new_head == update.new_head != old_head
    origin = bench.sim.repo_path(REPO)
    parents = git(origin, "log", "-1", "--format=%P", new_head).split()
    assert parents[0] == old_head and len(parents) == 2
    assert git(origin, "log", "-1", "--format=%an <%ae>", new_head) == (
        "Sweep Bot <sweep@example.invalid>"
    )
    # The next poll fires review-pr for the new head: same patch-id, no reviewer leg.
    following = bench.review(number, new_head)
    assert following.outcome is Outcome.CARRIED_FORWARD
    assert bench.ledger().read_index(REPO, number)[new_head].carried_from == old_head
    assert bench.legs() == 1
    worktrees = git(bench.checkout, "worktree", "list").splitlines()
    assert len(worktrees) == 1


def test_unreviewed_and_request_changes_prs_are_never_updated(bench: Bench) -> None:
    unreviewed = bench.sim.open_pr(REPO, "fresh", {"a.py": "1\n"})
    flagged = bench.sim.open_pr(REPO, "todo", {"b.py": "x = 1  # TODO\n"})
    assert bench.review(flagged.number).verdict == "REQUEST_CHANGES"
    bench.sim.commit_to_base(REPO, {"c.py": "1\n"})
    report = sweep(bench)
    assert report.repos[0].updates == []
    assert bench.sim.pull(REPO, unreviewed.number).head_sha == unreviewed.head_sha
    assert bench.sim.pull(REPO, flagged.number).head_sha == flagged.head_sha


def test_a_clean_pr_level_with_its_base_is_left_alone(bench: Bench) -> None:
    number = approved_pr(bench, "feature", {"a.py": "x = 1\n"})
    head = bench.sim.pull(REPO, number).head_sha
    assert sweep(bench).repos[0].updates == []
    assert bench.sim.pull(REPO, number).head_sha == head


def test_a_conflict_is_aborted_notified_as_needs_manual_rebase_and_skipped(bench: Bench) -> None:
    number = approved_pr(bench, "feature", {"app.py": "one\nFEATURE\nthree\n"})
    head = bench.sim.pull(REPO, number).head_sha
    bench.sim.commit_to_base(REPO, {"app.py": "one\nBASE\nthree\n"})
    report = sweep(bench)
    [update] = report.repos[0].updates
    assert update.outcome is UpdateOutcome.NEEDS_MANUAL_REBASE and "app.py" in update.detail
    bench.sim.sync(REPO)
    assert bench.sim.pull(REPO, number).head_sha == head
    notes = [n for n in bench.notes() if "NEEDS MANUAL REBASE" in n["subject"]]
    assert len(notes) == 1 and notes[0]["fields"]["pr"] == number
    assert len(git(bench.checkout, "worktree", "list").splitlines()) == 1


def test_a_push_after_the_head_moved_is_rejected_and_skipped_never_forced(bench: Bench) -> None:
    number = approved_pr(bench, "feature", {"a.py": "x = 1\n"})
    bench.sim.commit_to_base(REPO, {"b.py": "y = 2\n"})
    settings = Settings(github_api_url=bench.sim.url, github_token=bench.token)
    with GitHubClient(settings, pacer=RequestPacer(100_000)) as client:
        seen = get_pull(client, REPO, number)  # what the sweep read ...
        moved = bench.sim.push(REPO, number, {"a.py": "x = 2\n"})  # ... then the author pushed
        ctx = SweepContext(
            config=sweep_config(bench),
            kdev=bench.config(),
            ledger=bench.ledger(),
            github=client,
            environ=environ(bench),
        )
        result = update_branch(ctx, sweep_config(bench).repositories[0], seen)
    assert result.outcome is UpdateOutcome.PUSH_REJECTED and result.reason == "push_rejected"
    assert result.detail
    assert bench.sim.branch_sha(REPO, "feature") == moved


def test_a_dry_run_reports_what_it_would_update_and_changes_nothing(bench: Bench) -> None:
    number = approved_pr(bench, "feature", {"a.py": "x = 1\n"})
    head = bench.sim.pull(REPO, number).head_sha
    bench.sim.commit_to_base(REPO, {"b.py": "y = 2\n"})
    notes_before = len(bench.notes())
    report = sweep(bench, dry_run=True)
    assert [u.outcome for u in report.repos[0].updates] == [UpdateOutcome.WOULD_UPDATE]
    bench.sim.sync(REPO)
    assert bench.sim.pull(REPO, number).head_sha == head
    assert len(bench.notes()) == notes_before and not report.digest_sent


def test_a_dry_run_logs_would_update_not_updating(
    bench: Bench, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 25: the dry run's log said "updating" for a branch it left alone."""
    approved_pr(bench, "feature", {"a.py": "x = 1\n"})
    bench.sim.commit_to_base(REPO, {"b.py": "y = 2\n"})
    with caplog.at_level(logging.INFO, logger="kdev"):
        sweep(bench, dry_run=True)
    [line] = [r.getMessage() for r in caplog.records if " behind " in r.getMessage()]
    assert line.endswith(": would update (dry run)") and "updating" not in line
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="kdev"):
        sweep(bench)
    [line] = [r.getMessage() for r in caplog.records if " behind " in r.getMessage()]
    assert line.endswith(": updating")


def test_a_clean_draft_behind_its_base_is_updated_like_any_other_pr(bench: Bench) -> None:
    number = approved_pr(bench, "feature", {"a.py": "x = 1\n"})
    old_head = bench.sim.set_draft(REPO, number).head_sha
    bench.sim.commit_to_base(REPO, {"b.py": "y = 2\n"})
    report = sweep(bench)
    [update] = report.repos[0].updates
    assert update.outcome is UpdateOutcome.UPDATED and update.head_sha == old_head
    bench.sim.sync(REPO)
    assert bench.sim.pull(REPO, number).head_sha == update.new_head != old_head


def test_an_unreviewed_draft_is_listed_as_unreviewed(bench: Bench) -> None:
    draft = bench.sim.open_pr(REPO, "wip", {"a.py": "1\n"}, draft=True).number
    assert sweep(bench).repos[0].unreviewed == [draft]


# -- (b) approval digest -----------------------------------------------------------------


def test_the_digest_lists_armed_clean_prs_awaiting_review_in_one_message(bench: Bench) -> None:
    waiting = approved_pr(bench, "waiting", {"a.py": "1\n"})
    approved = approved_pr(bench, "approved", {"b.py": "1\n"})
    flagged = bench.sim.open_pr(REPO, "flagged", {"c.py": "1  # TODO\n"}).number
    bench.review(flagged)
    unreviewed = bench.sim.open_pr(REPO, "unreviewed", {"d.py": "1\n"}).number
    for number in (waiting, approved, flagged, unreviewed):
        bench.sim.set_auto_merge(REPO, number, "squash")
        bench.sim.set_review_decision(REPO, number, "REVIEW_REQUIRED")
    bench.sim.set_review_decision(REPO, approved, "APPROVED")
    notes_before = len(bench.notes())
    report = sweep(bench)
    [row] = report.digest
    head = bench.sim.pull(REPO, waiting).head_sha
    assert (row.repo, row.pr, row.head_sha, row.verdict_line) == (
        REPO,
        waiting,
        head,
        "VERDICT: APPROVE",
    )
    assert Path(row.artifact).is_file()
    [note] = bench.notes()[notes_before:]
    assert "waiting for approval" in note["subject"]
    assert f"{REPO} #{waiting} {head}" in note["body"] and row.artifact in note["body"]
    assert report.digest_sent


def test_a_draft_is_kept_out_of_the_digest_by_github_itself(bench: Bench) -> None:
    number = approved_pr(bench, "feature", {"a.py": "1\n"})
    bench.sim.set_auto_merge(REPO, number, "squash")
    bench.sim.set_review_decision(REPO, number, "REVIEW_REQUIRED")
    assert [row.pr for row in sweep(bench).digest] == [number]
    bench.sim.set_draft(REPO, number)  # converting to draft disarms auto-merge
    assert sweep(bench).digest == []
    with pytest.raises(GhsimError):
        bench.sim.set_auto_merge(REPO, number, "squash")


def test_an_empty_digest_is_not_sent(bench: Bench) -> None:
    number = approved_pr(bench, "feature", {"a.py": "1\n"})  # clean, but auto-merge is off
    bench.sim.set_review_decision(REPO, number, "REVIEW_REQUIRED")
    notes_before = len(bench.notes())
    report = sweep(bench)
    assert report.digest == [] and not report.digest_sent
    assert len(bench.notes()) == notes_before


# -- faults per repository ---------------------------------------------------------------


def test_a_network_error_for_one_repository_is_reported_and_the_others_are_swept(
    bench: Bench,
) -> None:
    bench.sim.create_repo(OTHER, files={"g.py": "1\n"})
    other_checkout = bench.root / "gadgets"
    subprocess.run(
        ["git", "clone", "-q", str(bench.sim.repo_path(OTHER)), str(other_checkout)], check=True
    )
    number = approved_pr(bench, "feature", {"a.py": "1\n"})
    bench.sim.commit_to_base(REPO, {"b.py": "2\n"})
    bench.sim.inject_fault("GET", rf"^/repos/{OTHER}/pulls", truncate=True, times=None)
    config = sweep_config(
        bench,
        [
            {"repo": OTHER, "checkout": str(other_checkout)},
            {"repo": REPO, "checkout": str(bench.checkout)},
        ],
    )
    report = sweep(bench, config=config)
    broken, swept = report.repos
    assert broken.repo == OTHER and broken.reason == "network_error" and broken.error
    assert swept.error is None
    assert [(u.pr, u.outcome) for u in swept.updates] == [(number, UpdateOutcome.UPDATED)]


def test_a_missing_checkout_is_reported_and_the_others_are_swept(bench: Bench) -> None:
    number = approved_pr(bench, "feature", {"a.py": "1\n"})
    bench.sim.commit_to_base(REPO, {"b.py": "2\n"})
    bench.sim.create_repo(OTHER)
    config = sweep_config(
        bench,
        [
            {"repo": OTHER, "checkout": str(bench.root / "nowhere")},
            {"repo": REPO, "checkout": str(bench.checkout)},
        ],
    )
    report = sweep(bench, config=config)
    assert report.repos[0].reason == "checkout_missing"
    assert [(u.pr, u.outcome) for u in report.repos[1].updates] == [(number, UpdateOutcome.UPDATED)]


# -- (c) health and deferrals ------------------------------------------------------------


def deferred_pair(bench: Bench) -> tuple[KdevConfig, int]:
    config = bench.config(budgets={"daily_legs_per_repo": 1})
    first = bench.sim.open_pr(REPO, "first", {"a.py": "1\n"}).number
    second = bench.sim.open_pr(REPO, "second", {"b.py": "1\n"}).number
    assert bench.review(first, config=config).outcome is Outcome.REVIEWED
    assert bench.review(second, config=config).outcome is Outcome.DEFERRED_BUDGET
    return config, second


def test_a_spent_budget_with_unreviewed_heads_is_reported_with_its_deferrals(
    bench: Bench,
) -> None:
    config, second = deferred_pair(bench)
    report = sweep(bench, kdev=config)
    [problem] = report.health
    assert problem.code == "budget_exhausted" and f"#{second}" in problem.message
    [row] = report.repos[0].deferred
    assert (row.pr, row.budget, row.current, row.retried) == (
        second,
        "daily_legs_per_repo",
        True,
        None,
    )
    assert any(n["subject"] == "PR sweep: pipeline health" for n in bench.notes())


def test_a_reopened_deferral_still_at_the_head_is_reviewed_again(bench: Bench) -> None:
    config, second = deferred_pair(bench)
    head = bench.sim.pull(REPO, second).head_sha
    report = sweep(bench, kdev=config, later=timedelta(hours=25))
    [row] = report.repos[0].deferred
    assert row.retried == "reviewed"
    assert bench.ledger().read_index(REPO, second)[head].verdict == "APPROVE"
    assert bench.ledger().list_deferred(REPO) == []
    assert report.health == []


def test_retry_deferred_can_be_turned_off(bench: Bench) -> None:
    config, _ = deferred_pair(bench)
    report = sweep(bench, kdev=config, later=timedelta(hours=25), retry_deferred=False)
    assert report.repos[0].deferred[0].retried is None
    assert len(bench.ledger().list_deferred(REPO)) == 1


def test_a_deferral_whose_head_moved_is_listed_but_not_retried(bench: Bench) -> None:
    config, second = deferred_pair(bench)
    bench.sim.push(REPO, second, {"b.py": "2\n"})
    report = sweep(bench, kdev=config, later=timedelta(hours=25))
    [row] = report.repos[0].deferred
    assert not row.current and row.retried is None
    assert bench.legs() == 1


def test_a_blind_review_schedule_in_the_li_database_is_reported(bench: Bench) -> None:
    url = f"sqlite:///{bench.root / 'li.db'}"
    env = {
        **os.environ,
        "LI_DATABASE_URL": url,
        "LI_COMMAND_ALLOWLIST": "sh",
        "GITHUB_API_URL": bench.sim.url,
        "GITHUB_TOKEN": "not-a-valid-token",
    }

    def li(*args: str) -> None:
        subprocess.run([str(BIN / "li"), *args], env=env, capture_output=True, check=True)

    li("schedule", "add", "review-prs", "--github", REPO, "--command", "sh", "--", "-c", "true")
    for _ in range(3):  # 401 three times in a row: blind
        li("schedule", "trigger", "review-prs")
        li("engine", "run", "--once")
    config = sweep_config(bench, database_url=url, review_schedules=["review-prs", "gone"])
    report = sweep(bench, config=config)
    assert [(p.code, p.subject) for p in report.health] == [
        ("schedule_blind", "review-prs"),
        ("schedule_missing", "gone"),
    ]


def test_an_unreadable_li_database_is_a_health_line_not_a_crash(bench: Bench) -> None:
    url = f"sqlite:///{bench.root / 'absent' / 'li.db'}"
    config = sweep_config(bench, database_url=url, review_schedules=["review-prs"])
    report = sweep(bench, config=config)
    [problem] = report.health
    assert problem.code == "health_unreadable"
    assert not (bench.root / "absent").exists()


# -- config and the command line ---------------------------------------------------------


def test_the_example_repos_config_loads() -> None:
    config = load_sweep_config(ROOT / "repos.example.yaml")
    assert config.repositories[0].repo == "octo/widgets"
    assert Path(config.repositories[0].checkout).is_absolute()


@pytest.mark.parametrize(
    "text",
    [
        "identity: {name: a, email: a@b}\nrepositories: []\n",
        "identity: {name: a, email: a@b}\nrepositories: [{repo: '../x', checkout: .}]\n",
        "identity: {name: a, email: a@b}\nrepositories: [{repo: o/r, checkout: .}]\ncolour: 1\n",
        "repositories: [{repo: o/r, checkout: .}]\n",
        "- not a mapping\n",
    ],
)
def test_a_bad_repos_config_is_refused(tmp_path: Path, text: str) -> None:
    path = tmp_path / "repos.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_sweep_config(path)
    assert caught.value.reason == "invalid_repos_config"


def test_kdev_pr_sweep_with_a_bad_config_exits_2_with_one_line(bench: Bench) -> None:
    path = bench.root / "repos.yaml"
    path.write_text("identity: {name: a, email: a@b}\nrepositories: []\n")
    result = subprocess.run(
        [str(BIN / "kdev"), "pr-sweep", "--repos-config", str(path)],
        env=bench.kdev_env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].endswith("[invalid_repos_config]")


def test_kdev_pr_sweep_prints_json_and_exits_0_when_a_repository_fails(bench: Bench) -> None:
    number = approved_pr(bench, "feature", {"a.py": "1\n"})
    bench.sim.commit_to_base(REPO, {"b.py": "2\n"})
    path = bench.root / "repos.yaml"
    path.write_text(
        json.dumps(
            {
                "identity": IDENTITY,
                "repositories": [
                    {"repo": OTHER, "checkout": "nowhere"},
                    {"repo": REPO, "checkout": str(bench.checkout)},
                ],
            }
        )
    )
    result = subprocess.run(
        [str(BIN / "kdev"), "pr-sweep", "--repos-config", str(path), "--json"],
        env=bench.kdev_env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["repos"][0]["reason"] == "checkout_missing"
    assert data["repos"][1]["updates"][0]["pr"] == number
    assert data["repos"][1]["updates"][0]["outcome"] == "updated"
    assert "sweeping octo/widgets" in result.stderr  # progress goes to stderr
    human = subprocess.run(
        [str(BIN / "kdev"), "pr-sweep", "--repos-config", str(path), "--dry-run"],
        env=bench.kdev_env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert human.returncode == 0 and "pr-sweep (dry run)" in human.stdout
    assert "checkout_missing" in human.stdout


# -- who is notified (issue 18) ----------------------------------------------------------


def author_routed(bench: Bench, **overrides: Any) -> KdevConfig:
    return bench.config(
        recipients={"alice": [{"type": "file", "path": str(bench.root / "alice.jsonl")}]},
        notify_authors={"alice-dev": "alice"},
        **overrides,
    )


def noted(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_manual_rebase_notice_goes_to_the_pr_authors_recipient(bench: Bench) -> None:
    config = author_routed(bench)
    pr = bench.sim.open_pr(REPO, "feature", {"app.py": "one\nFEATURE\nthree\n"}, author="alice-dev")
    assert bench.review(pr.number, config=config).verdict == "APPROVE"
    bench.sim.commit_to_base(REPO, {"app.py": "one\nBASE\nthree\n"})
    [update] = sweep(bench, kdev=config).repos[0].updates
    assert update.outcome is UpdateOutcome.NEEDS_MANUAL_REBASE
    subjects = [n["subject"] for n in noted(bench.root / "alice.jsonl")]
    assert subjects[-1] == f"PR sweep: {REPO} #{pr.number} NEEDS MANUAL REBASE"
    assert not any("MANUAL REBASE" in n["subject"] for n in bench.notes())


def test_a_repos_entry_notify_wins_over_the_authors_recipient_in_a_retry(bench: Bench) -> None:
    config = author_routed(bench, budgets={"daily_legs_per_repo": 1})
    first = bench.sim.open_pr(REPO, "first", {"a.py": "1\n"}, author="alice-dev").number
    second = bench.sim.open_pr(REPO, "second", {"b.py": "1\n"}, author="alice-dev").number
    assert bench.review(first, config=config).outcome is Outcome.REVIEWED
    assert bench.review(second, config=config).outcome is Outcome.DEFERRED_BUDGET
    before = len(noted(bench.root / "alice.jsonl"))
    entry_file = bench.root / "entry.jsonl"
    repos = [
        {
            "repo": REPO,
            "checkout": str(bench.checkout),
            "notify": [{"type": "file", "path": str(entry_file)}],
        }
    ]
    report = sweep(bench, config=sweep_config(bench, repos), kdev=config, later=timedelta(hours=25))
    assert report.repos[0].deferred[0].retried == "reviewed"
    verdicts = [n for n in noted(entry_file) if n["fields"].get("verdict")]
    assert [n["fields"]["pr"] for n in verdicts] == [second]
    assert len(noted(bench.root / "alice.jsonl")) == before  # nothing more for alice
