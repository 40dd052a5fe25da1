"""wrapper.git and wrapper.review.patch_id against real git: a bare origin with refs/pull/N/head,
an author clone that pushes to it, and the checkout kdev works in."""

from __future__ import annotations

import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ghsim import GitHubSim
from wrapper.errors import ConfigError, FetchError, KdevError, WorktreeError
from wrapper.git import Git, redact_credentials
from wrapper.review.patch_id import PatchInfo, compute_patch_id, fetch_pr_refs


def base_env(home: Path) -> dict[str, str]:
    """An environment no user or system git config can leak into."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Author",
        "GIT_AUTHOR_EMAIL": "author@example.com",
        "GIT_COMMITTER_NAME": "Author",
        "GIT_COMMITTER_EMAIL": "author@example.com",
    }


class World:
    """origin (bare), author (pushes branches and PR heads), checkout (kdev's cwd)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.home.mkdir()
        self.env = base_env(self.home)
        self.origin = root / "origin.git"
        self.author = root / "author"
        self.checkout = root / "checkout"
        self.run(root, "init", "-q", "--bare", "-b", "main", str(self.origin))
        self.run(root, "init", "-q", "-b", "main", str(self.author))
        self.run(self.author, "remote", "add", "origin", str(self.origin))
        self.commit({"README.md": "hello\n", "app.py": "def f():\n    return 1\n"}, "init")
        self.run(self.author, "push", "-q", "origin", "main")
        self.run(root, "clone", "-q", str(self.origin), str(self.checkout))

    def run(self, cwd: Path, *args: str) -> str:
        result = subprocess.run(
            ["git", *args], cwd=cwd, env=self.env, capture_output=True, text=True, check=True
        )
        return result.stdout.strip()

    def commit(self, files: dict[str, str], message: str) -> str:
        for name, content in files.items():
            path = self.author / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content)
        self.run(self.author, "add", "-A")
        self.run(self.author, "commit", "-q", "-m", message)
        return self.run(self.author, "rev-parse", "HEAD")

    def switch(self, branch: str, *, create: bool = False) -> None:
        self.run(self.author, "checkout", "-q", *(["-b"] if create else []), branch)

    def push_pr(self, pr: int) -> str:
        self.run(self.author, "push", "-q", "-f", "origin", f"HEAD:refs/pull/{pr}/head")
        return self.run(self.author, "rev-parse", "HEAD")

    def push_main(self) -> str:
        self.run(self.author, "push", "-q", "origin", "main:main")
        return self.run(self.author, "rev-parse", "main")

    def git(self, **kwargs: float) -> Git:
        return Git(self.checkout, env=self.env, **kwargs)


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


def open_pr(world: World, pr: int = 1) -> str:
    world.switch("feature", create=True)
    world.commit({"app.py": "def f():\n    return 2\n"}, "feature: return 2")
    return world.push_pr(pr)


def patch_info(world: World, pr: int = 1) -> PatchInfo:
    git = world.git()
    base_ref, head_ref = fetch_pr_refs(git, "main", pr)
    return compute_patch_id(git, base_ref, head_ref)


# --- Git: fetch --------------------------------------------------------------------------


def test_fetch_pr_refs_brings_base_and_pull_head_into_kdev_refs_in_one_fetch(
    world: World,
) -> None:
    head = open_pr(world, 3)
    git = world.git()
    base_ref, head_ref = fetch_pr_refs(git, "main", 3)
    assert (base_ref, head_ref) == ("refs/kdev/base/main", "refs/kdev/pull/3/head")
    assert git.rev_parse(head_ref) == head
    assert git.rev_parse(base_ref) == world.run(world.author, "rev-parse", "main")


def test_a_force_pushed_pull_head_is_fetched_over_the_old_one(world: World) -> None:
    open_pr(world)
    git = world.git()
    _, head_ref = fetch_pr_refs(git, "main", 1)
    world.run(world.author, "commit", "-q", "--amend", "-m", "rewritten")
    new_head = world.push_pr(1)
    fetch_pr_refs(git, "main", 1)
    assert git.rev_parse(head_ref) == new_head


def test_fetching_a_pull_ref_origin_lacks_is_fetch_failed_with_gits_last_line(
    world: World,
) -> None:
    with pytest.raises(FetchError) as caught:
        fetch_pr_refs(world.git(), "main", 99)
    assert caught.value.reason == "fetch_failed"
    assert "refs/pull/99/head" in caught.value.message
    assert "\n" not in str(caught.value)


