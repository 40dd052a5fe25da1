"""Issue 28 in roster mode (D95): a roster round reads the reviewed diff (D87), lists the
excluded paths, and sizes each roster reviewer's own prompt (D89): over the limit, one
leg per chunk, every leg counted, merged into the reviewer's one output and the round's
one verdict; more chunks than ``max_chunks`` defers the whole round as
``diff_too_large``. Real git, ghsim over HTTP, the stub reviewer."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.wrapper.reviewbench import REPO, STUB, Bench, open_bench
from wrapper.errors import KdevError, Outcome
from wrapper.review.sizing import estimate_tokens
from wrapper.stub_reviewer import diff_section

LIMIT = 2000
LOCK_TEXT = '{"lockfileVersion": 3, "packages": {"evil-pkg": "9.9.9"}}\n'
# Two reviewers: the root's code-reviewer (every file) and pkg/'s pkg-reviewer (pkg/ only).
ROOT_ROSTER = """\
# Configuration

```json
{"disabled": ["silent-failure-hunter", "pr-test-analyzer", "comment-analyzer",
              "type-design-analyzer", "code-simplifier"]}
```
"""
PKG_ROSTER = "# Agents\n\n## pkg-reviewer\n\nCheck the package's public names.\n"
BIG = "".join(f"value_{n} = {n}  # a line of the big module\n" for n in range(240))
SMALL = "x = 1\n"


@pytest.fixture
def roster_bench(tmp_path: Path) -> Iterator[Bench]:
    files = {
        "app.py": "print('hi')\n",
        "AGENT-REVIEWERS.md": ROOT_ROSTER,
        "pkg/AGENT-REVIEWERS.md": PKG_ROSTER,
    }
    with open_bench(tmp_path, files) as made:
        yield made


def _config(
    bench: Bench,
    argv: list[str] | None = None,
    size: dict[str, Any] | None = None,
    budgets: dict[str, Any] | None = None,
    **overrides: Any,
) -> Any:
    reviewer = {
        "backend": "command",
        "argv": argv or STUB,
        "model": "stub",
        "timeout_seconds": 30,
        "roster": True,
    }
    env = ["PYTHONPATH", "KDEV_STUB_PROMPTS"]
    # One leg at a time: the stub numbers its saved prompts by counting the directory.
    limits = {"max_concurrent_legs_per_repo": 1, **(budgets or {})}
    policy = {"max_prompt_tokens": LIMIT, **(size or {})}
    return bench.config(
        reviewer=reviewer, reviewer_env=env, size_policy=policy, budgets=limits, **overrides
    )


def _review(bench: Bench, pr: int, config: Any, where: Path) -> Any:
    where.mkdir(exist_ok=True)
    return bench.review(pr, config=config, environ={"KDEV_STUB_PROMPTS": str(where)})


def _prompts(where: Path) -> list[str]:
    found = sorted(where.glob("prompt-*.txt"), key=lambda p: int(p.stem.split("-")[1]))
    return [p.read_text() for p in found]


def _role(prompt: str) -> str:
    found = re.search(r"^## Your role in this review: (\S+)$", prompt, re.MULTILINE)
    assert found is not None
    return found.group(1)


def test_a_roster_round_chunks_a_big_file_and_lists_the_lockfile(
    roster_bench: Bench, tmp_path: Path
) -> None:
    bench, where = roster_bench, tmp_path / "prompts"
    files = {
        "package-lock.json": LOCK_TEXT,
        "pkg/big.py": BIG + "# TODO: finish the module\n",
        "pkg/small.py": SMALL,
    }
    pr = bench.sim.open_pr(REPO, "big", files).number
    report = _review(bench, pr, _config(bench), where)
    prompts = _prompts(where)
    assert report.outcome is Outcome.REVIEWED and report.verdict == "REQUEST_CHANGES"
    # Both reviewers read pkg/ (the big file is over the limit for each): more legs than
    # reviewers, every one counted and every prompt within the limit.
    assert len(prompts) > 2 and bench.legs() == len(prompts)
    assert all(estimate_tokens(prompt) <= LIMIT for prompt in prompts)
    for name in ("code-reviewer", "pkg-reviewer"):
        own = [p for p in prompts if _role(p) == name]
        assert len(own) > 1
        read = "".join(diff_section(p) + "\n" for p in own)
        # Every line of the big file is in one of this reviewer's chunks, exactly once.
        assert all(read.count(f"+value_{n} = {n} ") == 1 for n in range(240))
        assert all(f"of {len(own)} of the pull request's diff" in p for p in own)
    for prompt in prompts:
        assert "evil-pkg" not in prompt  # the lockfile is not read ...
        listed = prompt.split("untrusted-excluded", 1)[1]
        assert "package-lock.json (lockfile: " in listed  # ... and named as excluded
    body = Path(report.artifact).read_text()
    assert "Not reviewed (excluded, 1):\n- package-lock.json (lockfile: " in body
    assert "## code-reviewer: REQUEST_CHANGES" in body and "### Part 1 of " in body
    assert body.rstrip().endswith("VERDICT: REQUEST_CHANGES")
    [note] = [n for n in bench.notes() if "EXCLUDED: package-lock.json" in n["body"]]
    assert "REQUEST_CHANGES" in note["subject"]


def test_a_roster_that_fits_is_one_leg_per_reviewer_as_before(
    roster_bench: Bench, tmp_path: Path
) -> None:
    bench, where = roster_bench, tmp_path / "prompts"
    pr = bench.sim.open_pr(REPO, "s", {"pkg/small.py": SMALL, "yarn.lock": "x\n"}).number
    report = _review(bench, pr, _config(bench), where)
    prompts = _prompts(where)
    assert report.outcome is Outcome.REVIEWED and report.verdict == "APPROVE"
    assert sorted(_role(p) for p in prompts) == ["code-reviewer", "pkg-reviewer"]
    assert bench.legs() == 2 and not any("of the pull request's diff" in p for p in prompts)
    assert "### Part" not in Path(report.artifact).read_text()


def test_a_roster_reviewer_over_max_chunks_defers_the_round(
    roster_bench: Bench, tmp_path: Path
) -> None:
    bench, where = roster_bench, tmp_path / "prompts"
    pr = bench.sim.open_pr(REPO, "big", {"pkg/big.py": BIG, "Cargo.lock": "x\n"})
    config = _config(bench, size={"max_chunks": 1}, merge_gate={"enabled": True})
    report = _review(bench, pr.number, config, where)
    assert report.outcome is Outcome.DEFERRED_BUDGET
    assert re.fullmatch(r"diff_too_large: \d+/1", report.detail)
    assert _prompts(where) == [] and bench.legs() == 0
    [(_, _, marker)] = bench.ledger().list_deferred(REPO)
    assert marker.budget == "diff_too_large" and marker.reopens_at is not None
    [note] = [n for n in bench.notes() if "DEFERRED" in n["subject"]]
    why = next(line for line in note["body"].splitlines() if line.startswith("WHY: "))
    assert "roster reviewer code-reviewer's diff, estimated" in why
    assert f"{LIMIT}-token limit (size_policy.max_prompt_tokens)" in why
    assert "size_policy.max_chunks is 1" in why
    assert report.merge_gate["state"] == "pending"
    assert report.merge_gate["description"] == f"review deferred ({report.detail})"


def test_a_budget_short_of_the_roster_legs_runs_none(roster_bench: Bench, tmp_path: Path) -> None:
    bench, where = roster_bench, tmp_path / "prompts"
    pr = bench.sim.open_pr(REPO, "big", {"pkg/big.py": BIG}).number
    config = _config(bench, budgets={"daily_rounds_per_pr": 3})
    report = _review(bench, pr, config, where)
    assert report.outcome is Outcome.DEFERRED_BUDGET
    assert report.detail.startswith("daily_rounds_per_pr: 0/3")
    assert _prompts(where) == [] and bench.legs() == 0


def test_a_roster_line_too_big_for_any_chunk_fails_loud_before_any_leg(
    roster_bench: Bench, tmp_path: Path
) -> None:
    bench, where = roster_bench, tmp_path / "prompts"
    wide = "x = '" + "a" * 6000 + "'\n"
    pr = bench.sim.open_pr(REPO, "wide", {"pkg/wide.py": wide}).number
    with pytest.raises(KdevError) as raised:
        _review(bench, pr, _config(bench), where)
    assert raised.value.reason == "chunk_too_large"
    assert _prompts(where) == [] and bench.legs() == 0
    [note] = [n for n in bench.notes() if "FAILURE" in n["subject"]]
    assert "chunk_too_large" in note["body"]


# A P1 on the big file from the part that holds its TODO, and a validator that saves
# what it was sent: its prompt stays within the limit too.
P1_ON_BIG = """\
import os, sys
prompt = sys.stdin.read()
if prompt.startswith("You are an independent validator"):
    with open(os.environ["KDEV_STUB_PROMPTS"] + "/validator.txt", "w") as out:
        out.write(prompt)
    print("VALIDATION: VALID: it is there")
    raise SystemExit(0)
