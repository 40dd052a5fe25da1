"""Git.merge_into_detached and Git.push_commit against real git: a bare origin, an author
clone that moves branches, and a checkout with a disposable worktree."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from wrapper.errors import ConfigError, KdevError
from wrapper.git import Git

IDENTITY = {"name": "Sweep Bot", "email": "sweep@example.invalid"}


class World:
    def __init__(self, root: Path) -> None:
        self.root = root
        home = root / "home"
        home.mkdir()
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_AUTHOR_NAME": "Author",
            "GIT_AUTHOR_EMAIL": "author@example.com",
            "GIT_COMMITTER_NAME": "Author",
            "GIT_COMMITTER_EMAIL": "author@example.com",
        }
        self.origin = root / "origin.git"
        self.author = root / "author"
        self.checkout = root / "checkout"
        self.run(root, "init", "-q", "--bare", "-b", "main", str(self.origin))
        self.run(root, "init", "-q", "-b", "main", str(self.author))
        self.run(self.author, "remote", "add", "origin", str(self.origin))
        self.commit({"app.py": "one\ntwo\nthree\n"}, "init")
        self.run(self.author, "push", "-q", "origin", "main")
        self.run(self.author, "checkout", "-q", "-b", "feature")
        self.commit({"feature.py": "x = 1\n"}, "feature")
        self.run(self.author, "push", "-q", "origin", "feature")
        self.run(self.author, "checkout", "-q", "main")
        self.run(root, "clone", "-q", str(self.origin), str(self.checkout))
        self.git = Git(self.checkout, env={"PATH": self.env["PATH"], "HOME": str(home)})

    def run(self, cwd: Path, *args: str) -> str:
        result = subprocess.run(
            ["git", *args], cwd=cwd, env=self.env, capture_output=True, text=True, check=True
        )
        return result.stdout.strip()

    def commit(self, files: dict[str, str], message: str) -> str:
        for name, content in files.items():
            (self.author / name).write_text(content)
        self.run(self.author, "add", "-A")
        self.run(self.author, "commit", "-q", "-m", message)
        return self.run(self.author, "rev-parse", "HEAD")

    def advance_main(self, files: dict[str, str]) -> str:
        self.run(self.author, "checkout", "-q", "main")
        sha = self.commit(files, "base moves")
        self.run(self.author, "push", "-q", "origin", "main")
        return sha

    def worktree(self) -> tuple[Git, Path]:
        self.git.fetch("origin", ["+refs/heads/*:refs/remotes/origin/*"])
        path = self.root / "wt"
        self.git.worktree_add(path, "refs/remotes/origin/feature")
        return Git(path, env=self.git.environment()), path


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


def test_merging_the_base_makes_a_two_parent_commit_under_the_given_identity(
    world: World,
) -> None:
    world.advance_main({"base.py": "y = 2\n"})
    tree, path = world.worktree()
    head = tree.rev_parse("HEAD")
    result = tree.merge_into_detached("refs/remotes/origin/main", **IDENTITY)
    assert result.merged and not result.conflict and not result.up_to_date
    assert result.sha != head
    parents = world.run(path, "log", "-1", "--format=%P", "HEAD").split()
    assert parents[0] == head and len(parents) == 2
    who = world.run(path, "log", "-1", "--format=%an <%ae>|%cn <%ce>", "HEAD")
    assert who == "Sweep Bot <sweep@example.invalid>|Sweep Bot <sweep@example.invalid>"


def test_a_base_already_contained_is_up_to_date_and_makes_no_commit(world: World) -> None:
    tree, _ = world.worktree()
    head = tree.rev_parse("HEAD")
    result = tree.merge_into_detached("refs/remotes/origin/main", **IDENTITY)
    assert result.merged and result.up_to_date and result.sha == head


def test_a_conflicting_merge_is_aborted_and_reported_never_resolved(world: World) -> None:
    world.run(world.author, "checkout", "-q", "feature")
    world.commit({"app.py": "one\nFEATURE\nthree\n"}, "feature edits app")
    world.run(world.author, "push", "-q", "origin", "feature")
    world.advance_main({"app.py": "one\nBASE\nthree\n"})
    tree, path = world.worktree()
    head = tree.rev_parse("HEAD")
    result = tree.merge_into_detached("refs/remotes/origin/main", **IDENTITY)
    assert result.conflict and not result.merged and result.conflicts == ("app.py",)
    assert tree.rev_parse("HEAD") == head
    assert world.run(path, "status", "--porcelain") == ""
    in_merge = subprocess.run(
        ["git", "rev-parse", "-q", "--verify", "MERGE_HEAD"], cwd=path, env=world.env, check=False
    )
    assert in_merge.returncode != 0


def test_a_fast_forward_push_updates_the_remote_branch(world: World) -> None:
    world.advance_main({"base.py": "y = 2\n"})
    tree, _ = world.worktree()
    merged = tree.merge_into_detached("refs/remotes/origin/main", **IDENTITY)
    assert merged.sha is not None
    pushed = world.git.push_commit("origin", merged.sha, "feature")
    assert pushed.pushed and not pushed.rejected
    assert world.run(world.origin, "rev-parse", "refs/heads/feature") == merged.sha


def test_a_push_after_the_branch_moved_is_rejected_not_forced(world: World) -> None:
    world.advance_main({"base.py": "y = 2\n"})
    tree, _ = world.worktree()
    merged = tree.merge_into_detached("refs/remotes/origin/main", **IDENTITY)
    world.run(world.author, "checkout", "-q", "feature")
    moved = world.commit({"feature.py": "x = 2\n"}, "author pushes meanwhile")
    world.run(world.author, "push", "-q", "origin", "feature")
    assert merged.sha is not None
    result = world.git.push_commit("origin", merged.sha, "feature")
    assert result.rejected and not result.pushed
    assert "non-fast-forward" in result.detail or "fetch first" in result.detail
    assert world.run(world.origin, "rev-parse", "refs/heads/feature") == moved


def test_a_push_to_an_unreachable_remote_is_a_push_failed_error(world: World) -> None:
    world.run(world.checkout, "remote", "add", "gone", str(world.root / "missing.git"))
    sha = world.git.rev_parse("HEAD")
    assert sha is not None
    with pytest.raises(KdevError) as caught:
        world.git.push_commit("gone", sha, "feature")
    assert caught.value.reason == "push_failed"


@pytest.mark.parametrize(
    ("sha", "branch", "reason"),
    [("HEAD", "feature", "invalid_sha"), ("a" * 40, "bad..name", "invalid_branch")],
)
def test_push_refuses_a_short_sha_or_an_invalid_branch(
    world: World, sha: str, branch: str, reason: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        world.git.push_commit("origin", sha, branch)
    assert caught.value.reason == reason


def test_merge_refuses_an_identity_with_a_newline(world: World) -> None:
    tree, _ = world.worktree()
    with pytest.raises(ConfigError) as caught:
        tree.merge_into_detached("refs/remotes/origin/main", name="a\nb", email="x@y")
    assert caught.value.reason == "invalid_identity"
