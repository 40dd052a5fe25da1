"""Reviewer legs per distinct diff: what patch-id dedup saves on a realistic PR trace.

A scripted trace (``random.Random(7)``) of N pull requests (default 50) in one ghsim
repository, the PRs' events interleaved. Each PR is opened, then gets a mix of:

- push: a new commit that changes what the PR does (a new diff);
- base merged into head: ``commit_to_base`` (a file no PR touches), then
  ``merge_base_into_head`` (a new head SHA, the same diff);
- identical force-push: ``force_push`` with the PR's current files, one new commit on
  the base tip (a new head SHA, the same diff);
- comment, label: ``updated_at`` moves, the head SHA does not.

Every event moves the PR's ``updated_at`` (the simulator clock moves 60 s before each),
so the engine fires once per event. After each event :func:`wrapper.review.review_pr`
runs in this process for the PR's current head, as ``kdev review-pr`` would for that
fire: a real git checkout fetching from the bare repository, the stub reviewer
(``python -P -m wrapper.stub_reviewer``) as a command backend, a file notifier and a
ledger in the temp dir, and budgets set so high that they never defer.

Counted in the same run: the pipeline's legs (outcome ``reviewed``; every outcome is
tallied), two baselines, (a) one leg per distinct head SHA and (b) one leg per PR update
event, and the distinct diffs (patch-ids taken from the reports). The target is legs =
distinct diffs. The mean wall time of ``review_pr`` calls that carried a verdict forward
is set against that of calls that ran a stub reviewer leg.

Each call gets a fresh :class:`engine.github.GitHubClient` (and pacer), as each
``kdev review-pr`` process would; building it is outside the timed span. A fresh
connection per call also keeps ghsim's keep-alive delay (see ``poll``) out of the times.
"""

from __future__ import annotations

import math
import os
import random
import statistics
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.config import Settings
from engine.github import GitHubClient, RequestPacer
from ghsim import GitHubSim
from wrapper.config import KdevConfig
from wrapper.errors import KdevError, Outcome
from wrapper.ledger import Ledger
from wrapper.review import ReviewContext, ReviewReport, ReviewRequest, review_pr

PROJECT_ROOT = Path(__file__).resolve().parent.parent
REPO = "bench/legs"
TOKEN = "bench-legs-token"
SEED = 7
STUB = [sys.executable, "-P", "-m", "wrapper.stub_reviewer"]
BUDGETS = {
    "daily_legs_per_repo": 100_000,
    "daily_rounds_per_pr": 100_000,
    "max_concurrent_legs_per_repo": 4,
}  # so high that no budget ever defers
EVENT_STEP_SECONDS = 60  # simulator clock move before each event: updated_at moves
FOLLOW_UPS = (2, 9)  # events after the open, per PR (inclusive range)
OPEN_CHANCE = 0.2  # chance that the next event opens a new PR (while some are left)
KINDS = ("push", "merge_base", "force_push", "comment", "label")
KIND_WEIGHTS = (30, 20, 15, 20, 15)
LABELS = ("bug", "enhancement", "needs-review", "wip", "docs")
KIND_NAMES = {
    "open": "open",
    "push": "push (new change)",
    "merge_base": "base merged into head",
    "force_push": "identical force-push",
    "comment": "comment",
    "label": "label",
}


@dataclass(frozen=True)
class Event:
    """One scripted PR update: ``kind`` on PR ``index`` (1-based, in opening order)."""

    kind: str
    index: int
    files: dict[str, str] | None = None  # open, push: the change; force_push: all files
    text: str = ""  # comment body or label name


def make_trace(prs: int, seed: int = SEED) -> list[Event]:
    """The seeded event script: ``prs`` pull requests, their events interleaved."""
    rng = random.Random(seed)
    files: dict[int, dict[str, str]] = {}  # the PR's files as of its current head
    revisions: dict[int, int] = {}  # content revisions so far
    left: dict[int, int] = {}  # follow-up events still to come
    active: list[int] = []
    opened = 0
    base_commits = 0
    events: list[Event] = []

    def content(index: int, rev: int) -> str:
        note = "  # TODO: tidy up" if rng.random() < 0.3 else ""
        return f"# pr {index} revision {rev}\nvalue = {rng.randrange(10**6)}{note}\n"

    while opened < prs or active:
        if opened < prs and (not active or rng.random() < OPEN_CHANCE):
            opened += 1
            change = {f"pr{opened}/change.py": content(opened, 0)}
            files[opened] = dict(change)
            revisions[opened] = 1
            left[opened] = rng.randint(*FOLLOW_UPS)
            active.append(opened)
            events.append(Event("open", opened, change))
            continue
        index = rng.choice(active)
        kind = rng.choices(KINDS, KIND_WEIGHTS)[0]
        if kind == "push":
            rev = revisions[index]
            revisions[index] += 1
            current = files[index]
            if rng.random() < 0.5:
                path = rng.choice(sorted(current))
            else:
                path = f"pr{index}/part{len(current)}.py"
            change = {path: content(index, rev)}
            current.update(change)
            events.append(Event("push", index, change))
        elif kind == "merge_base":
            base_commits += 1
            events.append(Event("merge_base", index, {f"base/{base_commits}.txt": "base\n"}))
        elif kind == "force_push":
            events.append(Event("force_push", index, dict(files[index])))
        elif kind == "comment":
            events.append(Event("comment", index, text=f"comment {len(events)} on pr {index}"))
        else:
            events.append(Event("label", index, text=rng.choice(LABELS)))
        left[index] -= 1
        if left[index] == 0:
            active.remove(index)
    return events


