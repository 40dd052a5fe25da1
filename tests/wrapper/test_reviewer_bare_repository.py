"""A legal tree can hold a bare repository (HEAD, config, objects/, refs/) whose config
names an fsmonitor: the reviewer's git, with the environment every command reviewer
gets (``GIT_SAFETY_ENV``), refuses to use it and runs nothing it names (D67)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from wrapper.git import Git
from wrapper.review.reviewer import GIT_SAFETY_ENV, reviewer_environment


@pytest.fixture
def planted(tmp_path: Path) -> tuple[Path, Path]:
    """A PR's tree, exported by kdev, holding ``inner/``: a bare repository whose
    config runs a marker-writing fsmonitor; and the marker's path."""
    marker = tmp_path / "fsmonitor-ran"
    script = tmp_path / "fsmonitor.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\n")
    script.chmod(0o755)
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    inner = repo / "inner"
    for name, text in {
        "HEAD": "ref: refs/heads/main\n",
        "config": (
            "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n"
            f"\tfsmonitor = {script}\n"
        ),
        "objects/info/.keep": "",
        "refs/heads/.keep": "",
    }.items():
        (inner / name).parent.mkdir(parents=True, exist_ok=True)
        (inner / name).write_text(text)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "x"],
        check=True,
    )
    dest = tmp_path / "tree"
    Git(repo).export_tree("HEAD", dest)
    return dest / "inner", marker


def run_git(where: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=where, env=env, capture_output=True, text=True)


def test_plain_git_would_run_the_planted_fsmonitor(planted: tuple[Path, Path]) -> None:
    inner, marker = planted
    plain = {"PATH": os.environ["PATH"], "HOME": str(inner.parent.parent)}
    run_git(inner, plain, "status")
    assert marker.exists()  # so the test below can fail


@pytest.mark.parametrize("command", [["status"], ["log", "-1"], ["rev-parse", "--git-dir"]])
def test_the_reviewers_git_refuses_the_implicit_bare_repository(
    planted: tuple[Path, Path], command: list[str]
) -> None:
    inner, marker = planted
    env = reviewer_environment([], {"PATH": os.environ["PATH"], "HOME": str(inner.parent.parent)})
    assert {k: env[k] for k in GIT_SAFETY_ENV} == GIT_SAFETY_ENV
    result = run_git(inner, env, *command)
    assert result.returncode != 0
    assert "safe.bareRepository" in result.stderr
    assert not marker.exists()


def test_git_dir_given_explicitly_still_runs_no_fsmonitor(planted: tuple[Path, Path]) -> None:
    inner, marker = planted
    env = reviewer_environment([], {"PATH": os.environ["PATH"], "HOME": str(inner.parent.parent)})
    result = run_git(inner.parent, env, f"--git-dir={inner}", "--work-tree=.", "status")
    assert result.returncode == 0, result.stderr
    assert not marker.exists()
