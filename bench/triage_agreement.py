"""``triage``: the priority classifier against a careful human, on real review comments.

The corpus is tests/data/bot_comments.json (its README says how the labels were given).
What the loop acts on is one bit, whether a finding blocks the exit (P1/P2) or not (P3),
so the goal (issue 29) is **blocking agreement >= 95 %**, with every human-blocking
comment the classifier reads as non-blocking listed (goal 0). Also printed: exact
P-level agreement, the blocking confusion matrix per vendor, the P-level confusion
matrix, which rules decided, and baselines measured in the same run: the classifiers
before this one, read from git (:data:`BASELINES`: issue 17's "an explicit marker always
wins", and issue 29's before D108 re-read Codex's and Greptile's P2), and "every comment
blocks". Each **held-out batch** (:data:`HELD_OUT_BATCHES`: labels committed before the
classifier of its decision read those comments) is reported on its own as well; the
newest, :data:`HELD_OUT` (D113), is the held-out measure of today's classifier. D108's
batch was read when D113's rules were written, so for them it is tuning data.

``python -m bench --only triage`` or ``python -m bench.triage_agreement``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import types
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wrapper.authorloop.triage import triage

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "bot_comments.json"
BASELINE_COMMIT = "8b3ceec"  # the last commit with issue 17's classifier
BEFORE_D108 = "55e695c"  # issue 29's classifier before D108 (Codex/Greptile P2 decisive)
D108 = "4a52fa1"  # the D108 classifier as session 8 left it, before D113's rules
BASELINES = {
    BASELINE_COMMIT: "issue 17's classifier",
    BEFORE_D108: "issue 29's before D108",
    D108: "issue 29's D108 classifier",
}
HELD_OUT_D108 = "held-out (D108)"
HELD_OUT = "held-out (D113)"  # the held-out measure of today's classifier
HELD_OUT_BATCHES = (HELD_OUT_D108, HELD_OUT)
GOAL = 0.95
LEVELS = ("P1", "P2", "P3")


@dataclass(frozen=True)
class Read:
    """One comment: the human's label and the classifier's reading."""

    sample: dict[str, Any]
    priority: str
    rule: str

    @property
    def human_blocks(self) -> bool:
        return bool(self.sample["blocking"])

    @property
    def blocks(self) -> bool:
        return self.priority != "P3"


@dataclass(frozen=True)
class Agreement:
    """The classifier's agreement with the human labels."""

    reads: list[Read]
    baselines: dict[str, float | str] = field(default_factory=dict)

    @property
    def blocking(self) -> int:
        return sum(r.blocks == r.human_blocks for r in self.reads)

    @property
    def exact(self) -> int:
        return sum(r.priority == r.sample["human"] for r in self.reads)

    @property
    def rate(self) -> float:
        return self.blocking / len(self.reads)

    @property
    def missed(self) -> list[Read]:
        """Human-blocking comments read as non-blocking (goal: none)."""
        return [r for r in self.reads if r.human_blocks and not r.blocks]

    @property
    def extra(self) -> list[Read]:
        """Human-non-blocking comments read as blocking."""
        return [r for r in self.reads if r.blocks and not r.human_blocks]


def load(path: Path = CORPUS) -> list[dict[str, Any]]:
    samples: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))["real"]
    return samples


def read_all(samples: Sequence[dict[str, Any]]) -> list[Read]:
    reads = []
    for sample in samples:
        decided = triage(sample["body"])
        reads.append(Read(sample, decided.priority.value, decided.rule))
    return reads


def _rate(samples: Sequence[dict[str, Any]], blocks: Callable[[str], bool]) -> float:
    return sum(blocks(s["body"]) == s["blocking"] for s in samples) / len(samples)


def previous_classifier(commit: str = BASELINE_COMMIT) -> Callable[[str], str] | str:
    """The classifier as it was at ``commit`` (``body -> priority``), or why not. Each of
    its modules is read from that commit, so a baseline never borrows today's rules."""
    root = CORPUS.parents[2]
    modules: dict[str, str] = {}
    for name in ("triage_markers", "triage_content", "triage"):
        shown = subprocess.run(
            ["git", "-C", str(root), "show", f"{commit}:wrapper/authorloop/{name}.py"],
            capture_output=True,
            text=True,
            check=False,
        )
        if shown.returncode == 0:
            modules[name] = shown.stdout
        elif name != "triage_content":  # issue 17's classifier had no content module
            return f"unavailable: git show {commit} failed ({shown.stderr.strip()[:80]})"
    tag = f"bench_previous_{commit}"
    loaded: dict[str, dict[str, Any]] = {}
    for name, source in modules.items():
        module = types.ModuleType(f"{tag}_{name}")
        sys.modules[module.__name__] = module  # dataclasses look their module up
        for dependency in loaded:
            source = source.replace(
                f"from wrapper.authorloop.{dependency} import", f"from {tag}_{dependency} import"
            )
        exec(compile(source, f"{commit}:{name}", "exec"), module.__dict__)
        loaded[name] = module.__dict__
    classify: Callable[[str], Any] = loaded["triage"]["classify"]
    return lambda body: str(classify(body).value)


