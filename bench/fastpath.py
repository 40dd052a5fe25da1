"""Whole-process time of ``kdev review-pr`` on the carry-forward path (issue 19).

ghsim (in process, on loopback), a real git checkout and the stub reviewer, as in
tests/wrapper/test_fast_path.py: one review, then the base is merged into the head (same diff),
so every later ``kdev review-pr`` for that head carries the verdict forward (or finds it
already carried) without running the reviewer. Timed with ``time.perf_counter`` around
the whole subprocess, alternating, N times each:

- **lazy**: the real ``kdev`` console script (SQLAlchemy and alembic are not imported;
  nor pydantic-settings, nor the modules of the other verbs);
- **previous**: the same entry point after importing what it loaded before the third
  round (D50's import set): ``engine.config`` (pydantic-settings and asyncio), the
  engine's metrics (prometheus_client), every verb's module, and every verb's click
  command built, as the eager command line did;
- **before**: ``previous`` plus what the command line loaded eagerly before the second
  round of lazy imports (httpx's own CLI, the roster and markdown-it,
  kdev explain's modules, the sweep's config, rich tables): D35's import set, without
  SQLAlchemy;
- **eager**: ``before`` plus ``import sqlalchemy, alembic, alembic.command``, which is
  what every invocation paid before the first lazy imports (the original baseline);
- **python**: ``python -c pass``, the interpreter's own floor.

- **libraries**: ``python -c`` importing only the libraries the carry-forward needs
  (pydantic, PyYAML, typer, httpx) and building one ``httpx.Client`` (which imports
  httpcore and builds the TLS context from certifi's bundle): the floor
  that kdev's own code and its git and GitHub calls come on top of.

Then the ledger's size (D64), three ways alternating: the carry-forward on the bench's
ledger (**small**), on a copy of it with 10,000 PR directories of another repository added
(**big**), and **big, whole sweep**: the same after removing the sweep stamp before each
run, so every run walks the whole ledger, as every run did before D64. ``small`` is the
baseline for both.

Printed: the medians of wall time and of CPU time (the process and its git children,
steadier than wall time on a shared machine), lazy/previous, lazy/before and
lazy/eager, the share above ``python -c pass``, big/small,
and the target (lazy under 0.3 s).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
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
RUN_APP = "sys.argv[0] = 'kdev'; app()"
# The entry module first (it keeps httpx._main out, as it did then), then what the
# command line of D50 imported and built when it started.
PREVIOUS_IMPORTS = (
    "from wrapper.cli.app import app; import engine.config, engine.run.metrics, "
    "wrapper.cli.review, wrapper.cli.verdicts, wrapper.cli.sweep, wrapper.cli.authorloop, "
    "wrapper.cli.loop, wrapper.cli.explain, wrapper.cli.config, typer.main; "
    "list(typer.main.get_command(app).commands.values()); "
)
PREVIOUS = "import sys; " + PREVIOUS_IMPORTS + RUN_APP
BEFORE = "import sys; " + BEFORE_IMPORTS + PREVIOUS_IMPORTS + RUN_APP
EAGER = (
    "import sys; import sqlalchemy, sqlalchemy.orm, alembic, alembic.command; "
    + BEFORE_IMPORTS
    + PREVIOUS_IMPORTS
    + RUN_APP
)
LIBRARIES = (
    "import sys; sys.modules['httpx._main'] = None; import pydantic, yaml, typer, httpx; "
    "from pydantic import BaseModel; httpx.Client()"
)
WAYS = (
    "lazy",
    "previous",
    "before",
    "eager",
    "python",
    "libraries",
    "small",
    "big",
    "big_whole",
)
OTHER_PRS = 10_000


@dataclass
class FastPath:
    runs: int
    outcomes: set[str] = field(default_factory=set)
    # way -> wall seconds, and CPU seconds (user + system, git's children included).
    times: dict[str, list[float]] = field(default_factory=lambda: {way: [] for way in WAYS})
    cpu: dict[str, list[float]] = field(default_factory=lambda: {way: [] for way in WAYS})


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, str]:
    cpu = _children_cpu()
    began = time.perf_counter()
    result = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    spent = time.perf_counter() - began
    if result.returncode != 0:
        raise RuntimeError(f"kdev failed: {result.stderr.strip()[-300:]}")
    lines = result.stdout.strip().splitlines()
    outcome = str(json.loads(lines[-1])["outcome"]) if lines else ""
    return spent, _children_cpu() - cpu, outcome


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
            "previous": [sys.executable, "-c", PREVIOUS, *argv],
            "before": [sys.executable, "-c", BEFORE, *argv],
            "eager": [sys.executable, "-c", EAGER, *argv],
            "python": [sys.executable, "-c", "pass"],
            "libraries": [sys.executable, "-c", LIBRARIES],
        }
        _alternate(report, {name: (command, env) for name, command in ways.items()}, checkout, runs)
        _alternate(report, _ledger_ways(argv, env), checkout, runs)
    return report


def _alternate(
    report: FastPath,
    ways: dict[str, tuple[list[str], dict[str, str]]],
    checkout: Path,
    runs: int,
) -> None:
    for _ in range(runs):
        for name, (command, env) in ways.items():
            if name == "big_whole":  # every run walks the whole ledger, as before D64
                (Path(env["KDEV_REVIEWS_DIR"]) / ".leftovers-swept").unlink(missing_ok=True)
            spent, cpu, outcome = _timed(command, checkout, env)
            report.times[name].append(spent)
            report.cpu[name].append(cpu)
            if name not in ("python", "libraries"):
                report.outcomes.add(outcome)


def _ledger_ways(
    argv: list[str], env: dict[str, str]
) -> dict[str, tuple[list[str], dict[str, str]]]:
    """The carry-forward on the bench's ledger (``small``) and on a copy of it with
    OTHER_PRS PR directories of another repository added (``big``, ``big_whole``)."""
    small = Path(env["KDEV_REVIEWS_DIR"])
    big = small.with_name("reviews-big")
    shutil.copytree(small, big, copy_function=shutil.copyfile)
    [own] = big.glob("*/pr-*")
    for number in range(1, OTHER_PRS + 1):
        shutil.copytree(own, big / "bench__others" / f"pr-{number}", copy_function=shutil.copyfile)
    os.sync()
    kdev = [str(BIN / "kdev"), *argv]
    big_env = {**env, "KDEV_REVIEWS_DIR": str(big)}
    return {"small": (kdev, env), "big": (kdev, big_env), "big_whole": (kdev, big_env)}


def report(result: FastPath) -> list[str]:
    wall = {name: statistics.median(values) for name, values in result.times.items()}
    cpu = {name: statistics.median(values) for name, values in result.cpu.items()}

    def row(label: str, way: str) -> str:
        line = f"  {label:30s}{wall[way] * 1000:7.1f} ms  cpu {cpu[way] * 1000:6.1f} ms"
        if way in ("lazy", "python"):
            return line
        return (
            f"{line}   lazy/{way} = {wall['lazy'] / wall[way]:.2f} "
            f"(cpu {cpu['lazy'] / cpu[way]:.2f}), above the floor "
            f"{(wall['lazy'] - wall['python']) / (wall[way] - wall['python']):.2f}"
        )

    verdict = "met" if wall["lazy"] < 0.3 else "NOT met"
    return [
        f"fastpath: kdev review-pr carry-forward, whole process, median of {result.runs} "
        f"(outcomes: {', '.join(sorted(result.outcomes))}); wall time, and CPU time of the "
        "process and its git children",
        row("lazy (the kdev script)", "lazy"),
        row("previous (D50's import set)", "previous"),
        row("before (D35's import set)", "before"),
        row("eager (sqlalchemy+alembic)", "eager"),
        row("python -c pass (floor)", "python"),
        f"  {'libraries (imports, a client)':30s}{wall['libraries'] * 1000:7.1f} ms  cpu "
        f"{cpu['libraries'] * 1000:6.1f} ms   kdev's own code, git and GitHub: "
        f"{(wall['lazy'] - wall['libraries']) * 1000:.1f} ms",
        f"  target < 300 ms: {verdict}",
        f"  with {OTHER_PRS:,} other PRs in the ledger (D64), alternating with the bench's:",
        _ledger_row("small", wall, cpu),
        _ledger_row("big", wall, cpu),
        _ledger_row("big_whole", wall, cpu),
    ]


def _ledger_row(way: str, wall: dict[str, float], cpu: dict[str, float]) -> str:
    label = {"small": "small (the bench's ledger)", "big": "big"}.get(
        way, "big, whole sweep every run"
    )
    line = f"  {label:30s}{wall[way] * 1000:7.1f} ms  cpu {cpu[way] * 1000:6.1f} ms"
    if way == "small":
        return line
    ratio, cpu_ratio = wall[way] / wall["small"], cpu[way] / cpu["small"]
    return f"{line}   {way}/small = {ratio:.2f} (cpu {cpu_ratio:.2f})"
