"""``python -m bench [--quick] [--database-url URL] [--only NAME]``: run and report."""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import (
    bounds,
    daemon_idle,
    decisions,
    engines,
    fastpath,
    findings,
    fire_overhead,
    health,
    installations,
    ledger_window,
    legs,
    lifecycle_tokens,
    mention_scale,
    poll,
    retention,
    sandbox,
    startup,
    triage_agreement,
    verdicts,
)

FULL: dict[str, Any] = {
    "fires": 200,
    "schedules": 10_000,
    "idle_seconds": 10.0,
    "repos": 500,
    "passes": 5,
    "prs": 50,
    "sandbox_runs": 50,
    "decision_trials": 7,
    "fastpath_runs": 15,
    "startup_runs": 15,
    "ledger_legs": (1_000, 100_000),
    "health_small": (100, 100_000),
    "health_large": (500, 1_000_000),
    "retention": (100, 1_000_000, 90),
    "verdicts_prs": 10_000,
    "engine_schedules": 3_000,
    "engine_warm": 4.0,
    "engine_window": 15.0,
    "mention_repos": 100,  # every 24 s: the load of 500 every 120 s
    "installations": (10, 500, 120),  # installations x repositories every N s: the goal
    "findings_cases": None,  # every case of bench/data/findings_trace.json
    "lifecycle_prs": None,  # every PR of bench/data/lifecycle_trace.json.gz
}
QUICK: dict[str, Any] = {
    "fires": 50,
    "schedules": 2_000,
    "idle_seconds": 3.0,
    "repos": 100,
    "passes": 2,
    "prs": 12,
    "sandbox_runs": 15,
    "decision_trials": 3,
    "fastpath_runs": 5,
    "startup_runs": 5,
    "ledger_legs": (1_000, 20_000),
    "health_small": (100, 20_000),
    "health_large": (200, 100_000),
    "retention": (20, 100_000, 90),
    "verdicts_prs": 2_000,
    "engine_schedules": 1_000,
    "engine_warm": 3.0,
    "engine_window": 6.0,
    "mention_repos": 50,  # every 12 s
    "installations": (2, 10, 10),
    "findings_cases": 5,
    "lifecycle_prs": 40,
}
BENCHMARKS = (
    "fire_overhead",
    "daemon_idle",
    "poll",
    "legs",
    "sandbox",
    "decisions",
    "health",
    "fastpath",
    "startup",
    "ledger",
    "retention",
    "verdicts",
    "engines",
    "mentions",
    "installations",
    "bounds",
    "findings",
    "lifecycle",
    "triage",
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="Benchmarks of the li engine; they print numbers and never assert them.",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=(
            f"smaller runs: {QUICK['fires']} fires, {QUICK['schedules']:,} schedules, "
            f"{QUICK['idle_seconds']:g} s idle, {QUICK['repos']} polled repositories x "
            f"{QUICK['passes']} idle passes, {QUICK['prs']} traced PRs (default "
            f"{FULL['fires']}, {FULL['schedules']:,}, {FULL['idle_seconds']:g} s, "
            f"{FULL['repos']} x {FULL['passes']}, {FULL['prs']})"
        ),
    )
    parser.add_argument(
        "--database-url",
        metavar="URL",
        help=(
            "PostgreSQL server to use instead of SQLite in a temp dir; a throwaway database "
            "is created and dropped per benchmark (the role needs CREATEDB); legs uses none"
        ),
    )
    parser.add_argument(
        "--only", choices=BENCHMARKS, action="append", help="run just this one (repeatable)"
    )
    return parser


def _emit(lines: list[str]) -> None:
    print("\n".join(lines), flush=True)


def _health(sizes: dict[str, Any], workdir: Path, url: str | None) -> list[str]:
    measured = []
    backend = "sqlite"
    for key, before in (("health_small", True), ("health_large", False)):
        schedules, runs = sizes[key]
        backend, size = health.measure_size(schedules, runs, workdir, url, before=before)
        measured.append(size)
    return [*health.report(backend, measured), ""]