def _baselines(samples: Sequence[dict[str, Any]]) -> dict[str, float | str]:
    baselines: dict[str, float | str] = {"every comment blocks": _rate(samples, lambda _: True)}
    for commit, what in BASELINES.items():
        name = f"{what} ({commit})"
        previous = previous_classifier(commit)
        if isinstance(previous, str):
            baselines[name] = previous
        else:
            baselines[name] = _rate(samples, lambda body, old=previous: old(body) != "P3")
    return baselines


def measure(path: Path = CORPUS) -> Agreement:
    samples = load(path)
    return Agreement(read_all(samples), _baselines(samples))


def held_out(result: Agreement, batch: str = HELD_OUT) -> Agreement:
    """One held-out batch alone, with the baselines measured on it."""
    reads = [r for r in result.reads if r.sample["labelled"] == batch]
    return Agreement(reads, _baselines([r.sample for r in reads]) if reads else {})


def _pct(part: int, whole: int) -> str:
    return f"{part}/{whole} = {part / whole:.1%}"


def _vendor_rows(reads: Sequence[Read]) -> list[str]:
    rows = ["  per vendor, blocking (human x classifier): both / missed / extra / neither"]
    for bot in sorted({r.sample["bot"] for r in reads}):
        mine = [r for r in reads if r.sample["bot"] == bot]
        cells = Counter((r.human_blocks, r.blocks) for r in mine)
        agree = cells[True, True] + cells[False, False]
        rows.append(
            f"    {bot:<11} n={len(mine):<3} {cells[True, True]:>3} / {cells[True, False]:>2} / "
            f"{cells[False, True]:>2} / {cells[False, False]:>3}   agree {_pct(agree, len(mine))}"
        )
    return rows


def _level_rows(reads: Sequence[Read]) -> list[str]:
    cells = Counter((r.sample["human"], r.priority) for r in reads)
    rows = ["  P-level (rows human, columns classifier):   " + "  ".join(LEVELS)]
    for human in LEVELS:
        rows.append(f"    {human}" + "".join(f"{cells[human, got]:>6}" for got in LEVELS))
    return rows


def _listing(title: str, reads: Sequence[Read]) -> list[str]:
    rows = [f"  {title}: {len(reads)}"]
    for r in reads:
        s = r.sample
        rows.append(f"    {s['bot']}: {s['source']}")
        rows.append(f"      human {s['human']} ({s['why']}); read {r.priority} by {r.rule}")
    return rows


def _section(title: str, result: Agreement, *, rounds: bool) -> list[str]:
    reads = result.reads
    total = len(reads)
    vendors = len({r.sample["bot"] for r in reads})
    met = "met" if result.rate >= GOAL else "NOT met"
    lines = [
        f"{title}: {total} real review comments from {vendors} vendors",
        f"  blocking agreement: {_pct(result.blocking, total)}  goal >= {GOAL:.0%}: {met}",
    ]
    for name, value in result.baselines.items():
        shown = value if isinstance(value, str) else f"{value:.1%}"
        lines.append(f"    baseline, {name}: {shown}")
    lines.append(f"  exact P-level agreement: {_pct(result.exact, total)}")
    for label in sorted({str(r.sample["labelled"]) for r in reads}) if rounds else ():
        part = [r for r in reads if r.sample["labelled"] == label]
        agree = sum(r.blocks == r.human_blocks for r in part)
        lines.append(f"    labelled in {label}: blocking {_pct(agree, len(part))}")
    lines += _vendor_rows(reads) + _level_rows(reads)
    kinds = Counter(r.rule.split(":")[0] for r in reads)
    lines.append("  decided by: " + ", ".join(f"{k} {n}" for k, n in kinds.most_common()))
    lines += _listing("human-blocking read as non-blocking (goal 0)", result.missed)
    lines += _listing("human-non-blocking read as blocking", result.extra)
    return lines


def report(result: Agreement) -> list[str]:
    lines = _section(
        "triage agreement, whole corpus (tests/data/bot_comments.json)", result, rounds=True
    )
    for batch in HELD_OUT_BATCHES:
        held = held_out(result, batch)
        if held.reads:
            lines += _section(f"held-out batch (labelled {batch!r})", held, rounds=False)
    return lines


def main() -> int:
    print("\n".join(report(measure())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
