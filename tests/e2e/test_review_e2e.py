"""The whole loop: ghsim + real git + `li engine run --once` + `kdev review-pr` + stub reviewer."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from demo.run_demo import REVIEW_ARGS, setup_pipeline
from ghsim import GitHubSim

BIN = Path(sys.executable).parent
REPO = "octo/widgets"
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Loop:
    sim: GitHubSim
    env: dict[str, str]
    root: Path

    def li(self, *args: str) -> str:
        result = subprocess.run(
            [str(BIN / "li"), *args],
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout

    def kdev(self, *args: str) -> str:
        result = subprocess.run(
            [str(BIN / "kdev"), *args],
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout

    def engine_pass(self) -> list[dict[str, object]]:
        """Make the schedule due, run one engine pass, return the runs it produced."""
        before = {
            r["id"] for r in json.loads(self.li("schedule", "runs", "--json", "--limit", "1000"))
        }
        self.li("schedule", "trigger", "review")
        self.li("engine", "run", "--once")
        runs = json.loads(self.li("schedule", "runs", "--json", "--limit", "1000"))
        return [r for r in runs if r["id"] not in before]

    def outcomes(self, runs: list[dict[str, object]]) -> list[tuple[int, str]]:
        result = []
        for run in runs:
            detail = json.loads(self.li("schedule", "run", str(run["id"]), "--json"))
            assert detail["status"] == "succeeded", detail
            line = json.loads(detail["stdout_tail"].strip().splitlines()[-1])
            result.append((int(line["pr"]), str(line["outcome"])))
        return sorted(result)

    def legs(self) -> int:
        path = self.root / "reviews" / "octo__widgets" / "legs.jsonl"
        return len(path.read_text().splitlines()) if path.exists() else 0


def make_loop(tmp_path: Path, same_repo_only: bool) -> Iterator[Loop]:
    token = f"tok-{uuid.uuid4().hex}"
    with GitHubSim(tmp_path / "github") as sim:
        sim.add_token(token, ("review-bot", 5000))
        sim.create_repo(REPO, files={"app.py": "print('hi')\n"})
        checkout, env = setup_pipeline(sim, REPO, tmp_path, token)
        loop = Loop(sim, env, tmp_path)
        same = "true" if same_repo_only else "false"
        loop.li(
            "schedule",
            "add",
            "review",
            "--github",
            REPO,
            "--poll-interval",
            "1m",
            "--filter",
            f"same_repo_only={same}",
            "--cwd",
            str(checkout),
            "--timeout",
            "5m",
            "--command",
            "kdev",
            "--",
            *REVIEW_ARGS,
            "--json",
        )
        sim.advance(2)
        yield loop


@pytest.fixture
def loop(tmp_path: Path) -> Iterator[Loop]:
    yield from make_loop(tmp_path, same_repo_only=True)


def test_each_distinct_diff_is_reviewed_exactly_once(loop: Loop) -> None:
    sim = loop.sim
    pr = sim.open_pr(REPO, "feature", {"util.py": "def f():\n    pass  # TODO\n"})
    assert loop.outcomes(loop.engine_pass()) == [(pr.number, "reviewed")]
    assert loop.legs() == 1
    notes = (loop.root / "notifications.jsonl").read_text()
    assert "REQUEST_CHANGES" in notes

    sim.advance(2)
    sim.push(REPO, pr.number, {"util.py": "def f():\n    return 1\n"})  # the fix
    assert loop.outcomes(loop.engine_pass()) == [(pr.number, "reviewed")]
    assert loop.legs() == 2

    sim.advance(2)
    sim.commit_to_base(REPO, {"README.md": "docs\n"})
    sim.merge_base_into_head(REPO, pr.number)  # same diff against the new base
    assert loop.outcomes(loop.engine_pass()) == [(pr.number, "carried_forward")]
    assert loop.legs() == 2

    sim.advance(2)
    sim.force_push(REPO, pr.number, {"util.py": "def f():\n    return 1\n"})  # identical
    assert loop.outcomes(loop.engine_pass()) == [(pr.number, "carried_forward")]

    sim.advance(2)
    sim.comment(REPO, pr.number, "looks good")
    sim.label(REPO, pr.number, "ready")
    outcomes = loop.outcomes(loop.engine_pass())
    assert outcomes and all(o == "carried_forward" for _, o in outcomes)
    assert loop.legs() == 2
    rows = json.loads(loop.kdev("verdicts", "--json"))
    kinds = sorted(str(r["kind"]) for r in rows)
    assert kinds.count("reviewed") == 2 and "carried" in kinds


@pytest.mark.parametrize("same_repo_only", [True, False])
def test_a_fork_pr_never_reaches_the_reviewer(tmp_path: Path, same_repo_only: bool) -> None:
    for loop in make_loop(tmp_path, same_repo_only):
        pr = loop.sim.open_pr(
            REPO, "evil", {"app.py": "import os  # TODO\n"}, from_fork="mallory/widgets"
        )
        runs = loop.engine_pass()
        if same_repo_only:
            assert runs == []  # the engine's filter excluded it
        else:
            assert loop.outcomes(runs) == [(pr.number, "skipped_fork")]  # the backstop
        assert loop.legs() == 0
