"""The budget decision's cost as legs.jsonl grows (issue 19, item 3).

A ledger whose legs.jsonl holds N legs (1k and 100k; quick 1k and 20k), all but the
last 20 older than the 24 h window, written directly. Timed with ``time.perf_counter``,
median of 50 calls each, alternating:

- **window**: ``Ledger.legs_since(repo, now - 24 h)`` + ``decide_budget``, as review-pr
  does; it reads legs.window.json (wrapper.ledger.legwindow);
- **full read** (the baseline, what every decision did before): the whole legs.jsonl
  read and parsed (``Ledger._read_legs``) and filtered, + ``decide_budget``.

Printed: both medians per size, window/full, and the target (window under 5 ms at 100k).
"""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from wrapper.config import Budgets
from wrapper.ledger.ledger import Ledger, format_timestamp
from wrapper.review.budget import WINDOW, decide_budget

REPO = "bench/ledger"
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
BUDGETS = Budgets(daily_legs_per_repo=50, daily_rounds_per_pr=10)


@dataclass
class LedgerSize:
    legs: int
    window_ms: float
    full_ms: float


def _seed(ledger: Ledger, legs: int) -> None:
    directory = ledger.repo_dir(REPO)
    directory.mkdir(parents=True, exist_ok=True)
    lines = []
    for index in range(legs):
        recent = index >= legs - 20
        moment = NOW - timedelta(minutes=legs - index) if recent else NOW - timedelta(days=30)
        moment += timedelta(seconds=index % 3600) if not recent else timedelta(0)
        item = {"pr": 1 + index % 500, "head_sha": "a" * 40, "started_at": format_timestamp(moment)}
        lines.append(json.dumps(item))
    (directory / "legs.jsonl").write_text("\n".join(lines) + "\n")


def measure_size(legs: int, workdir: Path, calls: int = 50) -> LedgerSize:
    ledger = Ledger(workdir / f"ledger-{legs}", clock=lambda: NOW)
    _seed(ledger, legs)
    ledger.legs_since(REPO, NOW - WINDOW)  # builds the window file once
    path = ledger.repo_dir(REPO) / "legs.jsonl"
    windowed, full = [], []
    for _ in range(calls):
        began = time.perf_counter()
        decision = decide_budget(BUDGETS, ledger.legs_since(REPO, NOW - WINDOW), 7, NOW)
        windowed.append(time.perf_counter() - began)
        began = time.perf_counter()
        every, _ = ledger._read_legs(path)
        recent = [leg for leg in every if leg.started_at >= NOW - WINDOW]
        baseline = decide_budget(BUDGETS, recent, 7, NOW)
        full.append(time.perf_counter() - began)
        assert decision == baseline
    return LedgerSize(legs, statistics.median(windowed) * 1000, statistics.median(full) * 1000)


def report(sizes: list[LedgerSize]) -> list[str]:
    lines = ["ledger: one budget decision (legs_since + decide_budget), median of 50"]
    for size in sizes:
        lines.append(
            f"  {size.legs:>7,} legs: window {size.window_ms:7.3f} ms, full read "
            f"{size.full_ms:8.2f} ms (window/full = {size.window_ms / size.full_ms:.4f})"
        )
    largest = sizes[-1]
    verdict = "met" if largest.window_ms < 5 else "NOT met"
    lines.append(
        f"  target < 5 ms at 100,000 legs: {largest.window_ms:.3f} ms at "
        f"{largest.legs:,} ({verdict})"
    )
    return lines
