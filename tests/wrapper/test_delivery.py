"""Issue 10 item 9b: a kdev killed after the verdict is written and before it notifies
delivers the notice (and the PR comment) on its next run, exactly once. Real kill -9 of
a real ``kdev review-pr`` while its notify command is blocked."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.wrapper.reviewbench import BIN, REPO, Bench

HANDLE = "kdev"

# The notify command: while ``block`` exists it records its pid, says it started and
# sleeps forever without delivering; otherwise it appends the notification it was given.
NOTIFIER = """
if [ -e "$1/block" ]; then echo $$ > "$1/notifier.pid"; touch "$1/started"; exec sleep 600; fi
cat >> "$1/delivered.jsonl"; echo >> "$1/delivered.jsonl"
"""


def _delivered(root: Path) -> list[dict[str, object]]:
    path = root / "delivered.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _kdev(bench: Bench, env: dict[str, str], pr: int, head: str) -> list[str]:
    return [
        str(BIN / "kdev"),
        "review-pr",
        "--repo",
        REPO,
        "--pr",
        str(pr),
        "--head-sha",
        head,
        "--checkout",
        str(bench.checkout),
        "--json",
    ]


@pytest.mark.parametrize("with_comment", [False, True], ids=["notice", "notice+comment"])
def test_kill_9_between_verdict_and_notice_delivers_once_on_rerun(
    bench: Bench, with_comment: bool
) -> None:
    script = bench.root / "notifier.sh"
    script.write_text(NOTIFIER)
    notify: list[dict[str, object]] = [
        {"type": "command", "argv": ["sh", str(script), str(bench.root)]}
    ]
    if with_comment:
        notify.append({"type": "github-comment"})
    config = bench.config(notify=notify, mention_handle=HANDLE)
    env = bench.kdev_env(config)
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "x = 1\n"})
    (bench.root / "block").touch()
    proc = subprocess.Popen(
        _kdev(bench, env, pr.number, pr.head_sha),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (bench.root / "started").exists():
        time.sleep(0.05)
    assert (bench.root / "started").exists(), proc.stderr.read() if proc.stderr else ""
    os.killpg(proc.pid, signal.SIGKILL)  # the verdict is written; the notice is not
    proc.communicate(timeout=30)
    notifier = int((bench.root / "notifier.pid").read_text())
    os.kill(notifier, signal.SIGKILL)  # the orphaned notifier never delivers
    assert list((bench.root / "reviews").rglob("patch-*.md"))  # the verdict is there
    assert _delivered(bench.root) == []
    assert bench.sim.comments(REPO) == []
    (bench.root / "block").unlink()

    for _ in range(2):  # the rerun delivers what is owed; the next one has nothing owed
        result = subprocess.run(
            _kdev(bench, env, pr.number, pr.head_sha),
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        report = json.loads(result.stdout.strip().splitlines()[-1])
        assert report["outcome"] == "carried_forward"
    [note] = _delivered(bench.root)
    assert note["subject"] == f"PR review: {REPO} #{pr.number} {report['verdict']}"
    comments = bench.sim.comments(REPO)
    assert len(comments) == (1 if with_comment else 0)
    if with_comment:
        assert comments[0].id in bench.ledger().posted_comment_ids(REPO)
    assert not list((bench.root / "reviews").rglob("undelivered-*.json"))
    assert bench.legs() == 1


def test_a_normal_review_owes_nothing_afterwards(bench: Bench) -> None:
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "x = 1\n"})
    bench.review(pr.number)
    assert len(bench.notes()) == 1
    assert not list((bench.root / "reviews").rglob("undelivered-*.json"))
    bench.review(pr.number)  # carried forward: no second notice
    assert len(bench.notes()) == 1
