"""The priority classifier against real review comments labelled by a human against the
rubric in docs/priorities.md (tests/data/bot_comments.json; tests/data/README.md says how
the labels were given). The numbers are bench/triage_agreement.py's, computed the same way.

Issue 29's goal is blocking agreement >= 95 % (the one bit the loop acts on: P1/P2 block
the exit, P3 does not) with no human-blocking comment read as non-blocking. Measured:
145 of 154 (94.2 %), none missed. The 9 disagreements are all comments the classifier
blocks and the human does not; 5 of them are decided by a marker that issue 29's table
makes decisive (Gemini high, CodeRabbit Critical, Codex P1/P2, Greptile P2), so the table
itself caps agreement at 149 (96.8 %). The test asserts the goal that is met (no missed
blocker), the measured agreement as a floor, and states the 95 % gap (D97).
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from bench.triage_agreement import GOAL, Agreement, load, read_all
from wrapper.authorloop.triage import Basis, triage

REAL: list[dict[str, Any]] = load()
MEASURED_BLOCKING = 145  # of 154; see the module docstring
COMMENT_URL = re.compile(
    r"^https://github\.com/[\w.-]+/[\w.-]+/pull/\d+#(?:discussion_r|issuecomment-|"
    r"pullrequestreview-)\d+$"
)


def test_every_real_sample_names_its_source_and_a_label() -> None:
    assert REAL
    for sample in REAL:
        assert sample["source"].startswith(f"https://github.com/{sample['repo']}")
        assert sample["pr"] is None or isinstance(sample["pr"], int)
        assert sample["comment"] and sample["via"] and sample["body"].strip()
        assert sample["trimmed"] is None or sample["trimmed"]
        assert sample["human"] in ("P1", "P2", "P3") and sample["why"]
        # Blocking is P1 or P2 by the rubric's definition, never a label of its own.
        assert sample["blocking"] is (sample["human"] in ("P1", "P2"))
        assert sample["labelled"] in ("issue 17", "issue 29")


def test_the_issue_29_samples_link_the_comment_itself() -> None:
    added = [s for s in REAL if s["labelled"] == "issue 29"]
    assert len(added) == 73
    for sample in added:
        # A comment URL, or (for a copy that names only ids) the repository and the id.
        if not COMMENT_URL.match(sample["source"]):
            assert sample["comment"] in sample["source"], sample["source"]
    assert len({s["comment"] for s in REAL}) == len(REAL), "a comment is in the corpus twice"


def test_the_corpus_size_and_vendors() -> None:
    per_bot = Counter(s["bot"] for s in REAL)
    print(dict(per_bot))
    assert len(REAL) >= 150
    assert len(per_bot) >= 8
    named = {"coderabbit", "gemini", "bugbot", "codex", "greptile", "copilot", "claude", "qodo"}
    assert named <= set(per_bot) and all(per_bot[b] >= 8 for b in named)


@pytest.fixture(scope="module")
def agreement() -> Agreement:
    return Agreement(read_all(REAL))


def test_no_human_blocking_comment_is_read_as_non_blocking(agreement: Agreement) -> None:
    missed = [(r.sample["source"], r.rule) for r in agreement.missed]
    assert missed == []


def test_blocking_agreement_with_the_human_labels(agreement: Agreement) -> None:
    print(f"blocking agreement {agreement.blocking}/{len(REAL)} = {agreement.rate:.1%}")
    assert agreement.blocking >= MEASURED_BLOCKING
    # The goal is not met by 2 comments (147 of 154 would be); say so if that changes.
    assert (agreement.rate >= GOAL) is (agreement.blocking >= 147)
    table_decided = [r for r in agreement.extra if r.rule.startswith("marker:")]
    assert len(agreement.extra) - len(table_decided) <= 4


@pytest.mark.parametrize("sample", REAL, ids=[f"{i}-{s['bot']}" for i, s in enumerate(REAL)])
def test_every_sample_says_which_rule_decided(sample: dict[str, Any]) -> None:
    decided = triage(sample["body"])
    kind, _, detail = decided.rule.partition(":")
    assert kind in ("marker", "content", "summary", "default") and (detail or kind == "summary")
    if sample["human"] == "P1":
        assert decided.priority != "P3"
    # A body with a severity badge is decided by it, never by content.
    if "Badge](" in sample["body"] or "codereviewagent/high" in sample["body"]:
        assert decided.basis == Basis.MARKER


@pytest.mark.parametrize(
    "argv", [["-m", "bench", "--only", "triage"], ["-m", "bench.triage_agreement"]]
)
def test_the_bench_commands_print_the_agreement(argv: list[str]) -> None:
    """The commands bench/README.md shows, run as a user runs them."""
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, *argv], cwd=root, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert f"blocking agreement: {MEASURED_BLOCKING}/154 = 94.2%" in done.stdout
    assert "human-blocking read as non-blocking (goal 0): 0" in done.stdout
    # 83.1 % where git has the commit; a shallow clone prints why it cannot say.
    assert "baseline, previous classifier (8b3ceec): " in done.stdout
