"""`kdev explain` never guesses (issue 25): a pull request older than its schedule is
named so, with the exact command that offers it again (which works), and a pull request
GitHub does not have is an error with a reason code, not "the next poll will see it"."""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from demo.run_demo import REVIEW_ARGS
from tests.e2e.test_explain_e2e import engine_pass, events, explain
from tests.e2e.test_review_e2e import BIN, REPO, Loop, make_loop


@pytest.fixture
def late(tmp_path: Path) -> Iterator[tuple[Loop, int]]:
    """A pull request opened ten minutes before its repository's schedule was added."""
    for loop in make_loop(tmp_path, same_repo_only=True):
        sim = loop.sim
        loop.li("schedule", "remove", "review", "--yes")
        sim.set_time(datetime.now(UTC) - timedelta(minutes=10))
        old = sim.open_pr(REPO, "old", {"o.py": "def f():\n    pass  # TODO\n"})
        sim.use_real_time()
        loop.li(
            "schedule", "add", "review", "--github", REPO, "--poll-interval", "1m",
            "--filter", "same_repo_only=true", "--cwd", str(loop.root / "checkout"),
            "--timeout", "5m", "--command", "kdev", "--", *REVIEW_ARGS,
        )  # fmt: skip
        sim.advance(2)
        yield loop, old.number


def test_a_pull_request_older_than_its_schedule_names_the_backfill_command(
    late: tuple[Loop, int],
) -> None:
    loop, number = late
    engine_pass(loop)
    assert events(loop, number) == []  # the poll never looks back: no decision at all
    found = explain(loop, number)
    assert found["fate"] == "before_schedule", found
    verdict = found["verdict"]
    assert ", before schedule review started (" in verdict, verdict
    assert "polls do not look back: run `li schedule cursor review --set " in verdict
    assert f"--reason 'backfill {REPO}#{number}'` to get it reviewed" in verdict
    assert "next poll" not in verdict
    assert found["pull"]["state"] == "open" and found["pull"]["created_at"]

    # The command printed is the fix: run verbatim, the next pass reviews the PR.
    command = shlex.split(verdict.split("`")[1])
    assert command[:3] == ["li", "schedule", "cursor"]
    loop.li(*command[1:])
    engine_pass(loop)
    assert events(loop, number) == [("fired", None)]
    assert explain(loop, number)["fate"] == "reviewed"

    # A pull request that changed after the last poll: both times, and the next poll.
    loop.sim.advance(120)
    fresh = loop.sim.open_pr(REPO, "fresh", {"f.py": "1\n"})
    found = explain(loop, fresh.number)
    assert found["fate"] == "not_seen", found
    assert ", after the last poll of review (" in found["verdict"]
    assert found["verdict"].endswith("); the next poll will see it")


def test_a_pull_request_github_does_not_have_is_an_error(late: tuple[Loop, int]) -> None:
    loop, _ = late
    for args in ([], ["--json"]):
        result = subprocess.run(
            [str(BIN / "kdev"), "explain", "--repo", REPO, "--pr", "999", *args],
            env=loop.env,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        assert result.returncode == 1, result.stdout + result.stderr
        assert result.stdout == ""
        [line] = result.stderr.strip().splitlines()
        assert line.startswith("error: GitHub has no pull request #999 in octo/widgets (404")
        assert line.endswith("[pr_not_found]")
