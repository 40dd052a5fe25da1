"""The merge gate as a check run (issue 30, D109): with a GitHub App configured, kdev's
``kdev/review`` gate is a check run per decided head, over ghsim with the review bench."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from engine.config import Settings
from engine.github.client import github_client
from ghsim.model import CheckRun
from tests.appkit import SimApp, install_app
from tests.wrapper.reviewbench import BIN, REPO, Bench
from tests.wrapper.test_sweep import sweep
from wrapper.config import KdevConfig
from wrapper.errors import LedgerError, Outcome, ReviewerFailed
from wrapper.explain import EngineSide, build_timeline
from wrapper.ledger.outcomes import OutcomeEntry, entry_of
from wrapper.post import BodyGate
from wrapper.review.check_gate import CheckRunGate, GateDetail
from wrapper.review.findings import Finding

NAME = "kdev/review"


def as_app(bench: Bench) -> tuple[Bench, SimApp]:
    app = install_app(bench.sim, bench.root)
    env = {
        "GITHUB_APP_ID": str(app.app.id),
        "GITHUB_APP_PRIVATE_KEY_FILE": str(app.key_file),
        "GITHUB_APP_INSTALLATION_ID": str(app.installation.id),
        "GITHUB_APP_TOKEN_CACHE": str(bench.root / "app-token.json"),
    }
    return dataclasses.replace(bench, app_env=env), app


def _on(bench: Bench, **overrides: Any) -> KdevConfig:
    return bench.config(merge_gate={"enabled": True}, **overrides)


def runs(bench: Bench, sha: str) -> list[CheckRun]:
    return bench.sim.check_runs_for(bench.sim.repo(REPO), sha)


def only(bench: Bench, sha: str) -> CheckRun:
    found = runs(bench, sha)
    assert len(found) == 1, found
    return found[0]


def writes(bench: Bench, method: str) -> list[Any]:
    return bench.sim.requests_to(r"/check-runs(/[0-9]+)?$", method)


def test_an_approval_is_a_successful_check_run_of_the_app(bench: Bench) -> None:
    bench, app = as_app(bench)
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    report = bench.review(pr.number, config=_on(bench))
    assert report.outcome is Outcome.REVIEWED and report.verdict == "APPROVE"
    run = only(bench, pr.head_sha)
    assert (run.name, run.status, run.conclusion) == (NAME, "completed", "success")
    assert run.app_id == app.app.id and run.external_id == f"kdev:{pr.head_sha}"
    assert run.output["title"] == "approved by kdev"
    assert run.output["summary"].startswith("Verdict APPROVE: 0 findings")
    assert len(writes(bench, "POST")) == 1  # in_progress when the leg started
    assert len(writes(bench, "PATCH")) == 1  # then its conclusion
    assert report.merge_gate == {
        "context": NAME,
        "kind": "check run",
        "state": "success",
        "description": "approved by kdev",
        "action": "set",
    }
    assert bench.sim.requests_to(r"/statuses/", "POST") == []  # no commit status


def test_changes_requested_then_fixed_is_failure_then_success(bench: Bench) -> None:
    bench, _ = as_app(bench)
    config = _on(bench)
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "x = 1  # TODO\n"})
    first = pr.head_sha
    assert bench.review(pr.number, config=config).verdict == "REQUEST_CHANGES"
    assert only(bench, first).conclusion == "failure"
    assert only(bench, first).output["title"] == "changes requested by kdev"
    fixed = bench.sim.push(REPO, pr.number, {"a.py": "x = 1\n"})
    assert bench.review(pr.number, config=config).verdict == "APPROVE"
    assert only(bench, fixed).conclusion == "success"
    assert only(bench, first).conclusion == "failure"  # the old head keeps its own


def test_a_base_merge_is_a_successful_run_on_the_new_head_without_a_leg(bench: Bench) -> None:
    bench, _ = as_app(bench)
    config = _on(bench)
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    reviewed = pr.head_sha
    bench.review(pr.number, config=config)
    legs = bench.legs()
    bench.sim.commit_to_base(REPO, {"other.py": "2\n"})
    new_head = bench.sim.merge_base_into_head(REPO, pr.number)
    report = bench.review(pr.number, config=config)
    assert report.outcome is Outcome.CARRIED_FORWARD and bench.legs() == legs
    run = only(bench, new_head)
    assert (run.status, run.conclusion) == ("completed", "success")
    assert f"carried forward from {reviewed}" in run.output["summary"]
    assert "0 review legs ran for this head" in run.output["summary"]


def test_a_budget_deferral_is_in_progress_with_its_reason(bench: Bench) -> None:
    bench, _ = as_app(bench)
    config = _on(bench, budgets={"daily_legs_per_repo": 1})
    first = bench.sim.open_pr(REPO, "a", {"a.py": "1\n"})
    second = bench.sim.open_pr(REPO, "b", {"b.py": "1\n"})
    bench.review(first.number, config=config)
    assert bench.review(second.number, config=config).outcome is Outcome.DEFERRED_BUDGET
    run = only(bench, second.head_sha)
    assert (run.status, run.conclusion) == ("in_progress", None)
    assert run.output["title"] == "review deferred (daily_legs_per_repo: 1/1)"
    sent = len(writes(bench, "POST")) + len(writes(bench, "PATCH"))
    again = bench.review(second.number, config=config)  # the sweep's retry
    assert again.merge_gate is not None and again.merge_gate["action"] == "unchanged"
    assert len(writes(bench, "POST")) + len(writes(bench, "PATCH")) == sent


def test_a_wrapper_failure_is_a_failed_check_run_with_its_reason(bench: Bench) -> None:
    bench, _ = as_app(bench)
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    with pytest.raises(ReviewerFailed):
        bench.review(pr.number, config=_on(bench), environ={"KDEV_STUB_EXIT": "3"})
    run = only(bench, pr.head_sha)
    # GitHub has no "error" conclusion; neutral would pass a required check (D109).
    assert (run.status, run.conclusion) == ("completed", "failure")
    assert run.output["title"] == "kdev failed: reviewer_failed"
    # The rerun that succeeds turns the same run green: no second run for the head.
    assert bench.review(pr.number, config=_on(bench)).verdict == "APPROVE"
    assert only(bench, pr.head_sha).conclusion == "success"


def many_findings(root: Path, count: int) -> list[str]:
    """A reviewer that reports ``count`` findings on lines of ``a.py`` (P1, P2, P3 by turn)."""
    script = root / "many.py"
    lines = [f"- P{n % 3 + 1} `a.py:{n + 1}` finding {n}" for n in range(count)]
    script.write_text(
        "import sys\nsys.stdin.read()\n"
        f"print({chr(10).join(lines)!r})\nprint()\nprint('VERDICT: REQUEST_CHANGES')\n"
    )
    return [sys.executable, "-P", str(script)]


def test_120_findings_are_annotations_in_three_requests(bench: Bench) -> None:
    bench, _ = as_app(bench)
    reviewer = {"backend": "command", "argv": many_findings(bench.root, 120), "model": "m"}
    config = _on(bench, reviewer={**reviewer, "timeout_seconds": 30})
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "".join(f"v{n} = {n}\n" for n in range(120))})
    assert bench.review(pr.number, config=config).verdict == "REQUEST_CHANGES"
    run = only(bench, pr.head_sha)
    assert len(run.annotations) == 120 and run.conclusion == "failure"
    assert [a["start_line"] for a in run.annotations] == list(range(1, 121))
    levels = [a["annotation_level"] for a in run.annotations[:3]]
    assert levels == ["failure", "failure", "notice"]  # P1, P2, P3
    batches = [len(r.body["output"]["annotations"]) for r in writes(bench, "PATCH")]
    assert batches == [50, 50, 20]
    assert "Verdict REQUEST_CHANGES: 120 findings, 120 on a line." in run.output["summary"]


def test_a_run_killed_before_its_annotations_is_finished_by_the_rerun(bench: Bench) -> None:
    bench, _ = as_app(bench)
    reviewer = {"backend": "command", "argv": many_findings(bench.root, 60), "model": "m"}
    config = _on(bench, reviewer={**reviewer, "timeout_seconds": 30})
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "".join(f"v{n} = {n}\n" for n in range(60))})
    bench.sim.inject_fault("PATCH", r"/check-runs/[0-9]+$", status=502, times=None)
    report = bench.review(pr.number, config=config)
    assert report.merge_gate is not None and report.merge_gate["action"] == "failed"
    assert report.merge_gate["reason"] == "merge_gate_post_failed"
    assert only(bench, pr.head_sha).status == "in_progress"  # the review stands
    bench.sim.clear_faults()
    again = bench.review(pr.number, config=config)
    assert again.outcome is Outcome.CARRIED_FORWARD
    run = only(bench, pr.head_sha)  # adopted by its external_id: no second run
    assert (run.conclusion, len(run.annotations)) == ("failure", 60)
    assert len(writes(bench, "POST")) == 1
    assert bench.review(pr.number, config=config).merge_gate["action"] == "unchanged"


def test_a_token_keeps_the_commit_status_as_the_gate(bench: Bench) -> None:
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    report = bench.review(pr.number, config=_on(bench))
    assert report.merge_gate is not None and "kind" not in report.merge_gate
    assert len(bench.sim.requests_to(r"/statuses/[0-9a-f]{40}$", "POST")) == 2
    assert writes(bench, "POST") == [] and runs(bench, pr.head_sha) == []


def app_kdev_env(bench: Bench, config: KdevConfig) -> dict[str, str]:
    """A ``kdev`` subprocess's environment with the App instead of the token."""
    env = {k: v for k, v in bench.kdev_env(config).items() if k != "GITHUB_TOKEN"}
    return {**env, **(bench.app_env or {})}


