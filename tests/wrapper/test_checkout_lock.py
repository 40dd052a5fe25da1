"""Issue 10 item 9a: one lock covers every git operation that writes a checkout's object
store or worktree list (fetch, worktree add/remove/prune, merge), across processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORKERS = 6
ROUNDS = 25

WORKER = r"""
import sys
from pathlib import Path
from wrapper.git import Git
from wrapper.errors import KdevError

checkout, scratch = Path(sys.argv[1]), Path(sys.argv[2])
worker, rounds = sys.argv[3], int(sys.argv[4])
git = Git(checkout)
failures = 0
for i in range(rounds):
    try:
        git.fetch("origin", [f"+refs/heads/*:refs/kdev/w{worker}/*"])
        tree = scratch / f"wt-{worker}-{i}"
        git.worktree_add(tree, "refs/remotes/origin/main")
        if not (tree / "app.py").is_file():
            raise KdevError(f"{tree} has no files", "worktree_failed")
        git.worktree_remove(tree)
    except KdevError as exc:
        failures += 1
        print(f"{exc.reason}: {exc.message}", flush=True)
print(f"failures={failures}", flush=True)
"""


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout.strip()


def test_concurrent_fetch_and_worktree_churn_in_one_checkout_never_fails(tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    _git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    seed = tmp_path / "seed"
    _git(tmp_path, "clone", "-q", str(remote), str(seed))
    (seed / "app.py").write_text("x = 1\n")
    _git(seed, "add", "app.py")
    _git(seed, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    _git(seed, "push", "-q", "origin", "HEAD:main")
    checkout = tmp_path / "checkout"
    _git(tmp_path, "clone", "-q", str(remote), str(checkout))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(checkout), str(scratch), str(n), str(ROUNDS)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for n in range(WORKERS)
    ]
    # Meanwhile the remote keeps moving, so every fetch writes objects and refs.
    for i in range(ROUNDS):
        (seed / f"f{i}.txt").write_text(f"{i}\n")
        _git(seed, "add", ".")
        _git(seed, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", f"c{i}")
        _git(seed, "push", "-q", "origin", f"HEAD:refs/heads/b{i}")
    outputs = [proc.communicate(timeout=300)[0] for proc in procs]
    assert all(proc.returncode == 0 for proc in procs), outputs
    assert all(out.strip().endswith("failures=0") for out in outputs), outputs
    listed = _git(checkout, "worktree", "list", "--porcelain").count("worktree ")
    assert listed == 1  # only the main worktree: nothing leaked or half-registered
    assert list(scratch.iterdir()) == []
