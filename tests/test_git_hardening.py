"""kdev's own git calls never run a program the repository's config names, and the
review tree is a plain export of the head with nothing linking back to the checkout."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from wrapper.errors import WorktreeError
from wrapper.git import Git


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    git(path, "config", "user.name", "t")
    git(path, "config", "user.email", "t@example.com")
    (path / "app.py").write_text("print('hi')\n")
    (path / "bin").mkdir()
    (path / "bin" / "run").write_text("#!/bin/sh\necho run\n")
    (path / "bin" / "run").chmod(0o755)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "one")
    return path


def plant(tmp_path: Path, repo: Path, key: str) -> Path:
    """Set ``key`` in the repository's own config to a script that leaves a marker."""
    marker = tmp_path / f"ran-{key.replace('.', '-')}"
    script = tmp_path / f"evil-{key.replace('.', '-')}.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\ncat >/dev/null 2>&1\n")
    script.chmod(0o755)
    git(repo, "config", key, str(script))
    return marker


def test_a_repository_fsmonitor_never_runs_in_kdevs_git_calls(tmp_path: Path, repo: Path) -> None:
    marker = plant(tmp_path, repo, "core.fsmonitor")
    # Plain git runs it (so the test can fail): a merge refreshes the index.
    subprocess.run(["git", "-C", str(repo), "status", "--short"], check=True, capture_output=True)
    assert marker.exists()
    marker.unlink()
    kdev_git = Git(repo)
    result = kdev_git.merge_into_detached("HEAD", name="kdev", email="kdev@example.com")
    assert result.merged
    kdev_git.changed_files("HEAD", "HEAD")
    kdev_git.export_tree("HEAD", tmp_path / "export")
    assert not marker.exists()


@pytest.mark.parametrize("key", ["core.pager", "core.editor", "sequence.editor"])
def test_no_pager_or_editor_from_the_repository_config(
    tmp_path: Path, repo: Path, key: str
) -> None:
    marker = plant(tmp_path, repo, key)
    Git(repo).merge_into_detached("HEAD", name="kdev", email="kdev@example.com")
    assert not marker.exists()
    env = Git(repo, env={"GIT_CONFIG_PARAMETERS": "'core.fsmonitor'='x'", "PAGER": "less"})
    environment = env.environment()
    assert "GIT_CONFIG_PARAMETERS" not in environment
    assert environment["GIT_PAGER"] == environment["PAGER"] == "cat"
    assert environment["GIT_EDITOR"] == "true"


def test_the_export_is_the_heads_tree_without_git_metadata(tmp_path: Path, repo: Path) -> None:
    dest = tmp_path / "tree"
    Git(repo).export_tree("HEAD", dest)
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*")) == [
        "app.py",
        "bin",
        "bin/run",
    ]
    assert (dest / "app.py").read_text() == "print('hi')\n"
    assert (dest / "bin" / "run").stat().st_mode & 0o111  # executables stay executable
    assert not (dest / ".git").exists()
    # Nothing in it names the checkout: no gitdir file, no worktree registered.
    assert str(repo) not in "".join(p.read_text() for p in dest.rglob("*") if p.is_file())
    assert git(repo, "worktree", "list").count("\n") == 0


def test_links_out_of_the_tree_are_skipped(tmp_path: Path, repo: Path) -> None:
    (repo / "escape").symlink_to("/etc/passwd")
    (repo / "up").symlink_to("../../outside")
    (repo / "inner").symlink_to("app.py")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "links")
    dest = tmp_path / "tree"
    Git(repo).export_tree("HEAD", dest)
    assert not (dest / "escape").is_symlink() and not (dest / "up").is_symlink()
    assert (dest / "inner").is_symlink() and (dest / "inner").read_text() == "print('hi')\n"


def test_an_unknown_ref_or_an_existing_destination_fails_with_worktree_failed(
    tmp_path: Path, repo: Path
) -> None:
    with pytest.raises(WorktreeError) as caught:
        Git(repo).export_tree("no-such-ref", tmp_path / "a")
    assert caught.value.reason == "worktree_failed"
    (tmp_path / "b").mkdir()
    with pytest.raises(WorktreeError):
        Git(repo).export_tree("HEAD", tmp_path / "b")