if "+# TODO" in prompt:
    print("- [P1] pkg/big.py:481 the module is unfinished")
print("VERDICT: APPROVE")
"""
VALIDATED_ROSTER = ROOT_ROSTER.replace("]}", '], "independent_validator": {"enabled": true}}')


def test_the_validator_of_a_chunked_finding_stays_within_the_limit(tmp_path: Path) -> None:
    files = {"app.py": "print('hi')\n", "AGENT-REVIEWERS.md": VALIDATED_ROSTER}
    with open_bench(tmp_path, files) as bench:
        script = tmp_path / "p1.py"
        script.write_text(P1_ON_BIG)
        where = tmp_path / "prompts"
        big = BIG * 2 + "# TODO: finish the module\n"
        pr = bench.sim.open_pr(REPO, "big", {"pkg/big.py": big}).number
        config = _config(bench, [sys.executable, "-P", str(script)])
        report = _review(bench, pr, config, where)
        assert report.outcome is Outcome.REVIEWED and report.verdict == "REQUEST_CHANGES"
        validator = (where / "validator.txt").read_text()
        # The file's whole diff is over the limit: the validator got the part with it.
        assert estimate_tokens(validator) <= LIMIT and "+# TODO" in validator
        assert "+value_0 = 0 " not in validator


# --- the plan, without a round ------------------------------------------------------------

LONG_CONTEXT = "# Agents\n\n## pkg-reviewer\n\n" + "Check every public name with care. " * 60 + "\n"


def test_each_reviewer_gets_its_own_room_and_the_root_ones_share_the_diff(
    tmp_path: Path,
) -> None:
    from tests.wrapper.test_chunking import diff_of
    from wrapper.config import KdevConfig
    from wrapper.review.prompt import PromptInput
    from wrapper.review.roster import build_roster
    from wrapper.review.roster_chunks import plan_roster
    from wrapper.review.roster_diff import split_diff

    diff = diff_of(tmp_path, {"app.py": "0\n"}, {"app.py": "0\n", "pkg/big.py": BIG})
    blocks = split_diff(diff)
    files = {"AGENT-REVIEWERS.md": ROOT_ROSTER, "pkg/AGENT-REVIEWERS.md": LONG_CONTEXT}
    roster = build_roster(files, blocks)
    config = KdevConfig.model_validate(
        {
            "reviewer": {"backend": "command", "argv": ["true"], "model": "stub"},
            "size_policy": {"max_prompt_tokens": LIMIT},
        }
    )
    data = PromptInput(REPO, 1, "t", "b", "a", "main", "0" * 40, diff, "https://x/1")
    planned = plan_roster(config, roster, blocks, data)
    legs = {plan.reviewer.name: plan.legs for plan in planned.reviewers}
    # Fewer files but less room: pkg-reviewer's long instructions cost it chunks.
    assert legs["pkg-reviewer"] > legs["code-reviewer"] > 1
    assert planned.legs == sum(legs.values()) and planned.chunk_count == legs["pkg-reviewer"]
    # Root-scoped reviewers read the whole diff: the diff itself, not a copy of it.
    [root] = [p.reviewer for p in planned.reviewers if p.reviewer.name == "code-reviewer"]
    assert planned.diffs[root.changed_files] is diff
    for key in planned.leg_keys():
        assert estimate_tokens(planned.prompt(key, data, None)) <= LIMIT


def test_a_roster_round_takes_its_exclusion_file_from_the_base_only(tmp_path: Path) -> None:
    files = {
        "app.py": "print('hi')\n",
        "AGENT-REVIEWERS.md": ROOT_ROSTER,
        ".kdev/exclusions.yaml": "exclude: ['docs/**']\n",
    }
    with open_bench(tmp_path, files) as bench:
        where = tmp_path / "prompts"
        head = {
            ".kdev/exclusions.yaml": "exclude: ['src/**']\n",  # the PR's own: ignored
            "src/hidden.py": "HIDDEN_FROM_NOBODY = 1\n",
            "docs/notes.md": "BASE_EXCLUDED_TEXT\n",
        }
        pr = bench.sim.open_pr(REPO, "f", head).number
        report = _review(bench, pr, _config(bench), where)
        assert report.outcome is Outcome.REVIEWED
        [prompt] = _prompts(where)  # code-reviewer alone
        assert "HIDDEN_FROM_NOBODY" in diff_section(prompt)
        assert "BASE_EXCLUDED_TEXT" not in prompt
        assert "docs/notes.md (config: " in prompt.split("untrusted-excluded", 1)[1]
        assert "- docs/notes.md (config: " in Path(report.artifact).read_text()
