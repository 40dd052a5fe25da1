"""A diff over the prompt limit cut into chunks, and the chunks' legs merged into one
round (issue 28, D89), on real ``git diff`` output."""

from __future__ import annotations

import os
import subprocess
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.gitkit import GIT_ENV, git, numbered
from wrapper.review.anchoring import DiffError, parse_diff
from wrapper.review.chunk_merge import (
    CHUNK_MISSING,
    CHUNK_REPEATED,
    ChunkResult,
    MergedRound,
    MergeRefusal,
    merge_chunks,
)
from wrapper.review.chunking import (
    BUDGET_TOO_SMALL,
    CHUNK_TOO_LARGE,
    ChunkPlan,
    ChunkRefusal,
    plan_chunks,
)
from wrapper.review.findings_contract import APPROVE, REQUEST_CHANGES, Finding, ParsedReview
from wrapper.review.sizing import estimate_tokens


def diff_of(root: Path, base: dict[str, str | bytes], head: dict[str, str | bytes]) -> str:
    git(root, "init", "-q", "-b", "main")
    for files in (base, head):
        for name in list(os.listdir(root)):
            if name != ".git":
                subprocess.run(["rm", "-rf", str(root / name)], check=True)
        for name, data in files.items():
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(data, bytes):
                path.write_bytes(data)
            else:
                path.write_text(data, encoding="utf-8", newline="")
        git(root, "add", "-A")
        git(root, "commit", "-q", "--allow-empty", "-m", "c")
    return git(root, "diff", "-M", "HEAD~1", "HEAD")


