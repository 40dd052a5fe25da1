"""Findings on real PR rounds: where they land, what is lost, what GitHub is sent.

The trace (``bench/data/findings_trace.json``, cut by :mod:`bench.findings_trace` from
this repository's own history; ``bench/data/README.md``) holds real commits, each one PR
round: base = the parent's excerpt of every touched file, head = the commit's. Per case
one ghsim repository is made with the base files, a PR opens with the head files, and
:func:`wrapper.review.review.review_pr` runs once with ``review_post`` on and the scripted
reviewer :mod:`bench.findings_reviewer` (a command backend), which emits findings on
changed lines, unchanged context lines, suggestions on changed lines (anchorable),
lines outside the diff and a path the head lacks (unanchorable).

Everything is counted from ghsim's state, not from kdev's report:

- landed: an anchorable finding with a review comment at its path, line (and start line)
  whose body holds its title;
- in the summary: a finding whose ``path:line`` and title stand in the review's body;
- lost: a finding that is neither (goal 0);
- GitHub writes: requests other than GET that reached ghsim during the round, and
  notifications: what GitHub notifies the PR's people of, one per submitted review and
  one per comment outside a review. The baseline, in the same run, is one comment per
  finding: as many writes and notifications as findings;
- suggestions: every posted ```suggestion is committed with ghsim's ``apply_suggestion``,
  and the file is compared with the head's file with the commented lines replaced by the
  reviewer's replacement (goal: all applied, all equal).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.findings_reviewer import LOG_ENV
from engine.config import Settings
from engine.github import GitHubClient, RequestPacer
from ghsim import GitHubSim
from ghsim.core import GhsimError
from ghsim.model import Comment, Review
from wrapper.config import KdevConfig
from wrapper.ledger.ledger import Ledger
from wrapper.review.review import ReviewContext, ReviewRequest, review_pr

PROJECT_ROOT = Path(__file__).resolve().parent.parent
TRACE = Path(__file__).resolve().parent / "data" / "findings_trace.json"
TOKEN = "bench-findings-token"
REVIEWER = [sys.executable, "-P", "-m", "bench.findings_reviewer"]
ANCHORABLE = ("changed", "context", "suggestion")
UNANCHORABLE = ("outside", "missing")
BUDGETS = {
    "daily_legs_per_repo": 100_000,
    "daily_rounds_per_pr": 100_000,
    "max_concurrent_legs_per_repo": 4,
}


@dataclass
class Round:
    """One case's counts, taken from ghsim."""

    commit: str
    findings: dict[str, int] = field(default_factory=dict)  # kind -> emitted
    landed: dict[str, int] = field(default_factory=dict)  # kind -> as a line comment there
    in_summary: dict[str, int] = field(default_factory=dict)  # kind -> path:line in body
    lost: list[str] = field(default_factory=list)  # "[kind] path:line"
    writes: int = 0
    notifications: int = 0
    reviews: int = 0
    suggestions_posted: int = 0
    range_suggestions: int = 0  # of them, on two lines (start_line..line)
    suggestions_applied: int = 0
    suggestion_failures: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def emitted(self) -> int:
        return sum(self.findings.values())


@dataclass
class FindingsResult:
    rounds: list[Round]
    wall_seconds: float

    def total(self, attr: str, kinds: tuple[str, ...]) -> int:
        return sum(getattr(r, attr).get(k, 0) for r in self.rounds for k in kinds)

    @property
    def anchorable(self) -> int:
        return self.total("findings", ANCHORABLE)

    @property
    def landed(self) -> int:
        return self.total("landed", ANCHORABLE)

    @property
    def unanchorable(self) -> int:
        return self.total("findings", UNANCHORABLE)

    @property
    def summarised(self) -> int:
        return self.total("in_summary", UNANCHORABLE)

    @property
    def lost(self) -> int:
        return sum(len(r.lost) for r in self.rounds)

    @property
    def writes_per_round(self) -> set[int]:
        return {r.writes for r in self.rounds}

    @property
    def suggestions_failed(self) -> int:
        return sum(len(r.suggestion_failures) for r in self.rounds)


def load_trace(path: Path = TRACE) -> list[dict[str, Any]]:
    data: Any = json.loads(path.read_text(encoding="utf-8"))
    cases: list[dict[str, Any]] = data["cases"]
    return cases


