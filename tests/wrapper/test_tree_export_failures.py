"""How the review tree's export fails: closed, with ``worktree_failed`` and one line,
when git's answers cannot be trusted; by a skip when only an entry is wrong (D67)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from wrapper.errors import WorktreeError
from wrapper.git import Git

REAL_GIT = shutil.which("git") or "git"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    (path / "a.txt").write_text("a\n")
    subprocess.run(["git", "-C", str(path), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(path), "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "1"],
        check=True,
    )
    return path


def fake_git(tmp_path: Path, cat_file: str) -> dict[str, str]:
    """An environment whose ``git`` runs ``cat_file`` (sh) for ``cat-file`` and the real
    git for everything else."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    script = bindir / "git"
    script.write_text(
        "#!/bin/sh\n"
        'for arg in "$@"; do [ "$arg" = cat-file ] && { ' + cat_file + "; exit; }; done\n"
        f'exec {REAL_GIT} "$@"\n'
    )
    script.chmod(0o755)
    return {"PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}", "HOME": str(tmp_path)}


def export_error(repo: Path, dest: Path, env: dict[str, str], timeout: float = 30) -> str:
    with pytest.raises(WorktreeError) as caught:
        Git(repo, env=env, timeout=timeout).export_tree("HEAD", dest)
    assert caught.value.reason == "worktree_failed"
    assert "\n" not in caught.value.message
    return caught.value.message


def test_a_cat_file_that_hangs_is_killed_at_the_timeout(tmp_path: Path, repo: Path) -> None:
    pidfile = tmp_path / "sleeper.pid"
    env = fake_git(tmp_path, f"sleep 60 & echo $! > {pidfile}; wait; exit 0")
    started = time.monotonic()
    message = export_error(repo, tmp_path / "tree", env, timeout=1)
    assert "timed out after 1s" in message and time.monotonic() - started < 20
    pid = int(pidfile.read_text())
    time.sleep(0.2)
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text()


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        ("read oid; echo garbage", "unexpected answer 'garbage'"),
        ('read oid; echo "$oid blob 10"; printf abc', "ended early"),
        ("read oid; echo \"$oid blob 1\"; printf 'aX'; sleep 5", "without its newline"),
        ('read oid; echo "$oid tree 1"', "unexpected answer"),
        ("read oid; exit 0", "cat-file stopped answering"),
        ("read oid; echo", "unexpected answer 'an empty line'"),
        # It closes its input then quits: whether our request or its end comes first
        # depends on the scheduler, and either way the export says it stopped.
        ("exec 0<&-; sleep 5", "cat-file stopped"),
    ],
)
def test_an_answer_that_is_not_a_blob_fails_the_export(
    tmp_path: Path, repo: Path, answer: str, said: str
) -> None:
    message = export_error(repo, tmp_path / "tree", fake_git(tmp_path, answer))
    assert said in message


def test_a_cat_file_that_fails_after_answering_fails_the_export(tmp_path: Path, repo: Path) -> None:
    env = fake_git(tmp_path, f"{REAL_GIT} \"$@\"; echo 'fatal: disk on fire' >&2; exit 3")
    message = export_error(repo, tmp_path / "tree", env)
    assert message == "git cat-file failed: fatal: disk on fire"


def test_a_ref_that_is_no_tree_fails_and_writes_nothing(tmp_path: Path, repo: Path) -> None:
    with pytest.raises(WorktreeError) as caught:
        Git(repo).export_tree("main:a.txt", tmp_path / "tree")  # a blob
    assert caught.value.reason == "worktree_failed"
    assert not (tmp_path / "tree").exists()


def test_link_targets_no_kernel_would_make_are_skipped(tmp_path: Path, repo: Path) -> None:
    def blob(data: bytes) -> str:
        return (
            subprocess.run(
                ["git", "-C", str(repo), "hash-object", "-w", "--stdin"],
                input=data,
                capture_output=True,
                check=True,
            )
            .stdout.decode()
            .strip()
        )

    entries = [
        ("120000", b"empty", blob(b"")),
        ("120000", b"long", blob(b"a/" * 3000)),
        ("120000", b"nul", blob(b"a\0b")),
        ("100644", b"z", blob(b"after\n")),  # the conversation goes on after each
    ]
    body = b"".join(m.encode() + b" " + n + b"\0" + bytes.fromhex(o) for m, n, o in entries)
    tree = (
        subprocess.run(
            ["git", "-C", str(repo), "hash-object", "-t", "tree", "-w", "--stdin"],
            input=body,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .strip()
    )
    report = Git(repo).export_tree(tree, tmp_path / "tree")
    assert sorted(p.name for p in (tmp_path / "tree").iterdir()) == ["z"]
    assert (tmp_path / "tree" / "z").read_text() == "after\n"
    assert report.skipped_entries == 3 and report.files == 1