@pytest.fixture(scope="module")
def diff(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Many hunks in one file, a long new file, a rename, a deletion, a binary, Unicode
    and a last line without a newline."""
    root = tmp_path_factory.mktemp("chunks")
    edited = "".join(f"changed {n} é\n" if n % 40 == 0 else f"line {n}\n" for n in range(1, 1201))
    base = {
        "a/many.txt": numbered(1200),
        "b/old.txt": numbered(30, "kept"),
        "c/gone.txt": numbered(50, "gone"),
        "d/blob.bin": b"\x00\x01" * 100,
        "e/tail.txt": "one\ntwo",
    }
    head = {
        "a/many.txt": edited,
        "b/new.txt": numbered(30, "kept") + "added\n",
        "d/blob.bin": b"\x00\x02" * 100,
        "e/tail.txt": "one\nthree",
        "f/long.txt": numbered(3000, "日本語 and words"),
        "g/small.txt": "hi\n",
    }
    return diff_of(root, base, head)


def body_lines(text: str) -> dict[str, list[str]]:
    """Each file's hunk lines (no ``@@`` lines) of a diff, by path, in order."""
    out: dict[str, list[str]] = {}
    path = ""
    in_hunk = False
    for line in text.split("\n"):
        if line.startswith("diff --git "):
            path, in_hunk = line.rsplit(" b/", 1)[1], False
            out.setdefault(path, [])
        elif line.startswith("@@"):
            in_hunk = True
        elif in_hunk:
            out[path].append(line)
    return out


def checked(diff: str, budget: int) -> ChunkPlan:
    plan = plan_chunks(diff, budget)
    assert isinstance(plan, ChunkPlan), plan
    paths = list(parse_diff(diff))
    joined: dict[str, list[str]] = {path: [] for path in paths}
    order = []
    for chunk in plan.chunks:
        text = chunk.render(diff)
        assert chunk.tokens <= budget
        assert estimate_tokens(text) <= chunk.tokens
        parsed = parse_diff(text)  # every chunk is a diff git's readers accept
        assert list(parsed) == list(chunk.paths)
        assert set(chunk.other_paths) == set(paths) - set(chunk.paths)
        for path, lines in body_lines(text).items():
            joined[path].extend(line for line in lines if line != "")
        order.extend(paths.index(path) for path in chunk.paths)
    assert order == sorted(order)  # the diff's order, each file once or in a run
    original = {path: [x for x in lines if x != ""] for path, lines in body_lines(diff).items()}
    assert joined == original  # every hunk line exactly once, none dropped
    return plan


def test_a_diff_under_the_budget_is_one_chunk_of_the_exact_text(diff: str) -> None:
    plan = checked(diff, 10**9)
    assert len(plan.chunks) == 1
    assert plan.chunks[0].render(diff) == diff
    assert plan.chunks[0].other_paths == ()


def test_files_are_packed_whole_when_each_fits(diff: str) -> None:
    biggest = max(part.tokens for part in checked(diff, 10**9).chunks[0].parts)
    plan = checked(diff, biggest + 200)
    assert len(plan.chunks) > 1
    assert all(part.whole for chunk in plan.chunks for part in chunk.parts)


def test_a_file_too_big_alone_is_split_and_keeps_its_header(diff: str) -> None:
    plan = checked(diff, 1_000)
    long_parts = [p for c in plan.chunks for p in c.parts if p.path == "f/long.txt"]
    assert len(long_parts) > 3
    for part in long_parts:
        assert not part.whole
        assert part.render(diff).startswith("diff --git a/f/long.txt b/f/long.txt\nnew file")
    many = [p for c in plan.chunks for p in c.parts if p.path == "a/many.txt"]
    assert len(many) > 1 and all(piece.header is None for p in many for piece in p.pieces)


@settings(max_examples=25, deadline=None)
@given(budget=st.integers(min_value=400, max_value=40_000))
def test_any_budget_keeps_every_line_once_in_order_under_the_budget(diff: str, budget: int) -> None:
    checked(diff, budget)


def test_a_line_too_big_alone_refuses_the_plan(tmp_path: Path) -> None:
    text = diff_of(tmp_path, {}, {"min.js": "x=" + "ab;" * 20_000 + "\n", "ok.txt": "a\n"})
    refusal = plan_chunks(text, 5_000)
    assert isinstance(refusal, ChunkRefusal)
    assert refusal.reason == CHUNK_TOO_LARGE and refusal.path == "min.js"
    assert "[chunk_too_large]" in refusal.message


def test_a_header_too_big_for_a_leg_refuses_the_plan(tmp_path: Path) -> None:
    deep = "/".join(c * 100 for c in "defgh")
    text = diff_of(tmp_path, {}, {deep: numbered(400)})
    refusal = plan_chunks(text, 700)
    assert isinstance(refusal, ChunkRefusal)
    assert refusal.reason == CHUNK_TOO_LARGE and refusal.path == deep
    assert "header alone" in refusal.detail


def test_a_malformed_hunk_header_in_a_split_file_is_a_diff_error(diff: str) -> None:
    broken = diff.replace("@@ -0,0 +1,3000 @@", "@@ -0,0 +one @@")
    assert broken != diff
    with pytest.raises(DiffError):
        plan_chunks(broken, 1_000)


def test_a_budget_the_file_list_fills_is_refused(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {f"dir/file_{n:03}.txt": numbered(20) for n in range(60)}
    text = diff_of(tmp_path, {}, files)
    refusal = plan_chunks(text, 300)
    assert isinstance(refusal, ChunkRefusal) and refusal.reason == BUDGET_TOO_SMALL


def test_an_empty_diff_has_no_chunk_and_a_non_diff_is_an_error() -> None:
    plan = plan_chunks("", 1_000)
    assert isinstance(plan, ChunkPlan) and plan.chunks == ()
    with pytest.raises(DiffError):
        plan_chunks("not a diff\n" * 10_000, 1_000)


def test_a_large_diff_is_planned_in_memory_far_below_its_size(tmp_path: Path) -> None:
    big = "".join(f"generated row {n} with some words in it\n" for n in range(130_000))
    text = diff_of(tmp_path, {}, {"big.txt": big, "small.txt": "x\n"})
    assert len(text) > 5_000_000
    tracemalloc.start()
    try:
        plan = plan_chunks(text, 50_000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert isinstance(plan, ChunkPlan) and len(plan.chunks) > 10
    assert peak < len(text) // 2  # offsets, not copies of the diff


def finding(path: str, severity: str, title: str = "t") -> Finding:
    return Finding(path, 1, severity, title, "b")


def leg(index: int, paths: tuple[str, ...], *found: Finding, verdict: str = "") -> ChunkResult:
    review = ParsedReview(
        "findings", verdict or APPROVE, f"summary {index}", tuple(found), stated_verdict=None
    )
    return ChunkResult(index, paths, review)


def test_merged_round_dedupes_findings_and_blocks_on_a_p2() -> None:
    same = finding("a", "P3")
    merged = merge_chunks(
        [leg(1, ("b",), same, finding("b", "P2")), leg(0, ("a",), same)], chunk_count=2
    )
    assert isinstance(merged, MergedRound)
    assert merged.findings == (same, finding("b", "P2"))
    assert merged.verdict == REQUEST_CHANGES
    assert merged.coverage == ((0, ("a",)), (1, ("b",)))
    assert merged.summary.index("Part 1 of 2") < merged.summary.index("Part 2 of 2")


def test_merged_round_approves_on_p3_only_and_keeps_a_legs_request() -> None:
    approve = merge_chunks([leg(0, ("a",), finding("a", "P3"))], chunk_count=1)
    assert isinstance(approve, MergedRound) and approve.verdict == APPROVE
    prose = merge_chunks([leg(0, ("a",)), leg(1, ("b",), verdict=REQUEST_CHANGES)], chunk_count=2)
    assert isinstance(prose, MergedRound) and prose.verdict == REQUEST_CHANGES


def test_a_missing_or_repeated_chunk_is_refused() -> None:
    missing = merge_chunks([leg(0, ("a",))], chunk_count=2)
    assert isinstance(missing, MergeRefusal) and missing.reason == CHUNK_MISSING
    assert "[chunk_missing]" in missing.message
    repeated = merge_chunks([leg(0, ("a",)), leg(0, ("a",))], chunk_count=1)
    assert isinstance(repeated, MergeRefusal) and repeated.reason == CHUNK_REPEATED
    stray = merge_chunks([leg(0, ("a",)), leg(5, ("b",))], chunk_count=1)
    assert isinstance(stray, MergeRefusal) and stray.reason == CHUNK_MISSING


lines_ = st.lists(
    st.sampled_from(["alpha\n", "beta é\n", "", "gamma 日本\n", "delta\n", "x" * 300 + "\n"]),
    max_size=60,
)


@settings(max_examples=20, deadline=None)
@given(
    old=st.lists(lines_, min_size=1, max_size=3),
    new=st.lists(lines_, min_size=1, max_size=3),
    tail=st.booleans(),
    budget=st.integers(min_value=300, max_value=3_000),
)
def test_any_real_diff_splits_into_valid_chunks_losing_no_line(
    tmp_path_factory: pytest.TempPathFactory,
    old: list[list[str]],
    new: list[list[str]],
    tail: bool,
    budget: int,
) -> None:
    root = tmp_path_factory.mktemp("prop")
    for side, files in (("old", old), ("new", new)):
        for number, lines in enumerate(files):
            text = "".join(lines) + ("no newline" if tail and side == "new" else "")
            (root / side).mkdir(exist_ok=True)
            (root / side / f"f{number}.txt").write_text(text, encoding="utf-8")
    done = subprocess.run(
        ["git", "diff", "--no-index", "old", "new"], cwd=root, env=GIT_ENV, capture_output=True
    )
    assert done.returncode in (0, 1), done.stderr
    text = done.stdout.decode("utf-8")
    plan = plan_chunks(text, budget)
    if isinstance(plan, ChunkRefusal):  # only a line no leg can hold is refused
        assert plan.reason in (CHUNK_TOO_LARGE, BUDGET_TOO_SMALL)
        return
    checked(text, budget)