def _config(root: Path) -> KdevConfig:
    return KdevConfig.model_validate(
        {
            "reviewer": {
                "backend": "command",
                "argv": REVIEWER,
                "model": "scripted",
                "timeout_seconds": 60,
            },
            "notify": [{"type": "file", "path": str(root / "notes.jsonl")}],
            "reviewer_env": ["PYTHONPATH", LOG_ENV],
            "sandbox": "off",  # the reviewer writes its log outside the worktree
            "budgets": BUDGETS,
            "mention_handle": "kdev",
            "review_post": {"enabled": True},
        }
    )


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout


def _notifications(sim: GitHubSim, repo: str, pr: int) -> tuple[int, list[Review]]:
    """GitHub notifies once per submitted review and once per comment outside one."""
    reviews = [r for r in sim.reviews(repo, pr) if r.submitted_at is not None]
    loose = [c for c in sim.comments(repo) if c.pull_number == pr and c.review_id is None]
    return len(reviews) + len(loose), reviews


def _landed(finding: dict[str, Any], comments: list[Comment]) -> Comment | None:
    for comment in comments:
        if (
            comment.path == finding["path"]
            and comment.line == finding["line"]
            and comment.start_line == finding["start_line"]
            and finding["title"] in comment.body
        ):
            return comment
    return None


def _location(finding: dict[str, Any]) -> str:
    if finding["start_line"] is None:
        return f"{finding['path']}:{finding['line']}"
    return f"{finding['path']}:{finding['start_line']}-{finding['line']}"


def _apply(sim: GitHubSim, repo: str, pr: int, finding: dict[str, Any], comment: Comment) -> str:
    """Commit the suggestion; '' when the file then equals the replacement, else why not."""
    bare = sim.repo_path(repo)
    path = finding["path"]
    before = _git(bare, "show", f"{sim.pull(repo, pr).head_sha}:{path}")
    lines = before.splitlines(keepends=True)
    first = (finding["start_line"] or finding["line"]) - 1
    lines[first : finding["line"]] = finding["replacement"].splitlines(keepends=True)
    try:
        sha = sim.apply_suggestion(repo, comment.id)
    except GhsimError as exc:
        return f"{_location(finding)}: refused: {exc}"
    if _git(bare, "show", f"{sha}:{path}") != "".join(lines):
        return f"{_location(finding)}: the file differs from the replacement"
    return ""


def count_round(
    sim: GitHubSim, repo: str, pr: int, emitted: list[dict[str, Any]], done: Round
) -> None:
    """Fill ``done`` from ghsim: where each of the ``emitted`` findings stands, the
    notifications, and the suggestions applied one after another."""
    done.notifications, reviews = _notifications(sim, repo, pr)
    done.reviews = len(reviews)
    comments = [c for r in reviews for c in sim.review_comments(repo, pr, r.id)]
    bodies = "\n".join(r.body for r in reviews)
    suggested: list[tuple[dict[str, Any], Comment]] = []
    for finding in emitted:
        kind = finding["title"][1:].split("]", 1)[0]
        done.findings[kind] = done.findings.get(kind, 0) + 1
        comment = _landed(finding, comments)
        if comment is not None:
            done.landed[kind] = done.landed.get(kind, 0) + 1
            if "```suggestion" in comment.body:
                suggested.append((finding, comment))
        elif _location(finding) in bodies and finding["title"] in bodies:
            done.in_summary[kind] = done.in_summary.get(kind, 0) + 1
        else:
            done.lost.append(finding["title"])
    done.suggestions_posted = len(suggested)
    done.range_suggestions = sum(1 for f, _ in suggested if f["start_line"] is not None)
    for finding, comment in suggested:
        failure = _apply(sim, repo, pr, finding, comment)
        if failure:
            done.suggestion_failures.append(failure)
        else:
            done.suggestions_applied += 1


