"""Retention of legs.jsonl and posted-comments.jsonl (issue 19): a prune never changes a
budget decision, keeps kdev's own comments recognisable while their PR is in use, and a
crash mid-prune loses nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wrapper.config import Budgets
from wrapper.errors import LedgerError
from wrapper.ledger import logprune
from wrapper.ledger.codec import leg_to_json
from wrapper.ledger.ledger import Ledger, LegRecord, format_timestamp
from wrapper.review.budget import WINDOW, decide_budget
from wrapper.sweep.decide import BUDGET_WINDOW

REPO = "octo/widgets"
SHA = "a" * 40
T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
BUDGETS = Budgets(daily_legs_per_repo=5, daily_rounds_per_pr=2)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def _legs_file(ledger: Ledger) -> Path:
    return ledger.repo_dir(REPO) / "legs.jsonl"


def _write_legs(ledger: Ledger, legs: list[LegRecord]) -> None:
    path = _legs_file(ledger)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(leg_to_json(leg)) + "\n" for leg in legs))


def _decisions(ledger: Ledger, now: datetime) -> list[object]:
    legs = ledger.legs_since(REPO, now - WINDOW)
    return [legs] + [decide_budget(BUDGETS, legs, pr, now) for pr in (1, 2, 3)]


def test_legs_are_kept_longer_than_every_window_that_reads_them() -> None:
    assert logprune.LEGS_KEEP >= WINDOW and logprune.LEGS_KEEP >= BUDGET_WINDOW


@settings(max_examples=60, deadline=None)
@given(
    starts=st.lists(
        st.tuples(
            st.integers(1, 3),
            # Any minute of 10 days, and often one near the 24 h edge of the budget window.
            st.one_of(st.integers(-10 * 24 * 60, 60), st.integers(-25 * 60, -23 * 60)),
        ),
        min_size=1,
        max_size=40,
    ),
    later=st.integers(0, 3 * 24 * 60),
)
def test_a_prune_never_changes_a_budget_decision(starts: list[tuple[int, int]], later: int) -> None:
    """Legs at random minutes from 10 days before T0 to an hour after (clock skew), a
    prune at T0, and the budget asked at T0 and any minute of the next 3 days: the same
    answers as without the prune."""
    with tempfile.TemporaryDirectory() as tmp:
        legs = [LegRecord(pr, SHA, T0 + timedelta(minutes=m)) for pr, m in starts]
        clock = Clock()
        pruned, kept = (Ledger(Path(tmp) / name, clock=clock) for name in ("a", "b"))
        for ledger in (pruned, kept):
            _write_legs(ledger, legs)
        done = pruned.prune_legs(REPO)
        horizon = T0 - logprune.LEGS_KEEP
        assert done.dropped == sum(leg.started_at < horizon for leg in legs)
        for moment in (T0, T0 + timedelta(minutes=later)):
            clock.now = moment
            assert _decisions(pruned, moment) == _decisions(kept, moment)


def test_an_append_compacts_a_big_old_log_at_most_once_a_day(tmp_path: Path) -> None:
    clock = Clock()
    ledger = Ledger(tmp_path / "reviews", clock=clock)
    old = [LegRecord(1, SHA, T0 - timedelta(days=9, seconds=i)) for i in range(900)]
    _write_legs(ledger, old)
    assert _legs_file(ledger).stat().st_size >= logprune.PRUNE_MIN_BYTES
    ledger.record_leg_start(REPO, 2, SHA)
    lines = _legs_file(ledger).read_text().splitlines()
    assert [json.loads(line)["pr"] for line in lines] == [2]
    # The same day: a big log is not compacted again on every append.
    _write_legs(ledger, [*old, LegRecord(2, SHA, T0)])
    clock.now = T0 + timedelta(hours=23)
    ledger.record_leg_start(REPO, 3, SHA)
    assert len(_legs_file(ledger).read_text().splitlines()) == 902
    clock.now = T0 + timedelta(days=1)
    ledger.record_leg_start(REPO, 3, SHA)
    assert [json.loads(line)["pr"] for line in _legs_file(ledger).read_text().splitlines()] == [
        2,
        3,
        3,
    ]
    assert _decisions(ledger, clock.now)[0] == ledger.legs_since(REPO, clock.now - WINDOW)


def test_a_small_log_is_never_compacted_on_append(tmp_path: Path) -> None:
    clock = Clock()
    ledger = Ledger(tmp_path / "reviews", clock=clock)
    _write_legs(ledger, [LegRecord(1, SHA, T0 - timedelta(days=30))])
    ledger.record_leg_start(REPO, 2, SHA)
    assert len(_legs_file(ledger).read_text().splitlines()) == 2


def _post(ledger: Ledger, clock: Clock, pr: int, comment_id: int, at: datetime) -> None:
    clock.now = at
    ledger.record_posted_comment(REPO, pr, comment_id, "review")


def test_posted_comments_of_a_pr_stay_while_kdev_posts_there(tmp_path: Path) -> None:
    clock = Clock()
    ledger = Ledger(tmp_path / "reviews", clock=clock)
    year = timedelta(days=365)
    _post(ledger, clock, 1, 11, T0 - year - timedelta(days=40))  # PR 1: quiet for 400 days
    _post(ledger, clock, 2, 21, T0 - year - timedelta(days=40))  # PR 2: still in use
    _post(ledger, clock, 2, 22, T0 - timedelta(days=3))
    _post(ledger, clock, 3, 31, T0 - year + timedelta(days=1))  # PR 3: inside the period
    path = ledger.repo_dir(REPO) / "posted-comments.jsonl"
    with path.open("a") as handle:
        handle.write('{"id": 41, "pr": 4, "posted_at": "garbled"}\n{"torn": \n')
    clock.now = T0
    done = ledger.prune_posted(REPO)
    assert (done.kept, done.dropped) == (4, 2)
    assert ledger.posted_comment_ids(REPO) == frozenset({21, 22, 31, 41})
    assert ledger.prune_posted(REPO).dropped == 0  # idempotent


def test_a_failing_rename_leaves_the_log_whole_and_the_append_stands(tmp_path: Path) -> None:
    def fail(temp: Path) -> None:
        raise OSError(28, "No space left on device")

    clock = Clock()
    ledger = Ledger(tmp_path / "reviews", clock=clock, before_replace=fail)
    old = [LegRecord(1, SHA, T0 - timedelta(days=9, seconds=i)) for i in range(900)]
    _write_legs(ledger, old)
    before = _legs_file(ledger).read_bytes()
    with pytest.raises(LedgerError) as caught:
        ledger.prune_legs(REPO)
    assert caught.value.reason == "ledger_write_failed"
    assert _legs_file(ledger).read_bytes() == before
    ledger.record_leg_start(REPO, 2, SHA)  # the prune on append fails: logged, not raised
    lines = _legs_file(ledger).read_text().splitlines()
    assert len(lines) == 901 and json.loads(lines[-1])["pr"] == 2
    assert not [p for p in _legs_file(ledger).parent.iterdir() if p.name.endswith(".tmp")]


CRASH = """
import os, signal, sys
from datetime import datetime
from pathlib import Path
from wrapper.ledger.ledger import Ledger