def test_pr_status_shows_the_check_run_as_the_gate(bench: Bench) -> None:
    bench, _ = as_app(bench)
    config = _on(bench)
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "x = 1  # FIXME\n"})
    bench.review(pr.number, config=config)
    argv = [str(BIN / "kdev"), "pr-status", "--repo", REPO, "--pr", str(pr.number)]
    env = app_kdev_env(bench, config)
    shown = subprocess.run([*argv, "--json"], env=env, capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["merge_gate"] == {
        "context": NAME,
        "kind": "check run",
        "state": "failure",
        "description": "changes requested by kdev",
    }
    text = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60).stdout
    assert "merge gate check run kdev/review: failure (changes requested by kdev)" in text


def test_explain_and_the_digest_show_the_check_run(bench: Bench) -> None:
    bench, _ = as_app(bench)
    config = _on(bench)
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    report = bench.review(pr.number, config=config)
    now = datetime.now(UTC)
    entry = OutcomeEntry.from_json(entry_of("review-pr", report, bench.ledger(), now).to_json())
    [line] = build_timeline(EngineSide((), (), (), ()), [entry], [], now)
    assert line.text.endswith("[check run kdev/review success set]")
    bench.sim.set_auto_merge(REPO, pr.number, "squash")
    bench.sim.set_review_decision(REPO, pr.number, "REVIEW_REQUIRED")
    [row] = sweep(bench, kdev=config).digest
    assert row.merge_gate == "check run kdev/review success"
    bench.sim.inject_fault("GET", r"/commits/[0-9a-f]{40}/check-runs$", status=502, times=None)
    [row] = sweep(bench, kdev=config).digest
    assert row.merge_gate is not None
    assert row.merge_gate.startswith("check run kdev/review unreadable [")


