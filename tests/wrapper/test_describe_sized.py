"""Issue 28 in ``kdev describe-pr`` (D95): the describer reads the reviewed paths only
(D87) and the description names the excluded ones; over the prompt limit (D89) it is one
leg holding the whole files that fit and the other files' names, and the posted
description says which files it did not read; a limit too small even for the names is
refused before any leg. Real git, ghsim over HTTP, the stub reviewer."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from engine.config import Settings
from engine.github.client import GitHubClient
from tests.wrapper.reviewbench import REPO, ROOT, Bench
from wrapper.errors import KdevError, Outcome
from wrapper.review.describe import describe_pr
from wrapper.review.review import ReviewContext, ReviewRequest
from wrapper.review.sizing import estimate_tokens
from wrapper.stub_reviewer import diff_section

LIMIT = 2000
LOCK_TEXT = '{"lockfileVersion": 3, "packages": {"evil-pkg": "9.9.9"}}\n'
BIG = "".join(f"value_{n} = {n}  # a line of the big module\n" for n in range(240))


def _describe(bench: Bench, pr: int, where: Path, limit: int = LIMIT) -> Any:
    where.mkdir(exist_ok=True)
    config = bench.config(
        mention_handle="kdev",
        reviewer_env=["PYTHONPATH", "KDEV_STUB_PROMPTS"],
        size_policy={"max_prompt_tokens": limit},
    )
    settings = Settings(github_api_url=bench.sim.url, github_token=bench.token)
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(bench.root),
        "PYTHONPATH": str(ROOT),
        "GITHUB_TOKEN": bench.token,
        "KDEV_STUB_PROMPTS": str(where),
    }
    with GitHubClient(settings) as client:
        ctx = ReviewContext(config=config, ledger=bench.ledger(), github=client, environ=env)
        head = bench.sim.pull(REPO, pr).head_sha
        return describe_pr(ReviewRequest(REPO, pr, head, bench.checkout), ctx)


def _prompts(where: Path) -> list[str]:
    return [p.read_text() for p in sorted(where.glob("prompt-*.txt"))]


def _posted(bench: Bench) -> list[str]:
    return [c.body for c in bench.sim.comments(REPO)]


def test_describe_leaves_out_a_lockfile_and_says_so(bench: Bench, tmp_path: Path) -> None:
    where = tmp_path / "prompts"
    files = {"app.py": "print('hi')\nx = 1\n", "package-lock.json": LOCK_TEXT}
    pr = bench.sim.open_pr(REPO, "f", files).number
    report = _describe(bench, pr, where)
    assert report.outcome is Outcome.DESCRIBED and bench.legs() == 1
    [prompt] = _prompts(where)
    assert "x = 1" in diff_section(prompt) and "evil-pkg" not in prompt
    assert "package-lock.json (lockfile: " in prompt.split("untrusted-excluded", 1)[1]
    [body] = _posted(bench)
    assert body.startswith("**kdev description**")
    footer = body.split("**Not read for this description:**", 1)[1]
    assert "- Excluded (1): `package-lock.json (lockfile: package-lock.json)`" in footer
    assert "Over the prompt limit" not in footer


def test_a_small_diff_is_described_whole_with_no_footer(bench: Bench, tmp_path: Path) -> None:
    where = tmp_path / "prompts"
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "a = 1\n", "b.py": "b = 2\n"}).number
    assert _describe(bench, pr, where).outcome is Outcome.DESCRIBED
    [prompt] = _prompts(where)
    assert "+a = 1" in diff_section(prompt) and "+b = 2" in diff_section(prompt)
    assert "untrusted-files" not in prompt
    [body] = _posted(bench)
    assert "Not read for this description" not in body


def test_an_oversize_diff_is_one_leg_naming_what_it_did_not_read(
    bench: Bench, tmp_path: Path
) -> None:
    where = tmp_path / "prompts"
    files = {"a.py": "a = 1\n", "big.py": BIG, "c.py": "c = 3\n"}
    pr = bench.sim.open_pr(REPO, "f", files).number
    report = _describe(bench, pr, where)
    assert report.outcome is Outcome.DESCRIBED and bench.legs() == 1
    [prompt] = _prompts(where)
    assert estimate_tokens(prompt) <= LIMIT
    diff = diff_section(prompt)
    # The files that fit are read whole; the one too big is named with its counts only.
    assert "+a = 1" in diff and "+c = 3" in diff and "value_1 = 1" not in diff
    named = prompt.split("untrusted-files", 1)[1].split("```", 1)[0]
    assert "- big.py (+240 -0)" in named and "a.py" not in named
    [body] = _posted(bench)
    footer = body.split("**Not read for this description:**", 1)[1]
    assert "- Over the prompt limit, named to the describer without their diff (1 of 3" in footer
    assert f"a {LIMIT}-token limit, size_policy.max_prompt_tokens" in footer
    assert "`big.py (+240 -0)`" in footer and "a.py" not in footer


def test_a_limit_too_small_for_the_file_names_runs_no_leg(bench: Bench, tmp_path: Path) -> None:
    where = tmp_path / "prompts"
    files = {f"pkg/module_with_a_long_descriptive_name_{n:03}.py": BIG for n in range(80)}
    pr = bench.sim.open_pr(REPO, "f", files).number
    with pytest.raises(KdevError) as raised:
        _describe(bench, pr, where, limit=1000)
    assert raised.value.reason == "budget_too_small"
    assert "the names of the diff's 80 files leave no room" in raised.value.message
    assert _prompts(where) == [] and bench.legs() == 0 and _posted(bench) == []
    [note] = [n for n in bench.notes() if "FAILURE" in n["subject"]]
    assert "budget_too_small" in note["body"]
