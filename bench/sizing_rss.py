"""Peak RSS of a whole ``kdev review-pr`` on a 50 MB diff against a 1 MB one (issue 28, D94).

``python -m bench.sizing_chunks --rss [--sizes BYTES,...]``. ghsim (in this process, on
loopback) serves one repository; for each size a PR adds that much text
(:func:`bench.sizing_chunks.data_text`) beside a small edit, and the real ``kdev
review-pr --json`` runs on it once, in a fresh interpreter, with the stub reviewer on
model ``claude-sonnet-5-5`` (the claude family's 100,000-token default limit, D89) and
``size_policy.max_chunks`` at its default of 8. The child reports its own ``VmHWM``
(peak resident set, from ``/proc/self/status``) at exit: an exec'd process starts a new
address space, so the peak is kdev's alone (git's own processes are not in it; the
reviewer legs neither). Printed per size: the outcome (``reviewed`` in N chunk legs, or
``deferred_budget`` with its ``diff_too_large`` notice), the legs the ledger holds, the
peak RSS and its ratio to the first (smallest) size's, and whether any leg's prompt was
over the limit (the stub writes each prompt's size to a log: never, the goal).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from ghsim import GitHubSim
from wrapper.review.sizing import limit_for

REPO = "bench/sizing"
MODEL = "claude-sonnet-5-5"
RUNNER = (
    "import atexit, sys\n"
    "def _peak():\n"
    "    for line in open('/proc/self/status'):\n"
    "        if line.startswith('VmHWM:'):\n"
    "            sys.stderr.write('KDEV_BENCH_VMHWM ' + line.split()[1] + '\\n')\n"
    "atexit.register(_peak)\n"
    "from wrapper.cli.entry import main\n"
    "sys.argv[0] = 'kdev'\n"
    "main()\n"
)
# The stub reviewer's prompt, sized into a log before the stub answers.
SIZER = (
    "import sys, os\n"
    "data = sys.stdin.read()\n"
    "from wrapper.review.sizing import estimate_tokens\n"
    "with open(os.environ['KDEV_BENCH_PROMPTS'], 'a') as log:\n"
    "    log.write(str(estimate_tokens(data)) + '\\n')\n"
    "print('Looks fine.')\n"
    "print('VERDICT: APPROVE')\n"
)


@dataclass
class RssRun:
    size: int
    outcome: str
    detail: str
    legs: int
    notice: bool
    peak_kib: int
    prompts: list[int]
    seconds: float


def _config(root: Path) -> Path:
    path = root / "kdev.yaml"
    reviewer = {
        "backend": "command",
        "argv": [sys.executable, "-c", SIZER],
        "model": MODEL,
        "timeout_seconds": 120,
    }
    path.write_text(
        json.dumps(
            {
                "reviewer": reviewer,
                "reviewer_env": ["KDEV_BENCH_PROMPTS", "PYTHONPATH"],
                "sandbox": "off",
                "budgets": {"daily_legs_per_repo": 500, "daily_rounds_per_pr": 50},
                "notify": [{"type": "file", "path": str(root / "notes.jsonl")}],
            }
        )
    )
    return path


def _one(sim: GitHubSim, root: Path, token: str, size: int, text: str) -> RssRun:
    from bench.sizing_chunks import small_edit

    pr = sim.open_pr(REPO, f"size-{size}", {"data.txt": text, "small.py": small_edit()})
    log = root / f"prompts-{size}.log"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(root),
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
        "GITHUB_API_URL": sim.url,
        "GITHUB_TOKEN": token,
        "KDEV_CONFIG": str(_config(root)),
        "KDEV_REVIEWS_DIR": str(root / "reviews"),
        "KDEV_BENCH_PROMPTS": str(log),
    }
    argv = ["review-pr", "--repo", REPO, "--pr", str(pr.number), "--head-sha", pr.head_sha]
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", RUNNER, *argv, "--json"],
        cwd=root / "checkout",
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - began
    peak = [ln for ln in done.stderr.splitlines() if ln.startswith("KDEV_BENCH_VMHWM ")]
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not peak or not lines:
        raise RuntimeError(f"kdev review-pr failed ({done.returncode}): {done.stderr[-400:]}")
    answer = json.loads(lines[-1])
    prompts = [int(x) for x in log.read_text().split()] if log.exists() else []
    notes = root / "notes.jsonl"
    last = json.loads(notes.read_text().splitlines()[-1]) if notes.exists() else {}
    notice = "WHY: " in str(last.get("body", "")) or answer.get("outcome") == "reviewed"
    return RssRun(
        size,
        str(answer.get("outcome")),
        str(answer.get("detail", "")),
        len(prompts),
        notice,
        int(peak[-1].split()[1]),
        prompts,
        seconds,
    )


def measure(sizes: list[int], workdir: Path) -> list[RssRun]:
    from bench.sizing_chunks import data_text

    token = f"tok-{uuid.uuid4().hex}"
    runs = []
    with GitHubSim(workdir / "github") as sim:
        sim.add_token(token, ("review-bot", 100_000))
        sim.create_repo(REPO, files={"small.py": "".join(f"x{n} = {n}\n" for n in range(200))})
        subprocess.run(
            ["git", "clone", "-q", str(sim.repo_path(REPO)), str(workdir / "checkout")],
            check=True,
        )
        for size in sizes:
            text = data_text(size)
            runs.append(_one(sim, workdir, token, size, text))
            del text
    return runs


def report(runs: list[RssRun]) -> list[str]:
    limit = limit_for(MODEL).tokens
    lines = [
        f"peak RSS of kdev review-pr by diff size (model {MODEL}: {limit:,}-token limit, "
        "max_chunks 8; VmHWM of the kdev process)",
        f"  {'diff':>9} {'outcome':<16} {'legs':>4} {'peak MiB':>9} {'x':>6} "
        f"{'largest prompt':>14} {'seconds':>8}",
    ]
    first = runs[0].peak_kib if runs else 1
    for run in runs:
        largest = max(run.prompts, default=0)
        lines.append(
            f"  {run.size / 1e6:>7.1f}MB {run.outcome:<16} {run.legs:>4} "
            f"{run.peak_kib / 1024:>9.1f} {run.peak_kib / first:>6.2f} {largest:>14,} "
            f"{run.seconds:>8.1f}"
        )
        if run.outcome != "reviewed":
            said = "a notice with its WHY line" if run.notice else "NO notice"
            lines.append(f"      {run.detail[:100]}; {said}")
    over = [p for run in runs for p in run.prompts if p > limit]
    lines.append(f"  prompts over the {limit:,}-token limit: {len(over)}  goal 0")
    if len(runs) > 1:
        ratio = runs[-1].peak_kib / first
        met = "met" if ratio <= 2 else "not met"
        lines.append(f"  peak RSS largest/smallest: {ratio:.2f}x  goal <= 2x: {met}")
    return lines