def test_a_fetch_error_never_shows_the_credentials_of_the_remote_url(world: World) -> None:
    token = "ghp_canary_token_0123456789"
    world.run(
        world.checkout, "remote", "add", "private", f"https://x-access:{token}@127.0.0.1:1/r.git"
    )
    git = world.git()
    with pytest.raises(FetchError) as caught:
        git.fetch("private", ["+refs/heads/main:refs/kdev/base/main"])
    assert token not in str(caught.value)
    assert caught.value.reason == "fetch_failed"
    assert token not in git.remote_url("private")
    assert git.remote_url("private") == "https://***@127.0.0.1:1/r.git"


def test_a_remote_given_as_a_url_with_credentials_is_refused_before_git_runs(
    world: World,
) -> None:
    with pytest.raises(ConfigError) as caught:
        world.git().fetch("https://u:secret-token-42@example.invalid/r.git", ["main"])
    assert caught.value.reason == "credentials_in_argv"
    assert "secret-token-42" not in str(caught.value)


def test_redact_credentials_hides_the_userinfo_of_every_url() -> None:
    text = "fatal: https://user:tok3n@github.com/a/b and http://tok3n@h/x, ssh://git@host/r"
    assert redact_credentials(text) == (
        "fatal: https://***@github.com/a/b and http://***@h/x, ssh://***@host/r"
    )
    assert redact_credentials("no url here") == "no url here"


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A TCP port that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


def test_a_fetch_that_hangs_is_killed_at_the_timeout_and_is_fetch_failed(
    world: World, silent_server: int
) -> None:
    world.run(world.checkout, "remote", "add", "slow", f"http://127.0.0.1:{silent_server}/r.git")
    git = world.git(timeout=1.0)
    with pytest.raises(FetchError) as caught:
        git.fetch("slow", ["+refs/heads/main:refs/kdev/base/main"])
    assert caught.value.reason == "fetch_failed"
    assert "timed out after 1s" in caught.value.message


# --- Git: refs, diff, patch-id, merge-base -------------------------------------------------


def test_rev_parse_gives_the_commit_or_none_for_a_missing_ref(world: World) -> None:
    git = world.git()
    assert git.rev_parse("HEAD") == world.run(world.checkout, "rev-parse", "HEAD")
    assert git.rev_parse("refs/heads/no-such-branch") is None


@pytest.mark.parametrize("ref", ["--output=/tmp/x", "-n", "main\nother", ""])
def test_a_ref_git_would_read_as_an_option_is_refused(world: World, ref: str) -> None:
    with pytest.raises(ConfigError) as caught:
        world.git().rev_parse(ref)
    assert caught.value.reason == "invalid_ref"


def test_remote_url_of_an_unknown_remote_is_a_config_error(world: World) -> None:
    assert world.git().remote_url() == str(world.origin)
    with pytest.raises(ConfigError) as caught:
        world.git().remote_url("nowhere")
    assert caught.value.reason == "remote_missing"


def test_diff_is_three_dot_so_later_base_commits_are_not_part_of_it(world: World) -> None:
    open_pr(world)
    world.switch("main")
    world.commit({"NEWS.md": "base moved on\n"}, "base change")
    world.push_main()
    git = world.git()
    base_ref, head_ref = fetch_pr_refs(git, "main", 1)
    diff = git.diff(base_ref, head_ref).decode()
    assert "return 2" in diff
    assert "NEWS.md" not in diff


def test_system_git_config_is_ignored_even_when_the_environment_points_at_one(
    world: World,
) -> None:
    system_config = world.root / "system.gitconfig"
    system_config.write_text("[diff]\n\tnoprefix = true\n")
    open_pr(world)
    env = dict(world.env, GIT_CONFIG_NOSYSTEM="0", GIT_CONFIG_SYSTEM=str(system_config))
    git = Git(world.checkout, env=env)
    base_ref, head_ref = fetch_pr_refs(git, "main", 1)
    assert b"diff --git a/app.py b/app.py" in git.diff(base_ref, head_ref)


def test_every_call_forbids_prompts_and_ignores_variables_pointing_at_other_repos(
    world: World,
) -> None:
    env = dict(world.env, GIT_DIR=str(world.origin), GIT_TERMINAL_PROMPT="1")
    git = Git(world.checkout, env=env)
    environment = git.environment()
    assert environment["GIT_TERMINAL_PROMPT"] == "0"
    assert environment["GIT_CONFIG_NOSYSTEM"] == "1"
    assert "GIT_DIR" not in environment
    # GIT_DIR would have made git read the bare origin, which has no working tree.
    assert git.rev_parse("refs/remotes/origin/main") is not None