def run_case(sim: GitHubSim, root: Path, index: int, case: dict[str, Any]) -> Round:
    """One PR round of ``case`` through review_pr; its counts from ghsim."""
    repo = f"bench/case{index:02d}"
    files = case["files"]
    base = {path: f["before"] for path, f in files.items() if f["before"] is not None}
    sim.create_repo(repo, files=base or {"README.md": "findings bench\n"})
    checkout = root / f"checkout{index:02d}"
    _git(root, "clone", "-q", str(sim.repo_path(repo)), str(checkout))
    pr = sim.open_pr(repo, "case", {p: f["after"] for p, f in files.items()}).number
    log = root / f"findings{index:02d}.jsonl"
    environ = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(root),
        "PYTHONPATH": str(PROJECT_ROOT),
        "GITHUB_TOKEN": TOKEN,
        LOG_ENV: str(log),
    }
    settings = Settings(github_api_url=sim.url, github_token=TOKEN)
    head = sim.pull(repo, pr).head_sha
    request = ReviewRequest(repo=repo, pr=pr, head_sha=head, checkout=checkout)
    before = len(sim.requests)
    with GitHubClient(settings, pacer=RequestPacer()) as client:
        ctx = ReviewContext(
            config=_config(root), ledger=Ledger(root / "reviews"), github=client, environ=environ
        )
        started = time.perf_counter()
        review_pr(request, ctx)
        seconds = time.perf_counter() - started
    writes = sum(1 for r in sim.requests[before:] if r.method != "GET")
    emitted = [f for line in log.read_text().splitlines() for f in json.loads(line)["findings"]]
    done = Round(commit=case["commit"], writes=writes, seconds=seconds)
    count_round(sim, repo, pr, emitted, done)
    return done


def measure(cases: int | None, workdir: Path, trace: Path = TRACE) -> FindingsResult:
    """Run the first ``cases`` cases of the trace (None: all)."""
    root = workdir / "findings"
    root.mkdir()
    chosen = load_trace(trace)[:cases]
    began = time.perf_counter()
    with GitHubSim(root / "github") as sim:
        sim.add_token(TOKEN, ("review-bot", 4242))
        rounds = [run_case(sim, root, n, case) for n, case in enumerate(chosen, start=1)]
    return FindingsResult(rounds=rounds, wall_seconds=time.perf_counter() - began)


def _share(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.1f} %" if whole else "n/a"


def report(result: FindingsResult) -> list[str]:
    """The printed lines for one run."""
    rounds = len(result.rounds)
    emitted = sum(r.emitted for r in result.rounds)
    writes = sum(r.writes for r in result.rounds)
    notes = sum(r.notifications for r in result.rounds)
    posted = sum(r.suggestions_posted for r in result.rounds)
    applied = sum(r.suggestions_applied for r in result.rounds)
    ranges = sum(r.range_suggestions for r in result.rounds)
    per_round = [r.writes for r in result.rounds]
    kinds = ", ".join(f"{k} {result.total('findings', (k,))}" for k in (*ANCHORABLE, *UNANCHORABLE))

    def met(ok: bool) -> str:
        return "met" if ok else "NOT met"

    lines = [
        f"findings on real PR rounds ({rounds} commits of this repository, scripted "
        f"reviewer, review_post on; {result.wall_seconds:.1f} s)",
        f"  findings emitted: {emitted} ({kinds})",
        f"  anchorable landed on their line: {result.landed}/{result.anchorable} "
        f"= {_share(result.landed, result.anchorable)}  goal 100 %: "
        f"{met(result.landed == result.anchorable)}",
        f"  unanchorable in the summary with path:line: {result.summarised}/{result.unanchorable}",
        f"  findings lost: {result.lost}  goal 0: {met(result.lost == 0)}",
        f"  GitHub writes per round: {writes / rounds:.2f} (min {min(per_round)}, "
        f"max {max(per_round)}); baseline one comment per finding: "
        f"{emitted / rounds:.2f}; ratio {writes / emitted:.3f}",
        f"  notifications per round: {notes / rounds:.2f}; baseline: {emitted / rounds:.2f}; "
        f"ratio {notes / emitted:.3f}",
        f"  suggestions posted {posted} ({ranges} on two lines), applied with the file "
        f"equal to the replacement {applied}, failed {result.suggestions_failed}  goal all: "
        f"{met(applied == posted and result.suggestions_failed == 0)}",
    ]
    for r in result.rounds:
        for item in r.lost:
            lines.append(f"    lost in {r.commit[:10]}: {item}")
        for item in r.suggestion_failures:
            lines.append(f"    suggestion failed in {r.commit[:10]}: {item}")
    return lines


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory(prefix="li-bench-") as scratch:
        print("\n".join(report(measure(None, Path(scratch)))))
