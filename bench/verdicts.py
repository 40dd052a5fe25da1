"""``list_deferred`` and ``kdev verdicts`` on a large ledger (issue 19).

One repository with N PR directories (10k; quick 2k), ten verdicts each in index.json
(100k; quick 20k) beside three verdict files, the two lock files and outcomes.jsonl, one PR
in a hundred with a deferred marker, all written long ago (their
mtimes set an hour back) but the newest ten PRs, reviewed within the last hour. Files are
written directly, as the ledger lays them out, so seeding takes seconds.

Measured in the same run, median of a few calls each:

- ``list_deferred``: the baseline opens every PR directory (what it did before the PR
  index: list each for markers and read them), against the PR index cold (the first call,
  which reads every directory and writes prs.index.json) and warm (later calls: one stat
  per directory and file it knows);
- ``kdev verdicts`` in process: the whole listing (the baseline, which reads every
  index.json, as every call did before) against a first page (``--limit 50``), a page in
  the middle (``--cursor``), ``--since 1h`` and ``--pr N``;
- ``kdev verdicts`` as a whole process: ``--json`` (everything) against
  ``--limit 50 --json``.

Every variant is checked to return the same rows as the baseline computes for it.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from wrapper.ledger.codec import index_to_json, marker_to_json
from wrapper.ledger.ledger import DeferredMarker, IndexEntry, Ledger
from wrapper.ledger.listing import Query, decode_cursor, row_key, row_moment

REPO = "bench/verdicts"
HEADS = 10
# What else a PR directory holds: locks, the outcome log and verdict files (three diffs).
PATCH_FILES = tuple(f"patch-{k:040x}.md" for k in range(3))
BIN = Path(sys.executable).parent


@dataclass
class VerdictsBench:
    prs: int
    verdicts: int
    markers: int
    seed_seconds: float = 0.0
    times: dict[str, float] = field(default_factory=dict)  # median seconds
    rows: dict[str, int] = field(default_factory=dict)


def _sha(pr: int, k: int) -> str:
    return f"{pr:08x}{k:04x}" + "0" * 28


def seed(root: Path, prs: int) -> tuple[Ledger, int]:
    """The ledger of the module docstring; returns it and the number of markers."""
    ledger = Ledger(root)
    repo_dir = ledger.repo_dir(REPO)
    ledger.ensure_dir(repo_dir)
    now = datetime.now(UTC).replace(microsecond=0)
    old = now - timedelta(days=30)
    markers = 0
    for pr in range(1, prs + 1):
        directory = repo_dir / f"pr-{pr}"
        directory.mkdir(mode=0o700)
        recent = pr > prs - 10
        moment = now - timedelta(minutes=5) if recent else old + timedelta(seconds=pr)
        index = {_sha(pr, k): IndexEntry(_sha(pr, 99), "APPROVE", moment) for k in range(HEADS)}
        (directory / "index.json").write_text(index_to_json(index))
        for name in (".lock", ".index.lock", "outcomes.jsonl", *PATCH_FILES):
            (directory / name).write_text("")
        if pr % 100 == 0:
            head = _sha(pr, 50)
            marker = DeferredMarker("daily_legs_per_repo", 5, 5, now, head, "u", moment)
            (directory / f"deferred-{head}.json").write_text(marker_to_json(marker))
            markers += 1
        if not recent:
            then = time.time() - 3600
            for path in (directory, *directory.iterdir()):
                os.utime(path, (then, then))
    return ledger, markers


def full_scan_deferred(ledger: Ledger) -> list[Any]:
    """list_deferred as it was before the PR index: every PR directory opened."""
    found = []
    repo_dir = ledger.repo_dir(REPO)
    for path in sorted(repo_dir.iterdir()):
        if path.name.startswith("pr-") and path.is_dir():
            number = int(path.name[3:])
            found += [(REPO, number, m) for m in ledger.markers_of(path)]
    found.sort(key=lambda t: (t[0], t[1], t[2].created_at, t[2].head_sha))
    return found


def _median(call: Callable[[], Any], runs: int) -> tuple[float, Any]:
    spent, result = [], None
    for _ in range(runs):
        began = time.perf_counter()
        result = call()
        spent.append(time.perf_counter() - began)
    return statistics.median(spent), result


def _process(root: Path, *args: str) -> float:
    argv = [str(BIN / "kdev"), "verdicts", "--reviews-dir", str(root), *args]
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(root)}
    began = time.perf_counter()
    subprocess.run(argv, env=env, capture_output=True, check=True)
    return time.perf_counter() - began


def _deferred(report: VerdictsBench, ledger: Ledger, runs: int) -> None:
    report.times["deferred baseline"], expected = _median(lambda: full_scan_deferred(ledger), runs)
    began = time.perf_counter()
    cold = ledger.list_deferred(REPO)
    report.times["deferred index cold"] = time.perf_counter() - began
    report.times["deferred index warm"], warm = _median(lambda: ledger.list_deferred(REPO), runs)
    if not cold == warm == expected:
        raise RuntimeError("list_deferred through the PR index differs from the full scan")
    report.rows["deferred"] = len(expected)


def _listing(report: VerdictsBench, ledger: Ledger, root: Path, runs: int) -> None:
    report.times["verdicts all"], full = _median(lambda: ledger.list_ledger(REPO), runs)
    report.rows["verdicts all"] = len(full)
    page = ledger.page_ledger(Query(limit=50))
    report.times["verdicts first page"], first = _median(
        lambda: ledger.page_ledger(Query(limit=50)), runs
    )
    after = row_key(full[len(full) // 2 - 1])
    report.times["verdicts middle page"], mid = _median(
        lambda: ledger.page_ledger(Query(limit=50, after=after)), runs
    )
    since = datetime.now(UTC) - timedelta(hours=1)
    report.times["verdicts --since 1h"], recent = _median(
        lambda: ledger.list_ledger(since=since), runs
    )
    pr = report.prs // 2
    report.times["verdicts --pr N"], one = _median(lambda: ledger.list_ledger(REPO, pr), runs)
    start = len(full) // 2
    checks = (
        first.rows == full[:50] == page.rows,
        decode_cursor(first.next_cursor or "") is not None,
        mid.rows == full[start : start + 50],
        recent == [r for r in full if row_moment(r) >= since],
        one == [r for r in full if r.pr == pr],
    )
    if not all(checks):
        raise RuntimeError(f"a paged or filtered listing differs from the full one: {checks}")
    report.rows["verdicts --since 1h"] = len(recent)
    report.times["process --json"] = statistics.median(
        _process(root, "--json") for _ in range(max(1, runs // 2))
    )
    report.times["process --limit 50"] = statistics.median(
        _process(root, "--limit", "50", "--json") for _ in range(max(1, runs // 2))
    )


def measure(prs: int, workdir: Path, runs: int = 5) -> VerdictsBench:
    root = workdir / "verdicts-ledger"
    began = time.perf_counter()
    ledger, markers = seed(root, prs)
    report = VerdictsBench(prs, prs * HEADS, markers, time.perf_counter() - began)
    _deferred(report, ledger, runs)
    _listing(report, ledger, root, runs)
    return report


def report(result: VerdictsBench) -> list[str]:
    t = result.times

    def line(name: str, base: str) -> str:
        return f"  {name:28} {t[name] * 1000:9.1f} ms   baseline/this = {t[base] / t[name]:7.1f}x"

    return [
        f"verdicts: {result.prs:,} PRs, {result.verdicts:,} verdicts, {result.markers} deferred "
        f"markers in one repository (seeded in {result.seed_seconds:.1f} s)",
        f"  {'deferred baseline':28} {t['deferred baseline'] * 1000:9.1f} ms   "
        "every PR directory opened (before the PR index)",
        line("deferred index cold", "deferred baseline") + "  (builds prs.index.json)",
        line("deferred index warm", "deferred baseline"),
        f"  {'verdicts all':28} {t['verdicts all'] * 1000:9.1f} ms   "
        f"{result.rows['verdicts all']:,} rows: every index.json read (the baseline)",
        line("verdicts first page", "verdicts all") + "  (--limit 50)",
        line("verdicts middle page", "verdicts all") + "  (--limit 50 --cursor)",
        line("verdicts --since 1h", "verdicts all")
        + f"  ({result.rows['verdicts --since 1h']} rows)",
        line("verdicts --pr N", "verdicts all"),
        f"  {'process --json':28} {t['process --json'] * 1000:9.1f} ms   kdev verdicts, everything",
        line("process --limit 50", "process --json"),
    ]
