"""The budget reads legs.window.json, and decides exactly as a full read of legs.jsonl
would (issue 19, item 3): at the edges of the 24 h window, after the window file is
deleted or corrupted, and after an append the window did not see."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from wrapper.config import Budgets
from wrapper.ledger.codec import leg_from_json
from wrapper.ledger.ledger import Ledger, LegRecord, format_timestamp
from wrapper.ledger.legwindow import WINDOW_FILE
from wrapper.review.budget import WINDOW, BudgetDecision, decide_budget

REPO = "octo/widgets"
SHA = "a" * 40
T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
BUDGETS = Budgets(daily_legs_per_repo=4, daily_rounds_per_pr=2)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def _full_read(ledger: Ledger) -> list[LegRecord]:
    """The pre-window behaviour: every parseable line of legs.jsonl."""
    text = (ledger.repo_dir(REPO) / "legs.jsonl").read_text()
    legs = []
    for line in text.splitlines():
        try:
            legs.append(leg_from_json(line))
        except ValueError:
            continue
    return legs


def _decisions(ledger: Ledger, now: datetime) -> tuple[list[BudgetDecision], list[BudgetDecision]]:
    windowed = ledger.legs_since(REPO, now - WINDOW)
    full = [leg for leg in _full_read(ledger) if leg.started_at >= now - WINDOW]
    assert windowed == full
    return (
        [decide_budget(BUDGETS, windowed, pr, now) for pr in (1, 2, 3)],
        [decide_budget(BUDGETS, full, pr, now) for pr in (1, 2, 3)],
    )


def _ledger(tmp_path: Path) -> tuple[Ledger, Clock]:
    clock = Clock()
    ledger = Ledger(tmp_path / "reviews", clock=clock)
    # Legs over two days, some a microsecond apart, so the edges are exercised.
    for offset, pr in [(0, 1), (1, 1), (3600, 2), (3600.000001, 2), (86400, 1), (90000, 3)]:
        clock.now = T0 + timedelta(seconds=offset)
        ledger.record_leg_start(REPO, pr, SHA)
    return ledger, clock


def _edges() -> list[datetime]:
    moments = []
    for offset in (0, 1, 3600, 3600.000001, 86400, 90000):
        start = T0 + timedelta(seconds=offset)
        for delta in (-1e-6, 0, 1e-6):
            moments.append(start + WINDOW + timedelta(seconds=delta))
    return sorted(moments)


def test_budget_decisions_match_a_full_read_at_the_window_edges(tmp_path: Path) -> None:
    ledger, _ = _ledger(tmp_path)
    denied = 0
    for now in _edges():
        windowed, full = _decisions(ledger, now)
        assert windowed == full, now
        denied += sum(not d.allowed for d in windowed)
    assert denied > 0  # the edges do cross a budget
    window = ledger.repo_dir(REPO) / WINDOW_FILE
    written = window.stat().st_mtime_ns
    for now in _edges()[-6:]:  # inside the window's horizon (25 h before the last leg)
        _decisions(ledger, now)
    assert window.stat().st_mtime_ns == written  # answered from the window, no rebuild


def test_a_deleted_or_corrupt_window_file_is_rebuilt_from_the_log(tmp_path: Path) -> None:
    ledger, _ = _ledger(tmp_path)
    window = ledger.repo_dir(REPO) / WINDOW_FILE
    for damage in ("delete", "corrupt", "empty"):
        if damage == "delete":
            window.unlink()
        else:
            window.write_text("{not json" if damage == "corrupt" else "")
        for now in _edges():
            windowed, full = _decisions(ledger, now)
            assert windowed == full, (damage, now)
        assert window.read_text().startswith('{"format":1')


def test_an_append_the_window_did_not_see_is_counted(tmp_path: Path) -> None:
    ledger, clock = _ledger(tmp_path)
    now = T0 + timedelta(seconds=90001)
    before = ledger.legs_since(REPO, now - WINDOW)
    # An older kdev (or a crash between the two writes) appended without the window.
    line = {"pr": 3, "head_sha": SHA, "started_at": format_timestamp(now)}
    with (ledger.repo_dir(REPO) / "legs.jsonl").open("a") as handle:
        handle.write(str(line).replace("'", '"') + "\n")
    after = ledger.legs_since(REPO, now - WINDOW)
    assert len(after) == len(before) + 1 and after[-1].pr == 3
    windowed, full = _decisions(ledger, now)
    assert windowed == full


def test_a_question_older_than_the_window_reads_the_whole_log(tmp_path: Path) -> None:
    ledger, clock = _ledger(tmp_path)
    clock.now = T0 + timedelta(days=3)
    ledger.record_leg_start(REPO, 4, SHA)  # the window now drops the old legs
    assert len(ledger.legs_since(REPO, clock.now - WINDOW)) == 1
    assert len(ledger.legs_since(REPO, T0)) == 7  # all, from the log