@dataclass
class LegsResult:
    prs: int
    events: int
    kinds: Counter[str]
    outcomes: Counter[str]  # outcome value (or "error:<reason>") -> calls
    by_kind: dict[str, Counter[str]]  # event kind -> outcome -> calls
    head_shas: int  # distinct (PR, head SHA) fired
    patch_ids: int  # distinct patch-ids in the reports
    pr_patch_ids: int  # distinct (PR, patch-id): the ledger's dedup key
    ledger_legs: int  # lines in legs.jsonl for the trace
    times: dict[str, list[float]] = field(default_factory=dict)  # outcome -> seconds
    wall_seconds: float = 0.0

    @property
    def legs(self) -> int:
        return self.outcomes[Outcome.REVIEWED.value]

    @property
    def target_met(self) -> bool:
        return self.legs == self.patch_ids


class _Pipeline:
    """review_pr as ``kdev review-pr`` runs it for one fire, against one ghsim repo."""

    def __init__(self, sim: GitHubSim, root: Path) -> None:
        self.sim = sim
        self.root = root
        self.checkout = root / "checkout"
        subprocess.run(
            ["git", "clone", "-q", str(sim.repo_path(REPO)), str(self.checkout)], check=True
        )
        self.settings = Settings(github_api_url=sim.url, github_token=TOKEN)
        self.config = KdevConfig.model_validate(
            {
                "reviewer": {
                    "backend": "command",
                    "argv": STUB,
                    "model": "stub",
                    "timeout_seconds": 60,
                },
                "notify": [{"type": "file", "path": str(root / "notes.jsonl")}],
                "reviewer_env": ["PYTHONPATH"],
                "budgets": BUDGETS,
            }
        )
        self.environ = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(root),
            "PYTHONPATH": str(PROJECT_ROOT),
            "GITHUB_TOKEN": TOKEN,
        }

    def review(self, ledger: Ledger, number: int) -> tuple[ReviewReport, float]:
        """One fire for PR ``number``'s current head; returns the report and seconds."""
        head = self.sim.pull(REPO, number).head_sha
        request = ReviewRequest(repo=REPO, pr=number, head_sha=head, checkout=self.checkout)
        with GitHubClient(self.settings, pacer=RequestPacer()) as client:
            ctx = ReviewContext(
                config=self.config, ledger=ledger, github=client, environ=self.environ
            )
            started = time.perf_counter()
            report = review_pr(request, ctx)
            return report, time.perf_counter() - started


def _apply(sim: GitHubSim, numbers: dict[int, int], event: Event) -> int:
    """Make ``event`` happen in the simulator; returns the PR number."""
    sim.advance(EVENT_STEP_SECONDS)
    if event.kind == "open":
        assert event.files is not None
        pull = sim.open_pr(REPO, f"pr{event.index}", event.files, title=f"Change {event.index}")
        numbers[event.index] = pull.number
        return pull.number
    number = numbers[event.index]
    if event.kind == "push":
        assert event.files is not None
        sim.push(REPO, number, event.files)
    elif event.kind == "merge_base":
        assert event.files is not None
        sim.commit_to_base(REPO, event.files)
        sim.merge_base_into_head(REPO, number)
    elif event.kind == "force_push":
        assert event.files is not None
        sim.force_push(REPO, number, event.files)
    elif event.kind == "comment":
        sim.comment(REPO, number, event.text)
    elif event.kind == "label":
        sim.label(REPO, number, event.text)
    else:
        raise ValueError(f"unknown event kind {event.kind!r}")
    return number


def _warm_up(sim: GitHubSim, pipeline: _Pipeline, root: Path) -> None:
    """One leg and one carry-forward on a throwaway PR, its own ledger: imports, caches."""
    pull = sim.open_pr(REPO, "warm-up", {"warm/up.py": "x = 1\n"})
    ledger = Ledger(root / "reviews-warm-up")
    for _ in range(2):
        pipeline.review(ledger, pull.number)
    sim.close(REPO, pull.number)


