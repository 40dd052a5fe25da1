"""`make demo` keeps working: the demo script runs end to end and shows both programs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_demo_runs_the_whole_pipeline(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "demo.run_demo"],
        cwd=ROOT,
        env={
            "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
            "HOME": str(tmp_path),
            "DEMO_DIR": str(tmp_path / "demo"),
        },
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "REQUEST_CHANGES" in out and "APPROVE" in out and "carried" in out
    assert "review-prs  healthy" in out
    assert "0 did not succeed" in out
    # It ends with kdev explain for the fork PR and the carried-forward PR.
    assert "not reviewed: excluded by same_repo_only (fork)" in out
    assert "reviewed APPROVE carried forward" in out
