"""The priority classifier against real review comments labelled by a human against the
rubric in docs/priorities.md (tests/data/bot_comments.json; tests/data/README.md says how
the labels were given). The numbers are bench/triage_agreement.py's, computed the same way.

Issue 29's goal is blocking agreement >= 95 % (the one bit the loop acts on: P1/P2 block
the exit, P3 does not) with no human-blocking comment read as non-blocking. Neither is met
(D113, D114). On the whole corpus (259): 230 (88.8 %), 9 human-blocking comments read as
non-blocking. On D113's held-out batch (63 comments from 21 repositories new to the
corpus, labels committed before the classifier read them): 51 (81.0 %), 8 of the 9
missed. D108's batch (42) was read when D113's rules were written, so it is tuning data
now: 33 (78.6 %). The test asserts the measured numbers as floors (agreement no lower, no
more missed blockers, and exactly the known ones), and that the goal's status is reported
as not met, so a change in either direction shows here.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from bench.triage_agreement import GOAL, HELD_OUT, HELD_OUT_D108, Agreement, load, read_all
from wrapper.authorloop.triage import Basis, triage

REAL: list[dict[str, Any]] = load()
MEASURED_BLOCKING = 230  # of 259; see the module docstring
MEASURED_HELD_OUT = 51  # of 63, D113's batch
MEASURED_D108_BATCH = 33  # of 42
# The human-blocking comments the classifier reads as non-blocking (D113); goal: none.
KNOWN_MISSED = {
    "https://github.com/Phazzie/meechiescoloringbook/pull/127#discussion_r3356080425",
    "https://github.com/JoshCLWren/comic-pile/pull/164#discussion_r2733288255",
    "https://github.com/coelhotv/dosiq/pull/541#discussion_r3215295475",
    "https://github.com/femix300/ICE/pull/4#discussion_r3499576438",
    "https://github.com/davidasnider/file-catalog/pull/13#discussion_r2869608590",
    "https://github.com/mgh3326/auto_trader/pull/76#issuecomment-3567110084",
    "https://github.com/mgh3326/auto_trader/pull/76#issuecomment-3567401407",
    "https://github.com/mgh3326/auto_trader/pull/76#issuecomment-3567730126",
    "https://github.com/mgh3326/auto_trader/pull/76#issuecomment-3567824989",
}
# The one human-P1 comment read as P3, from D113's batch: "rename the unused parameter to
# keep `npm run lint` passing" reads as naming; the human reads that lint fails for everyone.
P1_READ_AS_P3 = {"https://github.com/femix300/ICE/pull/4#discussion_r3499576438"}
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
        assert sample["labelled"] in ("issue 17", "issue 29", HELD_OUT_D108, HELD_OUT)


def test_the_issue_29_samples_link_the_comment_itself() -> None:
    added = [s for s in REAL if s["labelled"] == "issue 29"]
    assert len(added) == 73
    for sample in added:
        # A comment URL, or (for a copy that names only ids) the repository and the id.
        if not COMMENT_URL.match(sample["source"]):
            assert sample["comment"] in sample["source"], sample["source"]
    assert len({s["comment"] for s in REAL}) == len(REAL), "a comment is in the corpus twice"


@pytest.mark.parametrize(("batch", "size"), [(HELD_OUT_D108, 42), (HELD_OUT, 63)])
def test_each_held_out_batch_links_each_comment_and_spans_six_bots(batch: str, size: int) -> None:
    held = [s for s in REAL if s["labelled"] == batch]
    assert len(held) == size and len({s["bot"] for s in held}) >= 6
    for sample in held:
        assert COMMENT_URL.match(sample["source"]), sample["source"]
        assert sample["comment"] == sample["source"]


def test_d113s_batch_comes_from_repositories_the_rules_never_saw() -> None:
    before = {s["repo"] for s in REAL if s["labelled"] != HELD_OUT}
    fresh = {s["repo"] for s in REAL if s["labelled"] == HELD_OUT}
    assert len(fresh) >= 20 and not fresh & before


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


def test_no_human_blocking_comment_is_missed_beyond_the_known_ones(agreement: Agreement) -> None:
    # The goal (none missed) is NOT met: this one is read as non-blocking (D113). A new
    # miss fails here; a fixed one fails too, so that this list and the docs stay true.
    missed = {r.sample["source"] for r in agreement.missed}
    assert missed == KNOWN_MISSED


def test_exactly_the_known_p1_is_read_as_p3(agreement: Agreement) -> None:
    read_p3 = {r.sample["source"] for r in agreement.missed if r.sample["human"] == "P1"}
    assert read_p3 == P1_READ_AS_P3


def test_blocking_agreement_with_the_human_labels(agreement: Agreement) -> None:
    print(f"blocking agreement {agreement.blocking}/{len(REAL)} = {agreement.rate:.1%}")
    assert agreement.blocking >= MEASURED_BLOCKING
    # The 95 % goal needs 247 of 259; it is not met, and the rate says so.
    assert agreement.rate < GOAL and agreement.blocking < 247


@pytest.mark.parametrize(
    ("batch", "size", "floor"),
    [(HELD_OUT_D108, 42, MEASURED_D108_BATCH), (HELD_OUT, 63, MEASURED_HELD_OUT)],
)
def test_blocking_agreement_on_each_held_out_batch(
    agreement: Agreement, batch: str, size: int, floor: int
) -> None:
    held = Agreement([r for r in agreement.reads if r.sample["labelled"] == batch])
    print(f"{batch} blocking agreement {held.blocking}/{len(held.reads)} = {held.rate:.1%}")
    assert len(held.reads) == size and held.blocking >= floor


@pytest.mark.parametrize("sample", REAL, ids=[f"{i}-{s['bot']}" for i, s in enumerate(REAL)])
def test_every_sample_says_which_rule_decided(sample: dict[str, Any]) -> None:
    decided = triage(sample["body"])
    kind, _, detail = decided.rule.partition(":")
    assert kind in ("marker", "content", "summary", "default") and (detail or kind == "summary")
    if sample["human"] == "P1" and sample["source"] not in P1_READ_AS_P3:
        assert decided.priority != "P3"
    # A body with a decisive badge is decided by it, never by content; a Codex P2 badge
    # is a medium level, read by content (D108).
    if re.search(r"P[01] Badge\]\(|codereviewagent/high", sample["body"]):
        assert decided.basis == Basis.MARKER
    elif "P2 Badge](" in sample["body"]:
        assert decided.basis != Basis.MARKER and decided.marker == "codex-p2: ![P2 Badge]"


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
    assert f"blocking agreement: {MEASURED_BLOCKING}/259 = 88.8%" in done.stdout
    assert f"blocking agreement: {MEASURED_D108_BATCH}/42 = 78.6%" in done.stdout
    assert f"blocking agreement: {MEASURED_HELD_OUT}/63 = 81.0%" in done.stdout
    assert "human-blocking read as non-blocking (goal 0): 9" in done.stdout
    assert "held-out batch (labelled 'held-out (D108)'): 42 real review comments" in done.stdout
    assert "held-out batch (labelled 'held-out (D113)'): 63 real review comments" in done.stdout
    # The rates where git has the commits; a shallow clone prints why it cannot say.
    assert "baseline, issue 17's classifier (8b3ceec): " in done.stdout
    assert "baseline, issue 29's before D108 (55e695c): " in done.stdout
    assert "baseline, issue 29's D108 classifier (4a52fa1): " in done.stdout
