"""Issue 28 wired (D89): a diff over the prompt limit is one leg per chunk, each counted,
merged into one verdict; too many chunks or too little budget defers the whole round."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tests.wrapper.reviewbench import REPO, Bench
from wrapper.errors import Outcome
from wrapper.review.sizing import estimate_tokens
from wrapper.stub_reviewer import diff_section

LIMIT = 1000
FILES = {f"mod{i}.py": "".join(f"value_{i}_{n} = {n}\n" for n in range(40)) for i in range(4)}


def _config(bench: Bench, size: dict[str, Any] | None = None, **overrides: Any) -> Any:
    env = ["PYTHONPATH", "KDEV_STUB_SLEEP", "KDEV_STUB_EXIT", "KDEV_STUB_PROMPTS"]
    policy = {"max_prompt_tokens": LIMIT, **(size or {})}
    return bench.config(size_policy=policy, reviewer_env=env, **overrides)


def _prompts(where: Path) -> list[str]:
    return [p.read_text() for p in sorted(where.glob("prompt-*.txt"))]


def test_a_pr_over_the_limit_is_one_leg_per_chunk_and_one_verdict(
    bench: Bench, tmp_path: Path
) -> None:
    where = tmp_path / "prompts"
    where.mkdir()
    files = {**FILES, "mod2.py": FILES["mod2.py"] + "# TODO: finish\n"}
    pr = bench.sim.open_pr(REPO, "big", files)
    report = bench.review(
        pr.number, config=_config(bench), environ={"KDEV_STUB_PROMPTS": str(where)}
    )
    prompts = _prompts(where)
    assert report.outcome is Outcome.REVIEWED
    assert len(prompts) > 1
    assert bench.legs() == len(prompts)
    assert all(estimate_tokens(prompt) <= LIMIT for prompt in prompts)
    held = [[p for p in files if f"+++ b/{p}" in diff_section(prompt)] for prompt in prompts]
    assert sorted(path for paths in held for path in paths) == sorted(files)
    for prompt, paths in zip(prompts, held, strict=True):
        assert f"part {prompts.index(prompt) + 1} of {len(prompts)}" in prompt
        assert all(f"- {other}" in prompt for other in files if other not in paths)
    # One verdict: the chunk with the TODO asks for changes, so the round does.
    assert report.verdict == "REQUEST_CHANGES"
    body = Path(report.artifact).read_text()
    assert f"Part {len(prompts)} of {len(prompts)}" in body
    assert len(list(bench.ledger().pr_dir(REPO, pr.number).glob("*.json"))) >= 1


def test_more_chunks_than_max_chunks_defers_as_diff_too_large(bench: Bench, tmp_path: Path) -> None:
    where = tmp_path / "prompts"
    where.mkdir()
    pr = bench.sim.open_pr(REPO, "big", FILES)
    config = _config(bench, {"max_chunks": 1}, merge_gate={"enabled": True})
    report = bench.review(pr.number, config=config, environ={"KDEV_STUB_PROMPTS": str(where)})
    assert report.outcome is Outcome.DEFERRED_BUDGET
    assert re.fullmatch(r"diff_too_large: \d+/1", report.detail)
    assert _prompts(where) == [] and bench.legs() == 0
    [(_, _, marker)] = bench.ledger().list_deferred(REPO)
    assert marker.budget == "diff_too_large" and marker.reopens_at is not None
    [note] = [n for n in bench.notes() if "DEFERRED" in n["subject"]]
    why = next(line for line in note["body"].splitlines() if line.startswith("WHY: "))
    assert "the diff's estimated" in why and "(size_policy.max_prompt_tokens)" in why
    assert "size_policy.max_chunks is 1" in why
    assert report.merge_gate["state"] == "pending"
    assert report.merge_gate["description"] == f"review deferred ({report.detail})"


def test_a_budget_short_of_the_chunks_defers_the_whole_round(bench: Bench, tmp_path: Path) -> None:
    where = tmp_path / "prompts"
    where.mkdir()
    pr = bench.sim.open_pr(REPO, "big", FILES)
    config = _config(bench, budgets={"daily_rounds_per_pr": 2})
    report = bench.review(pr.number, config=config, environ={"KDEV_STUB_PROMPTS": str(where)})
    assert report.outcome is Outcome.DEFERRED_BUDGET
    assert report.detail.startswith("daily_rounds_per_pr: 0/2")
    assert _prompts(where) == [] and bench.legs() == 0


def test_a_small_pr_is_one_leg_as_before(bench: Bench, tmp_path: Path) -> None:
    where = tmp_path / "prompts"
    where.mkdir()
    pr = bench.sim.open_pr(REPO, "small", {"a.py": "x = 1\n"})
    report = bench.review(
        pr.number, config=_config(bench), environ={"KDEV_STUB_PROMPTS": str(where)}
    )
    [prompt] = _prompts(where)
    assert report.outcome is Outcome.REVIEWED and bench.legs() == 1
    assert "part 1 of" not in prompt
    assert not Path(report.artifact).read_text().count("Part 1 of")


def test_a_line_too_big_for_any_chunk_fails_loud_and_runs_no_leg(
    bench: Bench, tmp_path: Path
) -> None:
    import pytest

    from wrapper.errors import KdevError

    where = tmp_path / "prompts"
    where.mkdir()
    pr = bench.sim.open_pr(REPO, "wide", {**FILES, "wide.py": "x = '" + "a" * 3000 + "'\n"})
    with pytest.raises(KdevError) as raised:
        bench.review(pr.number, config=_config(bench), environ={"KDEV_STUB_PROMPTS": str(where)})
    assert raised.value.reason == "chunk_too_large"
    assert _prompts(where) == [] and bench.legs() == 0
    [note] = [n for n in bench.notes() if "FAILURE" in n["subject"]]
    assert "chunk_too_large" in note["body"]


def test_with_review_post_one_round_holds_every_chunks_findings(
    bench: Bench, tmp_path: Path
) -> None:
    where = tmp_path / "prompts"
    where.mkdir()
    files = {name: text * 3 for name, text in FILES.items()}
    files["mod0.py"] += "# TODO: one\n"
    files["mod3.py"] += "# FIXME: two\n"
    pr = bench.sim.open_pr(REPO, "big", files)
    # The findings contract's instructions take about 1,200 tokens of their own.
    size = {"max_prompt_tokens": 2000}
    config = _config(bench, size, mention_handle="kdev", review_post={"enabled": True})
    report = bench.review(pr.number, config=config, environ={"KDEV_STUB_PROMPTS": str(where)})
    prompts = _prompts(where)
    assert report.outcome is Outcome.REVIEWED and len(prompts) > 1
    assert bench.legs() == len(prompts) and report.verdict == "REQUEST_CHANGES"
    [review] = bench.sim.reviews(REPO, pr.number)
    posted = review.body + "".join(
        c.body for c in bench.sim.review_comments(REPO, pr.number, review.id)
    )
    assert "TODO left in the change" in posted and "FIXME left in the change" in posted
    assert "Part 1 of" in review.body
