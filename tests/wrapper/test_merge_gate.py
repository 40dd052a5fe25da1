"""The merge gate (issue 27, D85): the ``kdev/review`` commit status kdev sets on every
head it decides, over ghsim with the review bench."""

from __future__ import annotations

import dataclasses
import json
import logging
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from engine.config import Settings
from engine.github import GitHubClient
from tests.wrapper.reviewbench import BIN, REPO, Bench
from tests.wrapper.test_sweep import sweep
from wrapper.config import KdevConfig, load_config
from wrapper.errors import ConfigError, LedgerError, Outcome, ReviewerFailed
from wrapper.explain import EngineSide, build_timeline
from wrapper.ledger.outcomes import OutcomeEntry, entry_of
from wrapper.review.merge_gate import StatusGate

CONTEXT = "kdev/review"


def _on(bench: Bench, **overrides: Any) -> KdevConfig:
    return bench.config(merge_gate={"enabled": True}, **overrides)


def _history(bench: Bench, sha: str) -> list[tuple[str, str, str | None]]:
    """Every status on ``sha``, newest first: (context, state, description)."""
    answer = httpx.get(
        f"{bench.sim.url}/repos/{REPO}/commits/{sha}/statuses",
        headers={"Authorization": f"token {bench.token}"},
        timeout=10,
    )
    answer.raise_for_status()
    return [(s["context"], s["state"], s["description"]) for s in answer.json()]


def _posts(bench: Bench) -> int:
    return len(bench.sim.requests_to(r"/statuses/[0-9a-f]{40}$", "POST"))


def test_a_review_goes_pending_then_its_verdict(bench: Bench) -> None:
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    report = bench.review(pr.number, config=_on(bench))
    assert report.outcome is Outcome.REVIEWED and report.verdict == "APPROVE"
    assert _history(bench, pr.head_sha) == [
        (CONTEXT, "success", "approved by kdev"),
        (CONTEXT, "pending", "review running"),
    ]
    assert report.merge_gate == {
        "context": CONTEXT,
        "state": "success",
        "description": "approved by kdev",
        "action": "set",
    }
    assert report.to_json()["merge_gate"]["action"] == "set"


def test_a_base_merge_is_green_on_the_new_head_without_a_leg(bench: Bench) -> None:
    config = _on(bench)
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    assert bench.review(pr.number, config=config).outcome is Outcome.REVIEWED
    legs = bench.legs()
    bench.sim.commit_to_base(REPO, {"other.py": "2\n"})
    new_head = bench.sim.merge_base_into_head(REPO, pr.number)  # update-branch
    report = bench.review(pr.number, config=config)
    assert report.outcome is Outcome.CARRIED_FORWARD and report.head_sha == new_head
    assert bench.legs() == legs  # 0 legs
    assert _history(bench, new_head) == [(CONTEXT, "success", "approved by kdev")]


def test_a_budget_deferral_is_pending_with_its_reason(bench: Bench) -> None:
    config = _on(bench, budgets={"daily_legs_per_repo": 1})
    first = bench.sim.open_pr(REPO, "a", {"a.py": "1\n"})
    second = bench.sim.open_pr(REPO, "b", {"b.py": "1\n"})
    bench.review(first.number, config=config)
    report = bench.review(second.number, config=config)
    assert report.outcome is Outcome.DEFERRED_BUDGET
    assert _history(bench, second.head_sha) == [
        (CONTEXT, "pending", "review deferred (daily_legs_per_repo: 1/1)")
    ]
    # The sweep's retry of the same deferral writes nothing new.
    assert bench.review(second.number, config=config).outcome is Outcome.DEFERRED_BUDGET
    assert len(_history(bench, second.head_sha)) == 1


def test_a_wrapper_failure_is_an_error_with_its_reason_code(bench: Bench) -> None:
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    with pytest.raises(ReviewerFailed) as caught:
        bench.review(pr.number, config=_on(bench), environ={"KDEV_STUB_EXIT": "3"})
    assert caught.value.reason == "reviewer_failed"
    assert _history(bench, pr.head_sha)[0] == (CONTEXT, "error", "kdev failed: reviewer_failed")