def test_merge_base_is_none_for_unrelated_histories(world: World) -> None:
    world.run(world.author, "checkout", "-q", "--orphan", "island")
    world.commit({"other.txt": "unrelated\n"}, "island")
    island = world.run(world.author, "rev-parse", "HEAD")
    main = world.run(world.author, "rev-parse", "main")
    git = Git(world.author, env=world.env)
    assert git.merge_base("main", "main") == main
    assert git.merge_base("main", island) is None
    with pytest.raises(KdevError) as caught:
        git.diff("main", island)
    assert caught.value.reason == "git_failed"


def test_git_failures_are_one_line_kdev_errors_never_called_process_error(
    tmp_path: Path,
) -> None:
    not_a_repo = tmp_path / "plain"
    not_a_repo.mkdir()
    git = Git(not_a_repo, env=base_env(tmp_path))
    with pytest.raises(KdevError) as caught:
        git.merge_base("a", "b")
    assert not isinstance(caught.value, subprocess.CalledProcessError)
    assert caught.value.reason == "git_failed"
    assert "not a git repository" in caught.value.message
    with pytest.raises(KdevError) as caught:
        git.diff("a", "b")  # outside a repository git prints a whole usage text
    assert caught.value.reason == "git_failed"
    assert "\n" not in caught.value.message


def test_patch_id_of_an_empty_diff_is_none(world: World) -> None:
    git = world.git()
    assert git.patch_id(b"") is None
    assert git.patch_id(b"\n") is None


# --- Git: worktrees ------------------------------------------------------------------------


def test_worktree_add_checks_out_the_head_detached_sharing_objects_without_hooks(
    world: World,
) -> None:
    head = open_pr(world)
    hooks = world.checkout / ".git" / "hooks"
    hook_ran = world.root / "hook-ran"
    (hooks / "post-checkout").write_text(f"#!/bin/sh\ntouch {hook_ran}\n")
    (hooks / "post-checkout").chmod(0o755)
    git = world.git()
    _, head_ref = fetch_pr_refs(git, "main", 1)
    tree = world.root / "scratch" / "wt"
    git.worktree_add(tree, head_ref)
    assert (tree / "app.py").read_text() == "def f():\n    return 2\n"
    assert (tree / ".git").is_file()  # a linked worktree, not a clone
    assert world.run(tree, "rev-parse", "HEAD") == head
    detached = subprocess.run(
        ["git", "symbolic-ref", "-q", "HEAD"], cwd=tree, env=world.env, capture_output=True
    )
    assert detached.returncode == 1
    assert not hook_ran.exists()
    assert str(tree) in world.run(world.checkout, "worktree", "list")

    git.worktree_remove(tree)
    assert not tree.exists()
    assert str(tree) not in world.run(world.checkout, "worktree", "list")
    git.worktree_remove(tree)  # already gone: no error


def test_worktree_add_of_a_missing_ref_is_worktree_failed(world: World) -> None:
    with pytest.raises(WorktreeError) as caught:
        world.git().worktree_add(world.root / "wt", "refs/kdev/pull/5/head")
    assert caught.value.reason == "worktree_failed"


def test_worktree_remove_deletes_a_directory_git_no_longer_tracks(world: World) -> None:
    git = world.git()
    tree = world.root / "wt"
    git.worktree_add(tree, "HEAD")
    (tree / "untracked.txt").write_text("reviewer scratch\n")
    # The bookkeeping is lost (as after a crash and a prune elsewhere): git cannot remove it.
    (tree / ".git").unlink()
    world.run(world.checkout, "worktree", "prune")
    git.worktree_remove(tree)
    assert not tree.exists()


def test_worktree_remove_never_deletes_the_repository_itself(world: World) -> None:
    git = world.git()
    with pytest.raises(WorktreeError) as caught:
        git.worktree_remove(world.checkout)
    assert caught.value.reason == "worktree_failed"
    assert (world.checkout / ".git").is_dir()
    assert (world.checkout / "README.md").exists()


# --- patch_id ------------------------------------------------------------------------------


