"""Whole-process time of ``kdev review-pr`` on the carry-forward path (issue 19).

ghsim (in process, on loopback), a real git checkout and the stub reviewer, as in
tests/wrapper/test_fast_path.py: one review, then the base is merged into the head (same diff),
so every later ``kdev review-pr`` for that head carries the verdict forward (or finds it
already carried) without running the reviewer. Timed with ``time.perf_counter`` around
the whole subprocess, alternating, N times each:

- **lazy**: the real ``kdev`` console script (SQLAlchemy and alembic are not imported);
- **before**: the same entry point after importing what the command line loaded eagerly
  before the second round of lazy imports (httpx's own CLI, the roster and markdown-it,
  kdev explain's modules, the sweep's config, rich tables): the import set of the
  previous release, without SQLAlchemy;
- **eager**: ``before`` plus ``import sqlalchemy, alembic, alembic.command``, which is
  what every invocation paid before the first lazy imports (the original baseline);
- **python**: ``python -c pass``, the interpreter's own floor.

Printed: the medians, lazy/before and lazy/eager, the share above ``python -c pass``,
and the target (lazy under 0.3 s).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from demo.run_demo import setup_pipeline
from ghsim import GitHubSim

REPO = "bench/fastpath"
BIN = Path(sys.executable).parent
BEFORE_IMPORTS = (
    "import httpx._main, engine.config, engine.tables, engine.api, wrapper.explain, "
    "wrapper.review.roster_review, wrapper.sweep.config; "
)
RUN_APP = "from wrapper.cli.app import app; sys.argv[0] = 'kdev'; app()"
BEFORE = "import sys; " + BEFORE_IMPORTS + RUN_APP
EAGER = (
    "import sys; import sqlalchemy, sqlalchemy.orm, alembic, alembic.command; "
    + BEFORE_IMPORTS
    + RUN_APP
)


@dataclass
class FastPath:
    runs: int
    outcomes: set[str] = field(default_factory=set)
    times: dict[str, list[float]] = field(
        default_factory=lambda: {"lazy": [], "before": [], "eager": [], "python": []}
    )


def _timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, str]:
    began = time.perf_counter()
    result = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    spent = time.perf_counter() - began
    if result.returncode != 0:
        raise RuntimeError(f"kdev failed: {result.stderr.strip()[-300:]}")
    lines = result.stdout.strip().splitlines()
    return spent, str(json.loads(lines[-1])["outcome"]) if lines else ""


def measure(runs: int, workdir: Path) -> FastPath:
    root = workdir / "fastpath"
    root.mkdir()
    token = f"tok-{uuid.uuid4().hex}"
    report = FastPath(runs)
    with GitHubSim(root / "github") as sim:
        sim.add_token(token, ("review-bot", 100_000))
        sim.create_repo(REPO, files={"app.py": "print('hi')\n"})
        checkout, env = setup_pipeline(sim, REPO, root, token)
        pr = sim.open_pr(REPO, "feature", {"util.py": "def f():\n    return 1\n"}).number

        def args() -> list[str]:
            head = sim.pull(REPO, pr).head_sha
            return ["review-pr", "--repo", REPO, "--pr", str(pr), "--head-sha", head, "--json"]

        _timed([str(BIN / "kdev"), *args()], checkout, env)  # the first review
        sim.advance(2)
        sim.commit_to_base(REPO, {"README.md": "docs\n"})
        sim.merge_base_into_head(REPO, pr)
        argv = args()
        ways = {
            "lazy": [str(BIN / "kdev"), *argv],
            "before": [sys.executable, "-c", BEFORE, *argv],
            "eager": [sys.executable, "-c", EAGER, *argv],
            "python": [sys.executable, "-c", "pass"],
        }
        for _ in range(runs):
            for name, command in ways.items():
                spent, outcome = _timed(command, checkout, env)
                report.times[name].append(spent)
                if name != "python":
                    report.outcomes.add(outcome)
    return report


def report(result: FastPath) -> list[str]:
    median = {name: statistics.median(values) for name, values in result.times.items()}
    lazy, before, eager = median["lazy"], median["before"], median["eager"]
    floor = median["python"]
    verdict = "met" if lazy < 0.3 else "NOT met"
    return [
        f"fastpath: kdev review-pr carry-forward, whole process, median of {result.runs} "
        f"(outcomes: {', '.join(sorted(result.outcomes))})",
        f"  lazy (the kdev script)        {lazy * 1000:7.1f} ms",
        f"  before (previous import set)  {before * 1000:7.1f} ms   lazy/before = "
        f"{lazy / before:.2f}, above the floor {(lazy - floor) / (before - floor):.2f}",
        f"  eager (sqlalchemy+alembic)    {eager * 1000:7.1f} ms   lazy/eager = {lazy / eager:.2f}",
        f"  python -c pass (floor)        {floor * 1000:7.1f} ms",
        f"  target < 300 ms: {verdict}",
    ]