def main(argv: list[str] | None = None) -> int:
    options = _parser().parse_args(argv)
    sizes = QUICK if options.quick else FULL
    chosen = options.only or list(BENCHMARKS)
    began = time.perf_counter()
    _emit(
        [
            f"li engine benchmarks ({'quick' if options.quick else 'full'}) - "
            f"Python {platform.python_version()} on {platform.system()} {platform.machine()}",
            "",
        ]
    )
    with tempfile.TemporaryDirectory(prefix="li-bench-") as scratch:
        workdir = Path(scratch)
        if "fire_overhead" in chosen:
            result = fire_overhead.measure(int(sizes["fires"]), workdir, options.database_url)
            _emit([*fire_overhead.report(result), ""])
        if "daemon_idle" in chosen:
            backend, base, loaded = daemon_idle.measure(
                int(sizes["schedules"]), sizes["idle_seconds"], workdir, options.database_url
            )
            _emit([*daemon_idle.report(backend, base, loaded), ""])
        if "poll" in chosen:
            polled = poll.measure(
                int(sizes["repos"]), int(sizes["passes"]), workdir, options.database_url
            )
            _emit([*poll.report(polled), ""])
        if "legs" in chosen:
            _emit([*legs.report(legs.measure(int(sizes["prs"]), workdir)), ""])
        if "sandbox" in chosen:
            runs = int(sizes["sandbox_runs"])
            _emit([*sandbox.report(sandbox.measure(runs, workdir)), ""])
        if "decisions" in chosen:
            cost = decisions.measure(
                100, int(sizes["decision_trials"]), 5, workdir, options.database_url
            )
            _emit([*decisions.report(cost), ""])
        if "health" in chosen:
            _emit(_health(sizes, workdir, options.database_url))
        if "ledger" in chosen:
            measured = [ledger_window.measure_size(n, workdir) for n in sizes["ledger_legs"]]
            _emit([*ledger_window.report(measured), ""])
        if "retention" in chosen:
            schedules, runs, days = sizes["retention"]
            kept = retention.measure(schedules, runs, days, workdir, options.database_url)
            _emit([*retention.report(kept), ""])
        if "verdicts" in chosen:
            measured_verdicts = verdicts.measure(int(sizes["verdicts_prs"]), workdir)
            _emit([*verdicts.report(measured_verdicts), ""])
        if "engines" in chosen:
            count = int(sizes["engine_schedules"])
            rounds, sync_cost = engines.measure(
                count,
                float(sizes["engine_warm"]),
                float(sizes["engine_window"]),
                workdir,
                options.database_url,
            )
            _emit([*engines.report(rounds, count), *engines.sync_report(sync_cost), ""])
        if "mentions" in chosen:
            backend, scaled = mention_scale.measure(
                int(sizes["mention_repos"]), None, 2, workdir, options.database_url
            )
            _emit([*mention_scale.report(backend, scaled), ""])
        if "installations" in chosen:
            count, per, every = sizes["installations"]
            setups = installations.measure(count, per, every, 2, workdir, options.database_url)
            _emit([*installations.report(setups), ""])
        if "bounds" in chosen:
            _emit([*bounds.report(bounds.measure(workdir)), ""])
        if "findings" in chosen:
            measured_findings = findings.measure(sizes["findings_cases"], workdir)
            _emit([*findings.report(measured_findings), ""])
        if "lifecycle" in chosen:
            measured_life = lifecycle_tokens.measure(sizes["lifecycle_prs"], workdir)
            _emit([*lifecycle_tokens.report(*measured_life), ""])
        if "fastpath" in chosen:
            _emit([*fastpath.report(fastpath.measure(int(sizes["fastpath_runs"]), workdir)), ""])
        if "startup" in chosen:
            _emit([*startup.report(startup.measure(int(sizes["startup_runs"]), workdir)), ""])
        if "triage" in chosen:
            _emit([*triage_agreement.report(triage_agreement.measure()), ""])
    _emit([f"done in {time.perf_counter() - began:.1f} s"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