def test_merging_the_base_into_the_head_keeps_the_patch_id(world: World) -> None:
    open_pr(world)
    before = patch_info(world)
    assert before.patch_id is not None
    world.switch("main")
    world.commit({"NEWS.md": "base moved on\n"}, "base change")
    world.push_main()
    world.switch("feature")
    world.run(world.author, "merge", "-q", "--no-edit", "main")
    world.push_pr(1)
    after = patch_info(world)
    assert after.head_sha != before.head_sha
    assert after.base_sha != before.base_sha
    assert after.patch_id == before.patch_id


def test_an_identical_force_push_keeps_the_patch_id(world: World) -> None:
    open_pr(world)
    before = patch_info(world)
    world.run(world.author, "commit", "-q", "--amend", "-m", "same change, new commit")
    world.push_pr(1)
    after = patch_info(world)
    assert after.head_sha != before.head_sha
    assert after.patch_id == before.patch_id


def test_a_fix_commit_changes_the_patch_id(world: World) -> None:
    open_pr(world)
    before = patch_info(world)
    world.commit({"app.py": "def f():\n    return 3\n"}, "fix: return 3")
    world.push_pr(1)
    after = patch_info(world)
    assert after.patch_id is not None
    assert after.patch_id != before.patch_id
    assert "+    return 3" in after.diff


def test_a_head_with_no_changes_against_its_base_has_no_patch_id(world: World) -> None:
    world.push_pr(1)  # the PR head is the base tip itself
    info = patch_info(world)
    assert info.patch_id is None
    assert info.diff == ""
    assert info.head_sha == info.base_sha


def test_patch_info_decodes_a_non_utf8_diff_with_replacement(world: World) -> None:
    world.switch("feature", create=True)
    (world.author / "latin1.txt").write_bytes(b"caf\xe9\n")
    world.run(world.author, "add", "-A")
    world.run(world.author, "commit", "-q", "-m", "latin-1 file")
    world.push_pr(1)
    info = patch_info(world)
    assert info.patch_id is not None
    assert "caf\ufffd" in info.diff


def test_compute_patch_id_of_a_ref_never_fetched_is_ref_missing(world: World) -> None:
    with pytest.raises(FetchError) as caught:
        compute_patch_id(world.git(), "refs/kdev/base/main", "refs/kdev/pull/1/head")
    assert caught.value.reason == "ref_missing"


@pytest.mark.parametrize(
    "branch", ["", "-main", "main..x", "a b", "@{-1}", "main.lock", "x~1", "refs/../x", "a\nb"]
)
def test_a_base_branch_git_check_ref_format_refuses_is_invalid_branch(
    world: World, branch: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        fetch_pr_refs(world.git(), branch, 1)
    assert caught.value.reason == "invalid_branch"


@pytest.mark.parametrize("pr", [0, -1, True])
def test_a_pr_number_must_be_a_positive_integer(world: World, pr: int) -> None:
    with pytest.raises(ConfigError) as caught:
        fetch_pr_refs(world.git(), "main", pr)
    assert caught.value.reason == "invalid_pr"


def test_a_base_branch_with_slashes_is_fetched(world: World) -> None:
    world.run(world.author, "push", "-q", "origin", "main:release/1.x")
    head = open_pr(world)
    git = world.git()
    base_ref, head_ref = fetch_pr_refs(git, "release/1.x", 1)
    assert base_ref == "refs/kdev/base/release/1.x"
    assert compute_patch_id(git, base_ref, head_ref).head_sha == head


def test_concurrent_fetches_in_one_checkout_all_succeed(tmp_path: Path) -> None:
    """The engine fires events in parallel and every kdev run fetches into the same
    checkout; unserialised, most of these fetches fail with "cannot lock ref"."""
    failures: list[str] = []
    with GitHubSim(tmp_path / "github") as sim:
        sim.create_repo("o/r", files={"a": "1\n"})
        prs = [sim.open_pr("o/r", f"b{i}", {f"f{i}": "x\n"}).number for i in range(6)]
        checkout = tmp_path / "checkout"
        subprocess.run(["git", "clone", "-q", str(sim.repo_path("o/r")), str(checkout)], check=True)
        for round_ in range(5):
            sim.commit_to_base("o/r", {f"base{round_}": "y\n"})

            def fetch(number: int) -> None:
                try:
                    fetch_pr_refs(Git(checkout), "main", number)
                except KdevError as exc:
                    failures.append(exc.message)

            threads = [threading.Thread(target=fetch, args=(n,)) for n in prs]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
    assert failures == []
