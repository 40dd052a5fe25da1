"""kdev review-pr's carry-forward path never imports SQLAlchemy or alembic (issue 19).

The real ``kdev`` console script runs under ``python -X importtime`` (which lists every
module the process imports on stderr) against ghsim, real git and the stub reviewer:
first a review (reviewed), then the same diff after the base was merged into the head
(carried_forward). The carry-forward process must not have imported sqlalchemy or
alembic: they cost most of its time and it never touches the engine's database.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from pathlib import Path

from demo.run_demo import setup_pipeline
from ghsim import GitHubSim

BIN = Path(sys.executable).parent
REPO = "octo/widgets"
IMPORTED = re.compile(r"^import time:\s+\d+ \|\s+\d+ \|\s*([\w.]+)\s*$", re.MULTILINE)


def _review(sim: GitHubSim, checkout: Path, env: dict[str, str], pr: int) -> tuple[str, set[str]]:
    pull = sim.pull(REPO, pr)
    argv = [sys.executable, "-X", "importtime", str(BIN / "kdev"), "review-pr", "--repo", REPO]
    argv += ["--pr", str(pr), "--head-sha", pull.head_sha, "--author", "octocat", "--json"]
    result = subprocess.run(
        argv, cwd=checkout, env=env, capture_output=True, text=True, check=False, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr
    outcome = json.loads(result.stdout.strip().splitlines()[-1])["outcome"]
    return str(outcome), {name.split(".")[0] for name in IMPORTED.findall(result.stderr)}


def test_the_carry_forward_path_imports_no_database_library(tmp_path: Path) -> None:
    token = f"tok-{uuid.uuid4().hex}"
    with GitHubSim(tmp_path / "github") as sim:
        sim.add_token(token, ("review-bot", 5000))
        sim.create_repo(REPO, files={"app.py": "print('hi')\n"})
        checkout, env = setup_pipeline(sim, REPO, tmp_path, token)
        pr = sim.open_pr(REPO, "feature", {"util.py": "def f():\n    return 1\n"}).number
        outcome, imported = _review(sim, checkout, env, pr)
        assert outcome == "reviewed"
        assert {"httpx", "wrapper"} <= imported  # the import list is really read

        sim.advance(2)
        sim.commit_to_base(REPO, {"README.md": "docs\n"})
        sim.merge_base_into_head(REPO, pr)  # the same diff against the new base
        outcome, imported = _review(sim, checkout, env, pr)
        assert outcome == "carried_forward"
        assert "wrapper" in imported
        assert not {"sqlalchemy", "alembic"} & imported, sorted(imported)
