"""A bounded model-based test of review integrity (issue 10): hypothesis drives ghsim
and the real review-pr workflow (real git, the stub reviewer as a real process, the
ledger on disk) through generated PR lifecycles: pushes, identical-tree force-pushes,
rebases without conflict, base merges, whitespace-only changes and late events for
heads the PR has left. The oracle (tests/review_oracle.py) recomputes every patch-id
from the simulator's own repository and checks after every step:

- every diff that was the PR's head diff when an event fired got exactly one leg;
- no diff got a second leg;
- no index entry maps a head to a patch-id not computed from it;
- no verdict exists for a diff no reviewer saw.

Bounded (a few examples of a few steps) to fit the test suite; the same trace kinds run
longer in ``bench/legs.py``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from engine.config import Settings
from engine.github import GitHubClient, RequestPacer
from ghsim import GitHubSim
from tests.review_oracle import leg_counts, patch_id_of, unseen_verdicts, wrong_index_entries
from wrapper.config import KdevConfig
from wrapper.errors import Outcome
from wrapper.ledger.ledger import Ledger
from wrapper.review.review import ReviewContext, ReviewReport, ReviewRequest, review_pr

REPO = "model/widgets"
ROOT = Path(__file__).resolve().parents[2]
STUB = [sys.executable, "-P", "-m", "wrapper.stub_reviewer"]
MAX_PRS = 2
WS_BODY = "def f(x, c):\n    if c:\n        pass\n{indent}return x\n"


class ReviewModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="kdev-model-"))
        self.token = f"tok-{uuid.uuid4().hex}"
        self.sim = GitHubSim(self.root / "github").start()
        self.sim.add_token(self.token, ("review-bot", 5000))
        self.sim.create_repo(REPO, files={"app.py": "print('hi')\n"})
        self.bare = self.sim.repo_path(REPO)
        self.checkout = self.root / "checkout"
        subprocess.run(["git", "clone", "-q", str(self.bare), str(self.checkout)], check=True)
        self.ledger = Ledger(self.root / "reviews")
        self.config = KdevConfig.model_validate(
            {
                "reviewer": {"backend": "command", "argv": STUB, "timeout_seconds": 60},
                "notify": [{"type": "file", "path": str(self.root / "notes.jsonl")}],
                "reviewer_env": ["PYTHONPATH"],
                # The stub runs in the reviewer sandbox, as a real reviewer would.
                "sandbox_paths": [sys.prefix, sys.base_prefix, str(ROOT)],
                "budgets": {"daily_legs_per_repo": 10_000, "daily_rounds_per_pr": 10_000},
            }
        )
        self.environ = {
            "PATH": os.environ["PATH"],
            "HOME": str(self.root),
            "PYTHONPATH": str(ROOT),
            "GITHUB_TOKEN": self.token,
        }
        self.prs: list[int] = []
        self.files: dict[int, dict[str, str]] = {}
        self.heads: dict[int, list[str]] = {}
        self.fired: list[tuple[int, str | None, Outcome]] = []  # current-head fires
        self.revision = 0

    def teardown(self) -> None:
        self.sim.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    # --- the pipeline -------------------------------------------------------------------

    def review(self, pr: int, head: str) -> ReviewReport:
        settings_ = Settings(github_api_url=self.sim.url, github_token=self.token)
        with GitHubClient(settings_, pacer=RequestPacer(1_000_000)) as client:
            ctx = ReviewContext(
                config=self.config, ledger=self.ledger, github=client, environ=self.environ
            )
            request = ReviewRequest(repo=REPO, pr=pr, head_sha=head, checkout=self.checkout)
            return review_pr(request, ctx)

    def fire(self, pr: int) -> None:
        """The engine fires review-pr for the PR's current head."""
        head = self.sim.pull(REPO, pr).head_sha
        self.heads[pr].append(head)
        report = self.review(pr, head)
        self.fired.append((pr, patch_id_of(self.bare, "main", head), report.outcome))

    def content(self, todo: bool) -> str:
        self.revision += 1
        return f"value = {self.revision}{'  # TODO' if todo else ''}\n"

    # --- PR lifecycles ------------------------------------------------------------------

    @precondition(lambda self: len(self.prs) < MAX_PRS)
    @rule(todo=st.booleans())
    def open_pr(self, todo: bool) -> None:
        files = {
            f"p{len(self.prs)}/a.py": self.content(todo),
            f"p{len(self.prs)}/ws.py": WS_BODY.format(indent="    "),
        }
        self.sim.advance(2)
        pull = self.sim.open_pr(REPO, f"b{len(self.prs)}", files)
        self.prs.append(pull.number)
        self.files[pull.number] = dict(files)
        self.heads[pull.number] = []
        self.fire(pull.number)

    def pick(self, index: int) -> int:
        return self.prs[index % len(self.prs)]

    @precondition(lambda self: self.prs)
    @rule(index=st.integers(0, MAX_PRS - 1), todo=st.booleans())
    def push(self, index: int, todo: bool) -> None:
        pr = self.pick(index)
        path = next(p for p in self.files[pr] if p.endswith("a.py"))
        change = {path: self.content(todo)}
        self.files[pr].update(change)
        self.sim.advance(2)
        self.sim.push(REPO, pr, change)
        self.fire(pr)

    @precondition(lambda self: self.prs)
    @rule(index=st.integers(0, MAX_PRS - 1))
    def whitespace_only_change(self, index: int) -> None:
        pr = self.pick(index)
        path = next(p for p in self.files[pr] if p.endswith("ws.py"))
        inside = self.files[pr][path] == WS_BODY.format(indent="    ")
        change = {path: WS_BODY.format(indent="        " if inside else "    ")}
        self.files[pr].update(change)
        self.sim.advance(2)
        self.sim.push(REPO, pr, change)
        self.fire(pr)

    @precondition(lambda self: self.prs)
    @rule(index=st.integers(0, MAX_PRS - 1), rebase=st.booleans())
    def identical_force_push(self, index: int, rebase: bool) -> None:
        pr = self.pick(index)
        self.sim.advance(2)
        if rebase:  # the base moves on first: a rebase without conflict
            self.sim.commit_to_base(REPO, {f"base/{self.revision}.txt": "base\n"})
            self.revision += 1
        self.sim.force_push(REPO, pr, dict(self.files[pr]))
        self.fire(pr)

    @precondition(lambda self: self.prs)
    @rule(index=st.integers(0, MAX_PRS - 1))
    def merge_base(self, index: int) -> None:
        pr = self.pick(index)
        self.sim.advance(2)
        self.sim.commit_to_base(REPO, {f"base/{self.revision}.txt": "base\n"})
        self.revision += 1
        self.sim.merge_base_into_head(REPO, pr)
        self.fire(pr)

    @precondition(lambda self: self.prs)
    @rule(index=st.integers(0, MAX_PRS - 1), todo=st.booleans())
    def event_overtaken_by_a_force_push(self, index: int, todo: bool) -> None:
        """A force-push whose event is delivered only after the next force-push was
        reviewed: its head was never fetched into the checkout."""
        pr = self.pick(index)
        path = next(p for p in self.files[pr] if p.endswith("a.py"))
        self.sim.advance(2)
        overtaken = self.sim.force_push(REPO, pr, {**self.files[pr], path: self.content(todo)})
        self.files[pr][path] = self.content(todo)
        self.sim.advance(2)
        self.sim.force_push(REPO, pr, dict(self.files[pr]))
        self.fire(pr)
        report = self.review(pr, overtaken)  # late, out of order
        assert report.outcome in (Outcome.SKIPPED_STALE_HEAD, Outcome.CARRIED_FORWARD)
        assert report.patch_id in (None, patch_id_of(self.bare, "main", overtaken))

    @precondition(lambda self: any(len(h) > 1 for h in self.heads.values()))
    @rule(data=st.data())
    def late_event(self, data: st.DataObject) -> None:
        """An event for a head the PR has since left arrives late (out of order)."""
        pr = data.draw(st.sampled_from([p for p, h in self.heads.items() if len(h) > 1]))
        old = data.draw(st.sampled_from(self.heads[pr][:-1]))
        report = self.review(pr, old)
        current = self.sim.pull(REPO, pr).head_sha
        if old != current:
            assert report.outcome in (Outcome.SKIPPED_STALE_HEAD, Outcome.CARRIED_FORWARD)

    # --- the oracle ---------------------------------------------------------------------

    @invariant()
    def no_index_entry_names_another_heads_diff(self) -> None:
        assert wrong_index_entries(self.ledger, REPO, self.prs, self.bare) == []

    @invariant()
    def no_verdict_for_a_diff_no_reviewer_saw(self) -> None:
        assert unseen_verdicts(self.ledger, REPO, self.prs, self.bare) == []

    @invariant()
    def every_fired_head_diff_got_exactly_one_leg(self) -> None:
        legs = leg_counts(self.ledger, REPO, self.bare)
        assert all(count == 1 for count in legs.values()), legs
        for pr, diff, outcome in self.fired:
            if diff is None:
                assert outcome is Outcome.SKIPPED_EMPTY_DIFF
            else:
                assert legs[(pr, diff)] == 1, (pr, diff, outcome)


ReviewModel.TestCase.settings = settings(
    max_examples=12,
    stateful_step_count=10,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestReviewModel = ReviewModel.TestCase
