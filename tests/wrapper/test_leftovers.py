"""Issue 10 item 9c: the next run prunes a crashed run's leftovers, never a live run's."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.wrapper.reviewbench import BIN, REPO, ROOT, Bench, stub_reviewers
from wrapper.ledger.leftovers import OWNER_LOCK, prune_leftovers

HOLDER = (
    "import sys, time\n"
    "from wrapper.ledger.leftovers import make_scratch\n"
    "print(make_scratch('kdev-pr9-'), flush=True)\n"
    "time.sleep(120)\n"
)


def test_a_live_runs_scratch_survives_and_a_dead_ones_is_pruned(tmp_path: Path) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(temp)}
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER], env=env, stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None
    scratch = Path(holder.stdout.readline().strip())
    assert scratch.parent == temp and (scratch / OWNER_LOCK).exists()
    old = temp / "kdev-pr3-unlocked"  # no owner lock: judged by age
    old.mkdir()
    young = temp / "kdev-describe-pr4-unlocked"
    young.mkdir()
    os.utime(old, (time.time() - 7200, time.time() - 7200))
    pruned = prune_leftovers(None, None, max_age=3600, temp_dir=temp)
    assert scratch.exists() and young.exists() and not old.exists()
    assert pruned.scratch == 1
    holder.send_signal(signal.SIGKILL)
    holder.communicate(timeout=30)
    prune_leftovers(None, None, max_age=3600, temp_dir=temp)
    assert not scratch.exists() and young.exists()


def test_the_next_run_prunes_a_killed_runs_leftovers(bench: Bench) -> None:
    temp = bench.root / "tmp"
    temp.mkdir()
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n"})
    env = {**bench.kdev_env(), "TMPDIR": str(temp), "KDEV_STUB_SLEEP": "30"}
    argv = [str(BIN / "kdev"), "review-pr", "--repo", REPO, "--pr", str(pr.number)]
    argv += ["--head-sha", pr.head_sha, "--checkout", str(bench.checkout), "--json"]
    proc = subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not stub_reviewers(bench.root):
        time.sleep(0.05)
    assert stub_reviewers(bench.root)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and stub_reviewers(bench.root):
        time.sleep(0.05)

    def worktrees() -> int:
        listing = subprocess.run(
            ["git", "worktree", "list", "--porcelain"],
            cwd=bench.checkout,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return listing.count("worktree ")

    [scratch] = temp.glob("kdev-pr[0-9]*")
    [prompt] = temp.glob("kdev-prompt-*")
    assert (scratch / "worktree").is_dir()  # the leftover review tree (an export)
    assert worktrees() == 1  # an export registers no worktree
    # What an older kdev (a linked worktree) left behind: a registration whose tree is gone.
    stale = bench.root / "stale-worktree"
    subprocess.run(
        ["git", "worktree", "add", "-q", "--detach", str(stale), "HEAD"],
        cwd=bench.checkout,
        check=True,
    )
    shutil.rmtree(stale)
    assert worktrees() == 2
    # The prompt directory (it holds the diff) is pruned by age: make it old.
    os.utime(prompt, (time.time() - 7200, time.time() - 7200))
    pr_dir = bench.root / "reviews" / "octo__widgets" / f"pr-{pr.number}"
    torn = pr_dir / ".index.json.k1ll3d.tmp"  # what a kill mid-write leaves
    torn.write_text('{"half":')
    os.utime(torn, (time.time() - 3600, time.time() - 3600))

    del env["KDEV_STUB_SLEEP"]
    result = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1])["outcome"] == "reviewed"
    assert list(temp.iterdir()) == []
    assert not torn.exists() and worktrees() == 1


def test_an_old_prompt_dir_that_a_process_holds_open_is_kept(tmp_path: Path) -> None:
    temp = tmp_path / "tmp"
    prompt = temp / "kdev-prompt-live"
    prompt.mkdir(parents=True)
    (prompt / "prompt.md").write_text("the diff")
    with (prompt / "prompt.md").open("rb") as handle:  # only the child keeps it open
        reader = subprocess.Popen(["sleep", "60"], stdin=handle)
    try:
        os.utime(prompt, (time.time() - 7200, time.time() - 7200))
        prune_leftovers(None, None, max_age=3600, temp_dir=temp)
        assert prompt.exists()  # a live reviewer reads it
    finally:
        reader.kill()
        reader.wait(timeout=30)
    prune_leftovers(None, None, max_age=3600, temp_dir=temp)
    assert not prompt.exists()


def _torn(pr_dir: Path, name: str, age: float, now: float) -> Path:
    pr_dir.mkdir(parents=True, exist_ok=True)
    torn = pr_dir / f".{name}.k1ll3d.tmp"
    torn.write_text('{"half":')
    os.utime(torn, (now - age, now - age))
    return torn


def test_the_whole_ledger_is_swept_once_per_max_age_and_the_own_pr_every_run(
    tmp_path: Path,
) -> None:
    """Walking every PR's directory on every run grew with the ledger (250 ms at 10k PRs):
    the run's own PR is swept every time, the whole ledger once per TMP_MAX_AGE."""
    from wrapper.ledger.leftovers import SWEEP_STAMP, TMP_MAX_AGE

    reviews, temp = tmp_path / "reviews", tmp_path / "tmp"
    temp.mkdir()
    own, other = reviews / "o__r" / "pr-1", reviews / "o__r" / "pr-2"
    now = time.time()
    first = [_torn(own, "index", 3600, now), _torn(other, "index", 3600, now)]
    fresh = _torn(other, "verdicts", 1, now)  # a live write: never removed
    pruned = prune_leftovers(None, reviews, max_age=60, temp_dir=temp, now=now, own_dir=own)
    assert pruned.temp_files == 2 and not any(path.exists() for path in first)
    assert fresh.exists() and (reviews / SWEEP_STAMP).is_file()

    later = now + 60
    mine, theirs = _torn(own, "a", 3600, later), _torn(other, "b", 3600, later)
    pruned = prune_leftovers(None, reviews, max_age=60, temp_dir=temp, now=later, own_dir=own)
    assert pruned.temp_files == 1 and not mine.exists() and theirs.exists()

    much_later = now + TMP_MAX_AGE + 1
    pruned = prune_leftovers(None, reviews, max_age=60, temp_dir=temp, now=much_later, own_dir=own)
    assert pruned.temp_files == 2 and not theirs.exists() and not fresh.exists()


def test_a_sweep_stamp_from_the_future_does_not_stop_the_whole_sweep(tmp_path: Path) -> None:
    from wrapper.ledger.leftovers import SWEEP_STAMP

    reviews, temp = tmp_path / "reviews", tmp_path / "tmp"
    temp.mkdir()
    now = time.time()
    torn = _torn(reviews / "o__r" / "pr-2", "index", 3600, now)
    (reviews / SWEEP_STAMP).touch()
    os.utime(reviews / SWEEP_STAMP, (now + 86_400, now + 86_400))  # a clock set back
    pruned = prune_leftovers(
        None, reviews, max_age=60, temp_dir=temp, now=now, own_dir=reviews / "o__r" / "pr-1"
    )
    assert pruned.temp_files == 1 and not torn.exists()