def test_a_summary_or_finding_holding_a_secret_is_never_sent(bench: Bench) -> None:
    bench, _ = as_app(bench)
    secret = "sk-check-canary-0123456789"
    config = bench.config(secret_env=["CANARY"])
    env = {**(bench.app_env or {}), "CANARY": secret, "GITHUB_API_URL": bench.sim.url}
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    leaky = Finding("kdev", "P2", f"key {secret}", "a.py", 1)
    with github_client(Settings.from_env(env), record_rates=False) as client:
        gate = CheckRunGate(client, REPO, NAME, BodyGate(config, env, "the check run"))
        for detail in (GateDetail(f"summary {secret}"), GateDetail("fine", [leaky])):
            with pytest.raises(LedgerError) as caught:
                gate.set(pr.head_sha, "failure", "changes requested by kdev", detail)
            assert caught.value.reason == "secret_in_output"
        assert runs(bench, pr.head_sha) == []  # nothing was sent
        assert gate.set(pr.head_sha, "success", "approved by kdev", GateDetail("ok")) is True
        assert gate.set(pr.head_sha, "success", "approved by kdev", GateDetail("ok")) is False
    assert only(bench, pr.head_sha).conclusion == "success"


def test_a_run_with_part_of_its_annotations_gets_only_the_rest(bench: Bench) -> None:
    bench, _ = as_app(bench)
    env = {**(bench.app_env or {}), "GITHUB_API_URL": bench.sim.url}
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "".join(f"v{n} = {n}\n" for n in range(60))})
    found = [Finding("kdev", "P2", f"finding {n}", "a.py", n + 1) for n in range(60)]
    with github_client(Settings.from_env(env), record_rates=False) as client:
        gate = CheckRunGate(client, REPO, NAME, BodyGate(bench.config(), env, "the check run"))
        # As a run killed after its first batch leaves it: in progress, 50 annotations.
        assert gate.set(pr.head_sha, "pending", "review running", GateDetail("s", found[:50]))
        patches = len(writes(bench, "PATCH"))
        assert gate.set(pr.head_sha, "failure", "changes requested by kdev", GateDetail("s", found))
    run = only(bench, pr.head_sha)
    assert [a["start_line"] for a in run.annotations] == list(range(1, 61))  # none twice
    [patch] = writes(bench, "PATCH")[patches:]
    assert len(patch.body["output"]["annotations"]) == 10
    assert patch.body["conclusion"] == "failure"


def test_a_summary_over_githubs_limit_is_cut_to_fit(bench: Bench) -> None:
    bench, _ = as_app(bench)
    env = {**(bench.app_env or {}), "GITHUB_API_URL": bench.sim.url}
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    with github_client(Settings.from_env(env), record_rates=False) as client:
        gate = CheckRunGate(client, REPO, NAME, BodyGate(bench.config(), env, "the check run"))
        assert gate.set(pr.head_sha, "success", "approved by kdev", GateDetail("x" * 70000))
    summary = only(bench, pr.head_sha).output["summary"]
    assert len(summary) <= 65535 and summary.endswith("cut to fit one comment)_\n")