def die(temp):
    os.kill(os.getpid(), signal.SIGKILL)

now = datetime.fromisoformat(sys.argv[2])
ledger = Ledger(Path(sys.argv[1]), clock=lambda: now, before_replace=die)
getattr(ledger, sys.argv[3])("octo/widgets")
"""


@pytest.mark.parametrize("verb", ["prune_legs", "prune_posted"])
def test_a_kill_between_the_temp_file_and_the_rename_loses_nothing(
    tmp_path: Path, verb: str
) -> None:
    clock = Clock()
    ledger = Ledger(tmp_path / "reviews", clock=clock)
    _write_legs(ledger, [LegRecord(1, SHA, T0 - timedelta(days=9)), LegRecord(2, SHA, T0)])
    _post(ledger, clock, 1, 11, T0 - timedelta(days=400))
    _post(ledger, clock, 2, 21, T0)
    directory = ledger.repo_dir(REPO)
    logs = {
        name: (directory / name).read_bytes() for name in ("legs.jsonl", "posted-comments.jsonl")
    }
    child = subprocess.run(
        [sys.executable, "-c", CRASH, str(tmp_path / "reviews"), T0.isoformat(), verb],
        cwd=Path(__file__).resolve().parents[2],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        capture_output=True,
        timeout=60,
    )
    assert child.returncode == -9, child.stderr
    assert {name: (directory / name).read_bytes() for name in logs} == logs
    assert [p for p in directory.iterdir() if p.name.endswith(".tmp")]  # the crash's temp
    clock.now = T0
    assert ledger.posted_comment_ids(REPO) == frozenset({11, 21})
    assert [leg.pr for leg in ledger.legs_since(REPO, T0 - timedelta(days=30))] == [1, 2]
    # After the crash, the prune runs to its end.
    assert getattr(ledger, verb)(REPO).dropped == 1
    assert ledger.posted_comment_ids(REPO) == frozenset(
        {21} if verb == "prune_posted" else {11, 21}
    )


def test_the_marker_records_the_prune_time(tmp_path: Path) -> None:
    clock = Clock()
    ledger = Ledger(tmp_path / "reviews", clock=clock)
    _write_legs(ledger, [LegRecord(1, SHA, T0)])
    ledger.prune_legs(REPO)
    marker = logprune.marker_path(_legs_file(ledger))
    assert marker.read_text() == format_timestamp(T0) + "\n"