def measure(prs: int, workdir: Path) -> LegsResult:
    """Run the trace of ``prs`` pull requests, one review_pr per event."""
    root = workdir / "legs"
    root.mkdir()
    trace = make_trace(prs)
    began = time.perf_counter()
    with GitHubSim(root / "github") as sim:
        sim.add_token(TOKEN, ("review-bot", 4242))
        sim.create_repo(REPO, files={"README.md": "legs bench\n"})
        pipeline = _Pipeline(sim, root)
        _warm_up(sim, pipeline, root)
        ledger = Ledger(root / "reviews")
        numbers: dict[int, int] = {}
        outcomes: Counter[str] = Counter()
        by_kind: dict[str, Counter[str]] = {}
        times: dict[str, list[float]] = {}
        heads: set[tuple[int, str]] = set()
        patch_ids: set[str] = set()
        pr_patch_ids: set[tuple[int, str]] = set()
        trace_start = ledger.clock()
        for event in trace:
            number = _apply(sim, numbers, event)
            heads.add((number, sim.pull(REPO, number).head_sha))
            try:
                report, seconds = pipeline.review(ledger, number)
            except KdevError as exc:
                outcome = f"error:{exc.reason}"
            else:
                outcome = report.outcome.value
                times.setdefault(outcome, []).append(seconds)
                if report.patch_id is not None:
                    patch_ids.add(report.patch_id)
                    pr_patch_ids.add((number, report.patch_id))
            outcomes[outcome] += 1
            by_kind.setdefault(event.kind, Counter())[outcome] += 1
        ledger_legs = len(ledger.legs_since(REPO, trace_start))
    return LegsResult(
        prs=prs,
        events=len(trace),
        kinds=Counter(event.kind for event in trace),
        outcomes=outcomes,
        by_kind=by_kind,
        head_shas=len(heads),
        patch_ids=len(patch_ids),
        pr_patch_ids=len(pr_patch_ids),
        ledger_legs=ledger_legs,
        times=times,
        wall_seconds=time.perf_counter() - began,
    )


def _fraction(value: float, baseline: float) -> str:
    if math.isnan(value) or math.isnan(baseline) or baseline <= 0:
        return "n/a"
    return f"{value / baseline:.2f}x"


def _ms(samples: list[float], how: Any) -> float:
    return how(samples) * 1000.0 if samples else float("nan")


def report(result: LegsResult) -> list[str]:
    """The printed lines for one run."""
    legs = result.legs
    carried = result.times.get(Outcome.CARRIED_FORWARD.value, [])
    reviewed = result.times.get(Outcome.REVIEWED.value, [])
    carried_ms = _ms(carried, statistics.fmean)
    reviewed_ms = _ms(reviewed, statistics.fmean)
    verdict = "met" if result.target_met else "not met"
    order = ["open", *KINDS]

    def row(label: str, value: object, note: str = "") -> str:
        shown = f"{value:8.2f}" if isinstance(value, float) else f"{value:>8}"
        return f"  {label:<36}{shown}  {note}".rstrip()

    def tally(counts: Counter[str]) -> str:
        return ", ".join(f"{name} {count}" for name, count in counts.most_common())

    lines = [
        f"reviewer legs (ghsim, {result.prs} PRs, {result.events} update events, seed {SEED}, "
        f"stub reviewer; {result.wall_seconds:.1f} s)",
        "  events: " + ", ".join(f"{KIND_NAMES[k]} {result.kinds[k]}" for k in order),
        "  outcomes: " + tally(result.outcomes),
    ]
    for kind in order:
        lines.append(
            f"    after {KIND_NAMES[kind]:<24}{tally(result.by_kind.get(kind, Counter()))}"
        )
    lines += [
        row(
            "distinct diffs (patch-ids)",
            result.patch_ids,
            f"(PR, patch-id) pairs: {result.pr_patch_ids}",
        ),
        row("pipeline legs (outcome reviewed)", legs, f"legs.jsonl lines: {result.ledger_legs}"),
        row(
            "(a) one leg per distinct head SHA",
            result.head_shas,
            f"ratio pipeline/(a) {_fraction(legs, result.head_shas)}; "
            f"{result.head_shas - legs} legs saved",
        ),
        row(
            "(b) one leg per PR update event",
            result.events,
            f"ratio pipeline/(b) {_fraction(legs, result.events)}; "
            f"{result.events - legs} legs saved",
        ),
        f"  target: legs = distinct diffs: {verdict} ({legs} legs, {result.patch_ids} diffs)",
        row(
            "carry-forward review_pr (ms)",
            carried_ms,
            f"median {_ms(carried, statistics.median):.2f}; {len(carried)} calls",
        ),
        row(
            "stub reviewer leg review_pr (ms)",
            reviewed_ms,
            f"median {_ms(reviewed, statistics.median):.2f}; {len(reviewed)} calls",
        ),
        f"  {'ratio carried/reviewed':<36}{_fraction(carried_ms, reviewed_ms):>8}",
    ]
    return lines