def test_changes_requested_then_fixed_is_failure_then_success(bench: Bench) -> None:
    config = _on(bench)
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "x = 1  # TODO\n"})
    first = pr.head_sha
    report = bench.review(pr.number, config=config)
    assert report.verdict == "REQUEST_CHANGES"
    assert _history(bench, first)[0] == (CONTEXT, "failure", "changes requested by kdev")
    fixed = bench.sim.push(REPO, pr.number, {"a.py": "x = 1\n"})
    assert bench.review(pr.number, config=config).verdict == "APPROVE"
    assert _history(bench, fixed)[0] == (CONTEXT, "success", "approved by kdev")
    assert _history(bench, first)[0][1] == "failure"  # the old head keeps its own


def test_the_gate_is_off_by_default(bench: Bench) -> None:
    assert not bench.config().merge_gate.enabled
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    report = bench.review(pr.number)
    assert report.outcome is Outcome.REVIEWED and report.merge_gate is None
    assert _posts(bench) == 0
    assert not bench.sim.requests_to(r"/commits/[^/]+/status", "GET")


def test_a_rerun_of_the_same_head_posts_no_duplicate(bench: Bench) -> None:
    config = _on(bench)
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    bench.review(pr.number, config=config)
    posted = _posts(bench)
    again = bench.review(pr.number, config=config)
    assert again.outcome is Outcome.CARRIED_FORWARD
    assert again.merge_gate is not None and again.merge_gate["action"] == "unchanged"
    assert _posts(bench) == posted == 2
    assert len(_history(bench, pr.head_sha)) == 2


def test_a_failed_status_post_is_a_warning_and_the_review_stands(
    bench: Bench, caplog: pytest.LogCaptureFixture
) -> None:
    bench.sim.inject_fault("POST", r"/statuses/", status=502, times=None)
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    with caplog.at_level(logging.WARNING, logger="kdev.review"):
        report = bench.review(pr.number, config=_on(bench))
    assert report.outcome is Outcome.REVIEWED and report.verdict == "APPROVE"
    assert report.merge_gate is not None
    assert (report.merge_gate["action"], report.merge_gate["reason"]) == (
        "failed",
        "merge_gate_post_failed",
    )
    assert "[merge_gate_post_failed]" in caplog.text
    assert bench.ledger().find_verdict(REPO, pr.number, report.patch_id) is not None


def test_a_failed_status_read_is_a_warning_too(bench: Bench) -> None:
    bench.sim.inject_fault("GET", r"/commits/[0-9a-f]{40}/status$", status=502, times=None)
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    report = bench.review(pr.number, config=_on(bench))
    assert report.outcome is Outcome.REVIEWED
    assert report.merge_gate is not None
    assert report.merge_gate["reason"] == "merge_gate_read_failed"
    assert _posts(bench) == 0


def test_a_failed_status_never_hides_the_runs_own_failure(bench: Bench) -> None:
    bench.sim.inject_fault("POST", r"/statuses/", status=502, times=None)
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    with pytest.raises(ReviewerFailed):
        bench.review(pr.number, config=_on(bench), environ={"KDEV_STUB_EXIT": "3"})


def test_a_repository_can_have_its_own_gate(bench: Bench) -> None:
    own = {REPO: {"merge_gate": {"enabled": True, "context": "ci/kdev"}}}
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    bench.review(pr.number, config=bench.config(repositories=own))
    assert {c for c, _, _ in _history(bench, pr.head_sha)} == {"ci/kdev"}
    other = {REPO: {"merge_gate": {"enabled": False}}}
    second = bench.sim.open_pr(REPO, "g", {"g.py": "1\n"})
    bench.review(second.number, config=_on(bench, repositories=other))
    assert _history(bench, second.head_sha) == []  # off for this repository


def test_a_description_with_a_secret_is_never_posted(bench: Bench) -> None:
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    secret = "sk-gate-canary-0123456789"
    settings = Settings(github_api_url=bench.sim.url, github_token=bench.token)
    with GitHubClient(settings) as client:
        gate = StatusGate(client, REPO, CONTEXT, [secret])
        with pytest.raises(LedgerError) as caught:
            gate.set(pr.head_sha, "error", f"kdev failed: {secret}")
        assert caught.value.reason == "secret_in_output"
        assert gate.set(pr.head_sha, "success", "approved by kdev") is True
        assert gate.set(pr.head_sha, "success", "approved by kdev") is False
    assert _posts(bench) == 1


