"""Reviewer legs per distinct diff: what patch-id dedup saves on a realistic PR trace.

A scripted trace (``random.Random(7)``) of N pull requests (default 50) in one ghsim
repository, the PRs' events interleaved. Each PR is opened, then gets a mix of:

- push: a new commit that changes what the PR does (a new diff);
- base merged into head: ``commit_to_base`` (a file no PR touches), then
  ``merge_base_into_head`` (a new head SHA, the same diff);
- identical force-push: ``force_push`` with the PR's current files, one new commit on
  the base tip (a new head SHA, the same diff);
- comment, label: ``updated_at`` moves, the head SHA does not;
- whitespace-only change: a push that re-indents ``return x`` into (or out of) an ``if``
  in the PR's ``ws.py`` (a new diff: patch-ids are whitespace-significant);
- overtaken force-push (a late event): a force-push with a changed file whose event is
  delivered only after a second force-push back to the PR's files was reviewed; its head
  was never fetched into the checkout, and review_pr runs for it last, out of order.

Every event moves the PR's ``updated_at`` (the simulator clock moves 60 s before each),
so the engine fires once per event. After each event :func:`wrapper.review.review.review_pr`
runs in this process for the PR's current head, as ``kdev review-pr`` would for that
fire: a real git checkout fetching from the bare repository, the stub reviewer
(``python -P -m wrapper.stub_reviewer``) as a command backend, a file notifier and a
ledger in the temp dir, and budgets set so high that they never defer.

Counted in the same run: the pipeline's legs (outcome ``reviewed``; every outcome is
tallied), two baselines, (a) one leg per distinct head SHA and (b) one leg per PR update
event, and the distinct diffs (patch-ids taken from the reports). The target is legs =
distinct diffs. The oracle of :mod:`tests.review_oracle` recomputes every patch-id from
ghsim's repository and reports legs per distinct fired diff (target 1.00), misses (a
diff that was the head diff when its event fired and got no leg), duplicate legs, wrong
index entries (a head mapped to a patch-id not computed from it) and verdicts for a diff
no leg saw (each target 0). The mean wall time of ``review_pr`` calls that carried a verdict forward
is set against that of calls that ran a stub reviewer leg.

Each call gets a fresh :class:`engine.github.client.GitHubClient` (and pacer), as each
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
from tests.review_oracle import leg_counts, patch_id_of, unseen_verdicts, wrong_index_entries
from wrapper.config import KdevConfig
from wrapper.errors import KdevError, Outcome
from wrapper.ledger.ledger import Ledger
from wrapper.review.review import ReviewContext, ReviewReport, ReviewRequest, review_pr

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
KINDS = ("push", "merge_base", "force_push", "comment", "label", "whitespace", "late")
KIND_WEIGHTS = (30, 20, 15, 20, 15, 10, 8)
WS_BODY = "def f(x, c):\n    if c:\n        pass\n{indent}return x\n"
LABELS = ("bug", "enhancement", "needs-review", "wip", "docs")
KIND_NAMES = {
    "open": "open",
    "push": "push (new change)",
    "merge_base": "base merged into head",
    "force_push": "identical force-push",
    "comment": "comment",
    "label": "label",
    "whitespace": "whitespace-only change",
    "late": "overtaken force-push (late)",
}


@dataclass(frozen=True)
class Event:
    """One scripted PR update: ``kind`` on PR ``index`` (1-based, in opening order)."""

    kind: str
    index: int
    files: dict[str, str] | None = None  # open, push, whitespace: the change;
    # force_push: all files; late: all files of the overtaken head
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
            change = {
                f"pr{opened}/change.py": content(opened, 0),
                f"pr{opened}/ws.py": WS_BODY.format(indent="    "),
            }
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
        elif kind == "whitespace":
            path = f"pr{index}/ws.py"
            inside = files[index][path] == WS_BODY.format(indent="    ")
            change = {path: WS_BODY.format(indent="        " if inside else "    ")}
            files[index].update(change)
            events.append(Event("whitespace", index, change))
        elif kind == "late":
            overtaken = {**files[index], f"pr{index}/change.py": content(index, -1)}
            events.append(Event("late", index, overtaken))
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
    fired_diffs: int = 0  # distinct (PR, diff) that were the head diff when fired
    misses: int = 0  # fired diffs with no leg
    duplicate_legs: int = 0  # legs beyond the first for one (PR, diff)
    wrong_index: int = 0  # index entries mapping a head to another head's patch-id
    unseen: int = 0  # verdicts for a diff no leg saw
    times: dict[str, list[float]] = field(default_factory=dict)  # outcome -> seconds
    wall_seconds: float = 0.0

    @property
    def legs(self) -> int:
        return self.outcomes[Outcome.REVIEWED.value]

    @property
    def legs_per_diff(self) -> float:
        return self.legs / self.fired_diffs if self.fired_diffs else float("nan")

    @property
    def target_met(self) -> bool:
        return (
            self.legs == self.fired_diffs
            and self.misses == self.duplicate_legs == self.wrong_index == self.unseen == 0
        )


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
                # The stub runs in the reviewer sandbox like a real reviewer would.
                "sandbox_paths": [sys.prefix, sys.base_prefix, str(PROJECT_ROOT)],
                "budgets": BUDGETS,
            }
        )
        self.environ = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(root),
            "PYTHONPATH": str(PROJECT_ROOT),
            "GITHUB_TOKEN": TOKEN,
        }

    def review(
        self, ledger: Ledger, number: int, head: str | None = None
    ) -> tuple[ReviewReport, float]:
        """One fire for ``head`` (default: PR ``number``'s current head); returns the
        report and seconds."""
        head = head or self.sim.pull(REPO, number).head_sha
        request = ReviewRequest(repo=REPO, pr=number, head_sha=head, checkout=self.checkout)
        with GitHubClient(self.settings, pacer=RequestPacer()) as client:
            ctx = ReviewContext(
                config=self.config, ledger=ledger, github=client, environ=self.environ
            )
            started = time.perf_counter()
            report = review_pr(request, ctx)
            return report, time.perf_counter() - started


def _apply(sim: GitHubSim, numbers: dict[int, int], event: Event) -> tuple[int, str | None]:
    """Make ``event`` happen in the simulator; returns the PR number and, for a late
    event, the overtaken head (reviewed after the current one)."""
    sim.advance(EVENT_STEP_SECONDS)
    if event.kind == "open":
        assert event.files is not None
        pull = sim.open_pr(REPO, f"pr{event.index}", event.files, title=f"Change {event.index}")
        numbers[event.index] = pull.number
        return pull.number, None
    number = numbers[event.index]
    if event.kind in ("push", "whitespace"):
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
    elif event.kind == "late":
        assert event.files is not None
        current = _tree_files(sim, number)
        overtaken = sim.force_push(REPO, number, event.files)
        sim.advance(EVENT_STEP_SECONDS)
        sim.force_push(REPO, number, current)
        return number, overtaken
    else:
        raise ValueError(f"unknown event kind {event.kind!r}")
    return number, None


def _tree_files(sim: GitHubSim, number: int) -> dict[str, str]:
    """The PR's own files at its head (those that differ from the base)."""
    bare = sim.repo_path(REPO)
    head = sim.pull(REPO, number).head_sha
    names = subprocess.run(
        ["git", "diff", "--name-only", f"main...{head}"],
        cwd=bare,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return {
        name: subprocess.run(
            ["git", "show", f"{head}:{name}"], cwd=bare, capture_output=True, text=True, check=True
        ).stdout
        for name in names
    }


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
        bare = sim.repo_path(REPO)
        fired: set[tuple[int, str]] = set()  # (PR, diff) that was the head diff when fired
        excused: set[tuple[int, str]] = set()  # ... whose fire deferred or failed
        for event in trace:
            number, late = _apply(sim, numbers, event)
            head = sim.pull(REPO, number).head_sha
            heads.add((number, head))
            diff = patch_id_of(bare, "main", head)
            for target in (head, late):
                if target is None:
                    continue
                try:
                    report, seconds = pipeline.review(ledger, number, target)
                except KdevError as exc:
                    outcome = f"error:{exc.reason}"
                else:
                    outcome = report.outcome.value
                    times.setdefault(outcome, []).append(seconds)
                    if report.patch_id is not None:
                        patch_ids.add(report.patch_id)
                        pr_patch_ids.add((number, report.patch_id))
                kind = event.kind if target == head else "late event itself"
                outcomes[outcome] += 1
                by_kind.setdefault(kind, Counter())[outcome] += 1
                if target == head and diff is not None:
                    fired.add((number, diff))
                    if outcome.startswith("error:") or outcome == "deferred_budget":
                        excused.add((number, diff))
        ledger_legs = len(ledger.legs_since(REPO, trace_start))
        legs_by_diff = leg_counts(ledger, REPO, bare)
        prs_seen = sorted(numbers.values())
        wrong = len(wrong_index_entries(ledger, REPO, prs_seen, bare))
        unseen = len(unseen_verdicts(ledger, REPO, prs_seen, bare))
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
        fired_diffs=len(fired),
        misses=sum(1 for key in fired - excused if legs_by_diff[key] == 0),
        duplicate_legs=sum(count - 1 for count in legs_by_diff.values() if count > 1),
        wrong_index=wrong,
        unseen=unseen,
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
    late_order = [*order, "late event itself"]

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
    for kind in late_order:
        lines.append(
            f"    after {KIND_NAMES.get(kind, kind):<28}"
            f"{tally(result.by_kind.get(kind, Counter()))}"
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
        row(
            "legs per distinct fired diff",
            result.legs_per_diff,
            f"{legs} legs / {result.fired_diffs} (PR, diff) that were the head diff when fired",
        ),
        row("misses (fired diff, no leg)", result.misses),
        row("duplicate legs (same PR and diff)", result.duplicate_legs),
        row("wrong index entries", result.wrong_index, "head -> patch-id not its own"),
        row("verdicts for a diff no leg saw", result.unseen),
        f"  target: 1.00 legs per diff, 0 misses, 0 duplicates, 0 wrong entries: {verdict}",
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
