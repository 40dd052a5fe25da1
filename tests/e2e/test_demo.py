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
            "TMPDIR": str(tmp_path),  # no DEMO_DIR: a temporary directory, kept
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
    # Issue 25: the files are kept (they were deleted), and the last line says where.
    first, last = out.splitlines()[0], out.splitlines()[-1]
    [kept] = [p for p in tmp_path.iterdir() if p.name.startswith("li-demo-")]
    assert first == f"demo files in {kept}"
    assert f"its files are kept in {kept} " in last and f"rm -rf {kept}" in last
    assert (kept / "li.db").is_file() and any((kept / "reviews").rglob("patch-*.md"))
