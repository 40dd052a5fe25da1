"""The chunk planner's memory on large diffs (issue 28, D89): ``python -m bench.sizing_chunks``.

For each size (1 MB, 5 MB and 50 MB of new text; ``--sizes`` to change), a real
``git diff`` from a temporary repository: one large new file (code-like ASCII lines,
a few accented ones) and a small edited one. Measured with ``tracemalloc`` (Python
allocations; the diff string itself is allocated before tracing starts):

- **prompt** (the baseline, as before issue 28): the whole diff joined into one prompt
  string, which is what a single leg is handed;
- **plan**: ``plan_chunks`` at a 64,000-token budget (the gpt-4o default);
- **legs**: the plan, then each chunk rendered in turn and dropped, as the legs would.

Printed: each peak in MB, its ratio to the diff's size, the chunk count and seconds.

``--rss`` measures whole ``kdev review-pr`` processes instead (peak RSS of a 50 MB diff
against a 1 MB one in the same run, and how each round ends): :mod:`bench.sizing_rss`.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from wrapper.review.chunking import ChunkPlan, plan_chunks

BUDGET = 64_000
ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
}


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, env=ENV, capture_output=True, check=True)
    return done.stdout.decode("utf-8")


def data_text(size: int) -> str:
    """About ``size`` bytes of code-like new text, a few lines accented."""
    parts, written, number = [], 0, 0
    while written < size:
        accent = " café" if number % 97 == 0 else ""
        line = f"    value_{number} = compute(item[{number}], flag=True){accent}\n"
        parts.append(line)
        written += len(line)
        number += 1
    return "".join(parts)


def small_edit() -> str:
    """The small file's edited side (its base is ``x{n} = {n}`` for n < 200)."""
    return "".join(f"x{n} = {n * 2}\n" for n in range(200))


def make_diff(root: Path, size: int) -> str:
    """A real diff adding about ``size`` bytes of text, plus a small edited file."""
    _git(root, "init", "-q", "-b", "main")
    (root / "small.py").write_text("".join(f"x{n} = {n}\n" for n in range(200)))
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "base")
    (root / "data.txt").write_text(data_text(size), encoding="utf-8")
    (root / "small.py").write_text(small_edit())
    _git(root, "add", "-A")
    return _git(root, "diff", "--cached")


def _peak(work: Callable[[], object]) -> tuple[int, float, object]:
    tracemalloc.start()
    start = time.perf_counter()
    try:
        result = work()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak, time.perf_counter() - start, result


def _legs(diff: str) -> int:
    plan = plan_chunks(diff, BUDGET)
    assert isinstance(plan, ChunkPlan), plan
    longest = 0
    for chunk in plan.chunks:
        text = chunk.render(diff)
        longest = max(longest, len(text))
        del text
    return len(plan.chunks)


def run(sizes: list[int]) -> None:
    print(f"budget {BUDGET} tokens; peaks are tracemalloc's, ratios to the diff's size")
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="kdev-bench-sizing-") as where:
            diff = make_diff(Path(where), size)
        mb = len(diff) / 1e6
        prompt, t_prompt, _ = _peak(lambda: "Review this PR.\n\n" + diff)  # noqa: B023
        plan, t_plan, _ = _peak(lambda: plan_chunks(diff, BUDGET))  # noqa: B023
        legs, t_legs, count = _peak(lambda: _legs(diff))  # noqa: B023
        print(
            f"diff {mb:7.1f} MB | prompt {prompt / 1e6:7.1f} MB ({prompt / len(diff):.2f}x)"
            f" {t_prompt:.2f}s | plan {plan / 1e6:6.2f} MB ({plan / len(diff):.3f}x)"
            f" {t_plan:.2f}s | legs {legs / 1e6:6.2f} MB ({legs / len(diff):.3f}x)"
            f" {t_legs:.2f}s | {count} chunks"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=None, help="bytes, by commas")
    parser.add_argument(
        "--rss",
        action="store_true",
        help="peak RSS of whole kdev review-pr runs instead (bench/sizing_rss.py; 1 MB, 50 MB)",
    )
    args = parser.parse_args()
    default = "1000000,50000000" if args.rss else "1000000,5000000,50000000"
    sizes = [int(value) for value in (args.sizes or default).split(",")]
    if args.rss:
        from bench import sizing_rss

        with tempfile.TemporaryDirectory(prefix="kdev-bench-rss-") as where:
            print("\n".join(sizing_rss.report(sizing_rss.measure(sizes, Path(where)))))
        return
    run(sizes)


if __name__ == "__main__":
    main()
