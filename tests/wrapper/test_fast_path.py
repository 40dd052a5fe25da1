"""kdev review-pr's carry-forward path imports only what it uses (issue 19).

The real ``kdev`` console script runs (its file, in an interpreter that writes the names
in ``sys.modules`` at exit) against ghsim, real git and the stub reviewer:
first a review (reviewed), then the same diff after the base was merged into the head
(carried_forward). The carry-forward process must not have imported:

- sqlalchemy or alembic: they cost most of its time and it never touches the engine's
  database;
- pydantic-settings (nor asyncio, which it pulls in): the GitHub client's four settings
  are read by wrapper.config_env, which needs ``engine.config`` only for an odd value;
- prometheus_client and the engine's metrics: kdev exports none, so its GitHub client
  does not record the rate-limit gauges;
- the modules of the other verbs (the command line imports a verb when it runs);
- the leg runner, and the mention parser that only a posted comment needs.

An eager import re-added anywhere on the path fails here, without timing anything.

The git calls of the carry-forward are counted the same way, through a ``git`` on PATH
that logs its arguments and runs the real one: no ``worktree prune`` when the checkout
has no worktree registered, and nothing asked of git twice.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from demo.run_demo import setup_pipeline
from ghsim import GitHubSim

BIN = Path(sys.executable).parent
REPO = "octo/widgets"


NOT_ON_THE_PATH = {
    "sqlalchemy",
    "alembic",
    "pydantic_settings",
    "asyncio",
    "engine.config",
    "prometheus_client",
    "engine.run.metrics",
    "wrapper.cli.authorloop",
    "wrapper.cli.loop",
    "wrapper.cli.sweep",
    "wrapper.cli.verdicts",
    "wrapper.cli.explain",
    "wrapper.cli.config",
    # what only a leg or a posted comment needs: the leg runner, and the mention parser
    # (cmark-gfm) that neutralises a comment's mentions
    "wrapper.review.leg",
    "engine.triggers",
}


# Runs the real console script file in this interpreter, then writes the names of every
# module the process imported (sys.modules at exit, however each was imported) to argv[1].
DRIVER = (
    "import atexit, json, runpy, sys; out = sys.argv.pop(1); "
    "atexit.register(lambda: open(out, 'w').write(json.dumps(sorted(sys.modules)))); "
    "sys.argv[0] = sys.argv.pop(1); runpy.run_path(sys.argv[0], run_name='__main__')"
)


def _review(sim: GitHubSim, checkout: Path, env: dict[str, str], pr: int) -> tuple[str, set[str]]:
    pull = sim.pull(REPO, pr)
    listing = checkout.parent / f"modules-{uuid.uuid4().hex}.json"
    argv = [sys.executable, "-c", DRIVER, str(listing), str(BIN / "kdev"), "review-pr"]
    argv += ["--repo", REPO, "--pr", str(pr), "--head-sha", pull.head_sha]
    argv += ["--author", "octocat", "--json"]
    result = subprocess.run(
        argv, cwd=checkout, env=env, capture_output=True, text=True, check=False, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr
    outcome = json.loads(result.stdout.strip().splitlines()[-1])["outcome"]
    names = set(json.loads(listing.read_text()))
    return str(outcome), names


@contextmanager
def _pipeline(tmp_path: Path) -> Iterator[tuple[GitHubSim, Path, dict[str, str], int]]:
    """ghsim, the demo's checkout and kdev environment, and one open PR."""
    token = f"tok-{uuid.uuid4().hex}"
    with GitHubSim(tmp_path / "github") as sim:
        sim.add_token(token, ("review-bot", 5000))
        sim.create_repo(REPO, files={"app.py": "print('hi')\n"})
        checkout, env = setup_pipeline(sim, REPO, tmp_path, token)
        pr = sim.open_pr(REPO, "feature", {"util.py": "def f():\n    return 1\n"}).number
        yield sim, checkout, env, pr


def test_the_carry_forward_path_imports_only_what_it_uses(tmp_path: Path) -> None:
    with _pipeline(tmp_path) as (sim, checkout, env, pr):
        outcome, imported = _review(sim, checkout, env, pr)
        assert outcome == "reviewed"
        # the import list is really read (the review itself needs the other modules)
        assert {"httpx", "wrapper.cli.review", "wrapper.review.leg"} <= imported

        sim.advance(2)
        sim.commit_to_base(REPO, {"README.md": "docs\n"})
        sim.merge_base_into_head(REPO, pr)  # the same diff against the new base
        outcome, imported = _review(sim, checkout, env, pr)
        assert outcome == "carried_forward"
        assert {"wrapper.cli.review", "httpx", "pydantic"} <= imported
        assert not NOT_ON_THE_PATH & imported, sorted(NOT_ON_THE_PATH & imported)


# A git that appends its arguments (one call per line) to $GIT_CALL_LOG, then runs git.
GIT_SHIM = '#!/bin/sh\nprintf "%s\\n" "$*" >> "$GIT_CALL_LOG"\nexec {git} "$@"\n'


def _subcommand(line: str) -> str:
    """``-c k=v -c k=v rev-parse --verify ...`` -> ``rev-parse --verify ...``."""
    words = line.split()
    while words[:1] == ["-c"]:
        words = words[2:]
    return " ".join(words)


def test_the_carry_forward_asks_git_nothing_twice(tmp_path: Path) -> None:
    with _pipeline(tmp_path) as (sim, checkout, env, pr):
        assert _review(sim, checkout, env, pr)[0] == "reviewed"
        sim.advance(2)
        sim.commit_to_base(REPO, {"README.md": "docs\n"})
        sim.merge_base_into_head(REPO, pr)

        shim_dir, log = tmp_path / "shim", tmp_path / "git-calls.log"
        shim_dir.mkdir()
        shim = shim_dir / "git"
        shim.write_text(GIT_SHIM.format(git=shutil.which("git")))
        shim.chmod(0o755)
        logged = {**env, "PATH": f"{shim_dir}:{env['PATH']}", "GIT_CALL_LOG": str(log)}
        assert _review(sim, checkout, logged, pr)[0] == "carried_forward"
        calls = [_subcommand(line) for line in log.read_text().splitlines()]
        head = sim.pull(REPO, pr).head_sha

    assert not [call for call in calls if call.startswith("worktree")], calls
    assert calls.count("rev-parse --git-common-dir") == 1, calls
    assert len([call for call in calls if call.startswith("rev-parse") and head in call]) == 1
    assert len([call for call in calls if call.startswith("fetch")]) == 1, calls
    assert len(calls) == len(set(calls)), calls
