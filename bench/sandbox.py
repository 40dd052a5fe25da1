"""The cost of the reviewer sandbox: one trivial command reviewer run plain (``off``),
in the fallback and in bubblewrap, interleaved in the same run; the figures are ratios
against ``off``, never asserted."""

from __future__ import annotations

import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from wrapper.config import CommandReviewer
from wrapper.review.reviewer import run_reviewer_text
from wrapper.review.sandbox import SANDBOX_UID, Sandbox, probe_bwrap

ENVIRON = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/nonexistent"}
# The cheapest reviewer there is, so the figure is the sandbox's own overhead.
REVIEWER = CommandReviewer(argv=["/bin/sh", "-c", "cat >/dev/null; echo 'VERDICT: APPROVE'"])


@dataclass
class SandboxResult:
    runs: int
    seconds: dict[str, list[float]]
    missing: dict[str, str]


def _sandboxes() -> tuple[dict[str, Sandbox], dict[str, str]]:
    chosen = {"off": Sandbox("off")}
    missing: dict[str, str] = {}
    problem = probe_bwrap("bwrap")
    if problem is None:
        chosen["bwrap"] = Sandbox("bwrap", bwrap="bwrap")
    else:
        missing["bwrap"] = problem
    chosen["fallback"] = Sandbox("fallback", uid=SANDBOX_UID if os.geteuid() == 0 else None)
    return chosen, missing


def measure(runs: int, workdir: Path) -> SandboxResult:
    """``runs`` reviews per kind, the kinds interleaved so drift hits each alike."""
    tree = workdir / "sandbox-tree"
    tree.mkdir(exist_ok=True)
    tree.chmod(0o755)
    workdir.chmod(0o711)
    sandboxes, missing = _sandboxes()
    seconds: dict[str, list[float]] = {name: [] for name in sandboxes}
    for _ in range(runs):
        for name, sandbox in sandboxes.items():
            began = time.perf_counter()
            run_reviewer_text(REVIEWER, "prompt", tree, ENVIRON, sandbox=sandbox)
            seconds[name].append(time.perf_counter() - began)
    return SandboxResult(runs, seconds, missing)


def report(result: SandboxResult) -> list[str]:
    """The printed lines: median milliseconds per run and the ratio to ``off``."""
    base = statistics.median(result.seconds["off"])
    lines = [f"reviewer sandbox ({result.runs} runs each of a trivial sh reviewer)"]
    for name, values in result.seconds.items():
        median = statistics.median(values)
        lines.append(f"  {name:<10}{median * 1000:8.2f} ms median  x{median / base:5.2f} of off")
    lines += [f"  {name:<10}not measured: {why}" for name, why in result.missing.items()]
    return lines


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory(prefix="li-bench-") as scratch:
        count = int(sys.argv[1]) if len(sys.argv) > 1 else 30
        print("\n".join(report(measure(count, Path(scratch)))))
