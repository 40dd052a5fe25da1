"""A carry-forward is listed by when it was made; a fire at a reviewed head says so (issue 25)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.wrapper.reviewbench import REPO, Bench
from tests.wrapper.test_prindex import T0, age, index_file, sha
from wrapper.errors import Outcome
from wrapper.ledger.ledger import IndexEntry, Ledger


def test_since_lists_a_carry_made_after_it_of_a_verdict_reviewed_before(
    tmp_path: Path,
) -> None:
    ledger = Ledger(tmp_path)
    ledger.record_index(REPO, 1, sha(1), IndexEntry(sha(9), "APPROVE", T0))
    carried = IndexEntry(
        sha(9), "APPROVE", T0, carried_from=sha(1), carried_at=T0 + timedelta(days=2)
    )
    ledger.record_index(REPO, 1, sha(2), carried)
    age(tmp_path)  # the PR index trusts its summary: its newest moment decides
    since = T0 + timedelta(days=1)
    ledger.list_ledger(REPO, since=T0)  # builds the PR index
    assert json.loads(index_file(ledger, REPO).read_text())["prs"]["1"]["trusted"]
    rows = ledger.list_ledger(REPO, since=since)
    assert [(r.head_sha, r.kind) for r in rows] == [(sha(2), "carried")]
    assert rows[0].to_json()["carried_at"] == "2026-03-03T12:00:00Z"
    assert ledger.list_ledger(REPO, since=T0 + timedelta(days=3)) == []


def test_an_index_entry_of_an_older_kdev_without_carried_at_still_reads(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    ledger.record_index(REPO, 1, sha(2), IndexEntry(sha(9), "APPROVE", T0, carried_from=sha(1)))
    path = ledger.pr_dir(REPO, 1) / "index.json"
    assert "carried_at" not in path.read_text()
    [row] = ledger.list_ledger(REPO, since=T0)
    assert row.carried_at is None and row.to_json()["carried_at"] is None


def test_a_carry_forward_records_when_and_kdev_verdicts_since_shows_it(bench: Bench) -> None:
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "x = 1\n"})
    bench.review(pr.number)
    since = datetime.now(UTC)  # after the review, before the carry
    bench.sim.force_push(REPO, pr.number, {"a.py": "x = 1\n"})
    carried = bench.review(pr.number)
    assert carried.outcome is Outcome.CARRIED_FORWARD
    head = bench.sim.pull(REPO, pr.number).head_sha
    rows = bench.ledger().list_ledger(REPO, since=since)
    assert [(r.head_sha, r.kind) for r in rows] == [(head, "carried")]
    first = rows[0].carried_at
    assert first is not None and first >= since
    # The same head fired again (a label): the carry is the same one, its moment kept.
    bench.review(pr.number)
    assert bench.ledger().read_index(REPO, pr.number)[head].carried_at == first


def test_a_fire_at_the_reviewed_head_says_it_was_already_reviewed(bench: Bench) -> None:
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "x = 1\n"})
    reviewed_head = pr.head_sha
    bench.review(pr.number)
    again = bench.review(pr.number)  # a label or auto-merge event: the head did not move
    assert again.outcome is Outcome.CARRIED_FORWARD
    assert again.detail.split("; ")[0] == "already reviewed at this head"
    bench.sim.force_push(REPO, pr.number, {"a.py": "x = 1\n"})
    moved = bench.review(pr.number)
    assert moved.detail.startswith(f"same diff as {reviewed_head}")
