"""What every ``li`` command pays before it does anything: start-up CPU (issue 25).

Each case is a whole ``li`` process (the console script), timed by the CPU time (user +
system) the child used, read from ``RUSAGE_CHILDREN`` around it; the cases alternate in
one loop, N rounds, and the median of each is compared with ``python -c pass`` run by
the same interpreter in the same loop (the floor no Python command goes under):

- **version**: ``li --version``;
- **help**: ``li --help``;
- **schedule help**: ``li schedule --help`` (every verb's one-line help);
- **completion**: one bash TAB, ``COMP_WORDS="li sch" COMP_CWORD=1`` with
  ``_LI_COMPLETE=complete_bash`` (the protocol of the script ``li --show-completion bash``
  prints);
- **list**: ``li schedule list`` on an empty SQLite database (migrated by an untimed
  first call, as the first command on a machine does): the fast path of
  ``engine.cli.quicklist``, no SQLAlchemy;
- **db current**: ``li db current`` on the same database, a verb on the store's path
  (SQLAlchemy, pydantic-settings: what every other verb pays, and ``li schedule list``
  on PostgreSQL); no target, shown for what is left.

The targets: version, help and completion within 4x of the floor, list within 8x.
``python -m bench.startup --li PATH`` times another install's ``li`` (its own
interpreter gives the floor), e.g. a worktree of an older commit, for a before/after.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

CASES = ("python", "version", "help", "schedule_help", "completion", "list", "db_current")
LABELS = {
    "python": "python -c pass (floor)",
    "version": "li --version",
    "help": "li --help",
    "schedule_help": "li schedule --help",
    "completion": "TAB: li sch",
    "list": "li schedule list (empty)",
    "db_current": "li db current",
}
TARGETS = {"version": 4.0, "help": 4.0, "completion": 4.0, "list": 8.0}


@dataclass
class Startup:
    runs: int
    li: Path
    cpu: dict[str, list[float]] = field(default_factory=lambda: {case: [] for case in CASES})


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _cpu_of(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    before = _children_cpu()
    result = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    spent = _children_cpu() - before
    if result.returncode != 0:
        raise RuntimeError(f"{argv[-1]} failed ({result.returncode}): {result.stderr[-300:]}")
    return spent


def cases(li: Path, workdir: Path) -> dict[str, tuple[list[str], dict[str, str]]]:
    """Case -> (argv, environment), on a SQLite database in ``workdir``."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("LI_", "GITHUB_", "_LI_", "COMP_"))
    }
    env["LI_DATABASE_URL"] = f"sqlite:///{workdir / 'startup.db'}"
    completion = {**env, "_LI_COMPLETE": "complete_bash", "COMP_WORDS": "li sch", "COMP_CWORD": "1"}
    return {
        "python": ([str(li.parent / "python"), "-c", "pass"], env),
        "version": ([str(li), "--version"], env),
        "help": ([str(li), "--help"], env),
        "schedule_help": ([str(li), "schedule", "--help"], env),
        "completion": ([str(li)], completion),
        "list": ([str(li), "schedule", "list"], env),
        "db_current": ([str(li), "db", "current"], env),
    }


def measure(runs: int, workdir: Path, li: Path | None = None) -> Startup:
    script = li or Path(sys.executable).parent / "li"
    root = workdir / "startup"
    root.mkdir()
    ways = cases(script, root)
    report = Startup(runs, script)
    for argv, env in ways.values():  # warm-up: the database migrated, files in the page cache
        _cpu_of(argv, env, root)
    for _ in range(runs):
        for name, (argv, env) in ways.items():
            report.cpu[name].append(_cpu_of(argv, env, root))
    return report


def report(result: Startup) -> list[str]:
    cpu = {name: statistics.median(values) for name, values in result.cpu.items()}
    floor = cpu["python"]
    lines = [
        f"startup: CPU time of one whole li process ({result.li}), median of {result.runs}, "
        "alternating; ratio to python -c pass",
    ]
    for name in CASES:
        line = f"  {LABELS[name]:28s}{cpu[name] * 1000:7.1f} ms"
        if name != "python":
            ratio = cpu[name] / floor
            line += f"   {ratio:5.1f}x"
            if name in TARGETS:
                verdict = "met" if ratio <= TARGETS[name] else "NOT met"
                line += f"   target <= {TARGETS[name]:g}x: {verdict}"
        lines.append(line)
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.startup", description=__doc__)
    parser.add_argument("--li", type=Path, help="the li console script to time")
    parser.add_argument("--runs", type=int, default=15)
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="li-bench-") as scratch:
        print("\n".join(report(measure(options.runs, Path(scratch), options.li))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
