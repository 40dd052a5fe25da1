"""Issue 28's acceptance for exclusions, end to end over ghsim with real git (D87, D94):
a lockfile costs no prompt tokens, and ``.kdev/exclusions.yaml`` counts from the base
branch only, never from the PR's head."""

from __future__ import annotations

import shlex
import sys
import tracemalloc
from pathlib import Path

from bench.sizing_chunks import _git, make_diff
from tests.wrapper.reviewbench import REPO, Bench, open_bench
from wrapper.config import KdevConfig
from wrapper.errors import Outcome
from wrapper.git import Git
from wrapper.review.exclusion_diff import patch_id_diff, reviewed_diff
from wrapper.review.exclusions import Decision, format_exclusions
from wrapper.review.patch_id import compute_patch_id
from wrapper.review.prompt import EXCLUDED_NOTE, fence
from wrapper.review.sizing import estimate_tokens

EXCLUDE_LIB = "exclude: ['lib.py']\n"
# 120 kB of lockfile: about 48,000 estimated tokens if the reviewer read it.
LOCK_TEXT = "".join(
    f'"pkg-{n}": {{"version": "1.0.{n}", "integrity": "sha512-x"}},\n' for n in range(2000)
)


def capturing(bench: Bench) -> KdevConfig:
    """The stub reviewer, its prompt saved to ``prompt.txt`` first."""
    saved = bench.root / "prompt.txt"
    stub = f"{shlex.quote(sys.executable)} -P -m wrapper.stub_reviewer {saved}"
    reviewer = {
        "backend": "command",
        "argv": ["sh", "-c", f"cat > {saved}; {stub}"],
        "model": "stub",
        "timeout_seconds": 30,
    }
    return bench.config(reviewer=reviewer)


def prompt(bench: Bench) -> str:
    return (bench.root / "prompt.txt").read_text()


def test_a_lockfile_costs_no_prompt_tokens_and_is_listed(bench: Bench) -> None:
    config = capturing(bench)
    plain = bench.sim.open_pr(REPO, "plain", {"app.py": "print('hi')\nx = 1\n"}).number
    assert bench.review(plain, config=config).outcome is Outcome.REVIEWED
    without = estimate_tokens(prompt(bench))
    files = {"app.py": "print('hi')\nx = 1\n", "package-lock.json": LOCK_TEXT}
    locked = bench.sim.open_pr(REPO, "locked", files).number
    report = bench.review(locked, config=config)
    assert report.outcome is Outcome.REVIEWED
    text = prompt(bench)
    listing = [Decision("package-lock.json", "lockfile", "package-lock.json")]
    section = estimate_tokens(
        f"{EXCLUDED_NOTE}\n\n{fence(chr(10).join(format_exclusions(listing)), 'excluded')}\n\n"
    )
    # The lockfile adds its listing line to the prompt and nothing of its text.
    assert "pkg-1" not in text and estimate_tokens(LOCK_TEXT) > 40_000
    assert abs(estimate_tokens(text) - without - section) <= 2
    body = Path(report.artifact).read_text()
    assert "Not reviewed (excluded, 1):\n- package-lock.json (lockfile: package-lock.json)" in body


def test_an_exclusion_file_counts_from_the_base_never_the_head(tmp_path: Path) -> None:
    with open_bench(tmp_path, {"app.py": "x = 0\n", "lib.py": "y = 0\n"}) as bench:
        config = capturing(bench)
        files = {"app.py": "x = 1\n", "lib.py": "y = 1\n", ".kdev/exclusions.yaml": EXCLUDE_LIB}
        pr = bench.sim.open_pr(REPO, "f", files).number
        first = bench.review(pr, config=config)
        # On the PR's head the file changes nothing: lib.py is read, nothing is excluded.
        assert first.outcome is Outcome.REVIEWED
        assert "y = 1" in prompt(bench) and "untrusted-excluded" not in prompt(bench)
        assert "Not reviewed (excluded" not in Path(first.artifact).read_text()
        # The same file on the base branch applies, at the PR's next round.
        bench.sim.commit_to_base(REPO, {".kdev/exclusions.yaml": EXCLUDE_LIB})
        bench.sim.merge_base_into_head(REPO, pr)
        second = bench.review(pr, config=config)
        assert second.outcome is Outcome.REVIEWED and second.patch_id != first.patch_id
        assert "y = 1" not in prompt(bench) and "x = 1" in prompt(bench)
        assert "lib.py (config: exclude: lib.py)" in prompt(bench).split("untrusted-excluded")[1]
        assert "- lib.py (config: exclude: lib.py)" in Path(second.artifact).read_text()


def test_exclusions_keep_no_copy_of_a_large_diff(tmp_path: Path) -> None:
    """Issue 28's bounded memory: deciding and cutting a 5 MB diff parses only the file
    headers and copies nothing when nothing is excluded (bench/sizing_rss.py measures
    the whole process)."""
    make_diff(tmp_path, 5_000_000)
    _git(tmp_path, "checkout", "-q", "-b", "pr")
    _git(tmp_path, "commit", "-q", "-m", "pr")
    git = Git(tmp_path)
    raw = git.diff("main", "pr")
    decisions = [Decision("data.txt"), Decision("small.py")]
    tracemalloc.start()
    try:
        kept = reviewed_diff(raw, decisions)
        hashed = patch_id_diff(raw, decisions)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert kept is raw and hashed is raw and peak < len(raw) // 20
    dropped = reviewed_diff(raw, [Decision("data.txt", "config", "exclude: *.txt"), decisions[1]])
    assert dropped.startswith(b"diff --git a/small.py ") and b"data.txt" not in dropped
    info = compute_patch_id(git, "main", "pr", KdevConfig(), "o/r")
    assert info.reviewed_diff is info.diff and info.diff.encode() == raw
