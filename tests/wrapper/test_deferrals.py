"""Issue 10 item 8: every deferral carries its reopen time and the sweep retries it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.wrapper.reviewbench import REPO, Bench, open_bench
from tests.wrapper.test_sweep import sweep
from wrapper.errors import Outcome
from wrapper.ledger.ledger import DeferredMarker


@pytest.fixture
def bench(tmp_path: Path) -> Iterator[Bench]:
    with open_bench(tmp_path, {"app.py": "one\n"}) as made:
        yield made


@pytest.mark.parametrize("draft", [False, True], ids=["ready", "draft"])
def test_a_concurrency_cap_deferral_reopens_and_is_retried(bench: Bench, draft: bool) -> None:
    reviewer = {"backend": "command", "argv": bench.config().reviewer.argv, "timeout_seconds": 90}  # type: ignore[union-attr]
    config = bench.config(budgets={"max_concurrent_legs_per_repo": 1}, reviewer=reviewer)
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    if draft:
        bench.sim.set_draft(REPO, pr.number)
    before = datetime.now(UTC)
    with bench.ledger().concurrency_slot(REPO, 1) as slot:  # a leg of another run
        assert slot == 0
        report = bench.review(pr.number, config=config)
    assert report.outcome is Outcome.DEFERRED_BUDGET
    [(_, _, marker)] = bench.ledger().list_deferred(REPO)
    assert marker.budget == "max_concurrent_legs_per_repo" and marker.reopens_at is not None
    assert (
        before + timedelta(seconds=89)
        <= marker.reopens_at
        <= datetime.now(UTC) + timedelta(seconds=91)
    )
    [note] = [n for n in bench.notes() if "DEFERRED" in n["subject"]]
    assert f"REOPENS_AT: {marker.reopens_at.isoformat()}" in note["body"]
    early = sweep(bench, kdev=config)
    assert early.repos[0].deferred[0].retried is None  # not yet reopened
    later = sweep(bench, kdev=config, later=timedelta(seconds=120))
    assert later.repos[0].deferred[0].retried == "reviewed"
    assert bench.ledger().list_deferred(REPO) == []
    assert pr.head_sha in bench.ledger().read_index(REPO, pr.number)


def test_a_zero_budget_deferral_is_retried_daily_not_dropped(bench: Bench) -> None:
    config = bench.config(budgets={"daily_rounds_per_pr": 0})
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    assert bench.review(pr.number, config=config).outcome is Outcome.DEFERRED_BUDGET
    [(_, _, marker)] = bench.ledger().list_deferred(REPO)
    assert marker.reopens_at is not None
    report = sweep(bench, kdev=config, later=timedelta(hours=25))
    assert report.repos[0].deferred[0].retried == "deferred_budget"  # retried, held again
    [(_, _, again)] = bench.ledger().list_deferred(REPO)
    assert again.reopens_at is not None and again.reopens_at > marker.reopens_at
    assert sum("DEFERRED" in n["subject"] for n in bench.notes()) == 2  # never silent


def test_a_legacy_marker_without_a_time_is_retried(bench: Bench) -> None:
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    bench.ledger().write_deferred(
        REPO,
        pr.number,
        pr.head_sha,
        DeferredMarker(
            "max_concurrent_legs_per_repo", 2, 2, None, pr.head_sha, "u", datetime.now(UTC)
        ),
    )
    report = sweep(bench)
    assert report.repos[0].deferred[0].retried == "reviewed"
    assert bench.ledger().list_deferred(REPO) == []
