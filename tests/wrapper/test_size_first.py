"""D111: a round is planned on the diff's raw bytes, the same plan as on its text, and
a round over ``max_chunks`` is deferred without the diff ever being decoded or copied."""

from __future__ import annotations

import random
import re
import subprocess
import tracemalloc
from pathlib import Path

import pytest

from tests.wrapper.reviewbench import REPO, Bench
from wrapper.errors import Outcome
from wrapper.review.chunking import ChunkPlan, plan_chunks
from wrapper.review.sizing import estimate_span

WORDS = ["plain", "café", "漢字", "\t  ", "x" * 60, "", "# é\u2028"]


def _git(root: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True).stdout


def _diff(root: Path) -> bytes:
    """A real ``git diff``: edited and added files, non-ASCII text, invalid UTF-8."""
    rng = random.Random(28)
    _git(root, "init", "-q")
    _git(root, "config", "user.email", "t@example.com")
    _git(root, "config", "user.name", "t")
    for i in range(4):
        lines = "".join(f"{rng.choice(WORDS)} {n}\n" for n in range(300))
        (root / f"f{i}.txt").write_text(lines)
    (root / "bad.txt").write_bytes(b"ok\n\xc3(\n\xe2\x82\nend\xf0\x9f\x98\n" * 40)
    _git(root, "add", ".")
    _git(root, "commit", "-qm", "base")
    for i in range(4):
        lines = (root / f"f{i}.txt").read_text().splitlines(keepends=True)
        for _ in range(60):
            lines[rng.randrange(len(lines))] = rng.choice(WORDS) * rng.randint(1, 30) + "\n"
        (root / f"f{i}.txt").write_text("".join(lines))
    with (root / "bad.txt").open("ab") as bad:
        bad.write(b"\xc3\n\xff tail\xe2\x82" * 30)
    (root / "new.txt").write_text("".join(f"line {n} é\n" for n in range(500)))
    _git(root, "add", ".")
    _git(root, "commit", "-qm", "edit")
    return _git(root, "diff", "HEAD~1", "HEAD")


def test_the_bytes_plan_is_the_text_plan_chunk_for_chunk(tmp_path: Path) -> None:
    raw = _diff(tmp_path)
    text = raw.decode("utf-8", "replace")
    assert "\ufffd" in text and "漢字" in text  # both kinds of bytes are in it
    assert estimate_span(raw) == estimate_span(text)
    planned = 0
    for budget in (40, 120, 400, 1000, 3000, 10**6):
        on_text, on_bytes = plan_chunks(text, budget), plan_chunks(raw, budget)
        if not isinstance(on_text, ChunkPlan):
            assert on_bytes == on_text  # the same refusal, reason and line
            continue
        assert isinstance(on_bytes, ChunkPlan)
        assert on_bytes.total_tokens == on_text.total_tokens
        assert len(on_bytes.chunks) == len(on_text.chunks)
        for a, b in zip(on_text.chunks, on_bytes.chunks, strict=True):
            assert (a.tokens, a.paths, a.other_paths) == (b.tokens, b.paths, b.other_paths)
            assert b.render(raw) == a.render(text)
        planned += len(on_text.chunks) > 1
    assert planned >= 2  # some budgets did cut the diff


def test_a_deferred_round_never_holds_a_second_copy_of_its_diff(
    bench: Bench, tmp_path: Path
) -> None:
    size = 6_000_000
    line = "    value = compute(item, flag=True)\n"
    config = bench.config(size_policy={"max_prompt_tokens": 20_000, "max_chunks": 2})
    # A first deferral imports what a deferral needs: the traced one measures the diff.
    small = bench.sim.open_pr(REPO, "small", {"data.txt": line * 6000})
    assert bench.review(small.number, config=config).outcome is Outcome.DEFERRED_BUDGET
    pr = bench.sim.open_pr(REPO, "huge", {"data.txt": line * (size // len(line))})
    tracemalloc.start()
    try:
        report = bench.review(pr.number, config=config)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert report.outcome is Outcome.DEFERRED_BUDGET
    found = re.fullmatch(r"diff_too_large: (\d+)/2", report.detail)
    assert found is not None and int(found.group(1)) > 100
    assert bench.legs() == 0
    # git's bytes, once; no decoded text, no joined pipe output, no stripped copy, no
    # prompt (each of those was another diff-sized block before D111).
    assert peak < 1.5 * size, f"peak {peak:,} bytes for a {size:,}-byte diff"


@pytest.mark.parametrize("budget", [10**6])
def test_a_round_that_fits_still_reads_the_decoded_diff(budget: int, tmp_path: Path) -> None:
    raw = _diff(tmp_path)
    plan = plan_chunks(raw, budget)
    assert isinstance(plan, ChunkPlan) and len(plan.chunks) == 1
    assert plan.chunks[0].render(raw) == raw.decode("utf-8", "replace")