@pytest.mark.parametrize("context", ["", " kdev", "k" * 101, "kdev\nreview"])
def test_a_bad_context_is_a_one_line_config_error(tmp_path: Path, context: str) -> None:
    path = tmp_path / "kdev.yaml"
    path.write_text(f"merge_gate:\n  enabled: true\n  context: {json.dumps(context)}\n")
    with pytest.raises(ConfigError) as caught:
        load_config(str(path))
    assert caught.value.reason == "invalid_config"
    assert "merge_gate.context" in caught.value.message
    assert "\n" not in caught.value.message


def test_enabled_must_be_a_boolean(tmp_path: Path) -> None:
    path = tmp_path / "kdev.yaml"
    path.write_text("merge_gate:\n  enabled: 'on'\n")
    with pytest.raises(ConfigError) as caught:
        load_config(str(path))
    assert caught.value.reason == "invalid_config" and "merge_gate.enabled" in caught.value.message


def test_pr_status_shows_the_gate_at_the_head(bench: Bench) -> None:
    config = _on(bench)
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "x = 1  # FIXME\n"})
    bench.review(pr.number, config=config)
    argv = [str(BIN / "kdev"), "pr-status", "--repo", REPO, "--pr", str(pr.number)]
    env = bench.kdev_env(config)
    shown = subprocess.run([*argv, "--json"], env=env, capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["merge_gate"] == {
        "context": CONTEXT,
        "state": "failure",
        "description": "changes requested by kdev",
    }
    text = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60).stdout
    assert "merge gate kdev/review: failure (changes requested by kdev)" in text
    off = subprocess.run(
        [*argv, "--json"], env=bench.kdev_env(), capture_output=True, text=True, timeout=60
    )
    assert json.loads(off.stdout)["merge_gate"] is None


def test_explain_shows_what_the_gate_set(bench: Bench) -> None:
    bench.sim.inject_fault("POST", r"/statuses/", status=502, times=1)  # the pending one
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    report = bench.review(pr.number, config=_on(bench))
    now = datetime.now(UTC)
    entry = OutcomeEntry.from_json(entry_of("review-pr", report, bench.ledger(), now).to_json())
    assert entry.merge_gate == report.merge_gate
    [line] = build_timeline(EngineSide((), (), (), ()), [entry], [], now)
    assert line.text.endswith("[kdev/review success set]")
    failed = {**report.merge_gate, "action": "failed", "reason": "merge_gate_post_failed"}
    logged = dataclasses.replace(entry, merge_gate=failed)
    [line] = build_timeline(EngineSide((), (), (), ()), [logged], [], now)
    assert line.text.endswith("[kdev/review success failed: merge_gate_post_failed]")
    old = OutcomeEntry.from_json({**entry.to_json(), "merge_gate": None})
    [line] = build_timeline(EngineSide((), (), (), ()), [old], [], now)
    assert "[" not in line.text  # an entry from before the gate shows none


def test_the_sweeps_digest_shows_the_gate(bench: Bench) -> None:
    config = _on(bench)
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    bench.review(pr.number, config=config)
    bench.sim.set_auto_merge(REPO, pr.number, "squash")
    bench.sim.set_review_decision(REPO, pr.number, "REVIEW_REQUIRED")
    before = len(bench.notes())
    [row] = sweep(bench, kdev=config).digest
    assert row.merge_gate == "kdev/review success"
    [note] = bench.notes()[before:]
    assert note["body"].endswith(" | kdev/review success")
    bench.sim.inject_fault("GET", r"/commits/[0-9a-f]{40}/status$", status=404, times=None)
    [row] = sweep(bench, kdev=config).digest
    assert row.merge_gate is not None and row.merge_gate.startswith("kdev/review unreadable [")
    assert sweep(bench).digest[0].merge_gate is None  # the gate off: no column
