"""The review tree is written from git's objects (D67): entries with unsafe paths are
skipped, nothing is written through a link, and a link is kept only when, resolved the
way the kernel resolves it, it never leaves the tree."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wrapper.git import Git
from wrapper.git.export import is_dotgit, kept_links, safe_components

ROOT = Path(__file__).resolve().parents[2]
SYSTEM_PYTHON = Path("/usr/bin/python3")  # Debian 12's 3.11.2: tarfile had no filter=


def git(repo: Path, *args: str, data: bytes | None = None) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, input=data
    ).stdout.decode()


def blob(repo: Path, data: bytes) -> str:
    return git(repo, "hash-object", "-w", "--stdin", data=data).strip()


def raw_tree(repo: Path, entries: list[tuple[str, bytes, str]]) -> str:
    """A tree object exactly as given (order, duplicates and names git would refuse
    included): ``(mode, name, oid)`` each."""
    body = b"".join(
        mode.encode() + b" " + name + b"\0" + bytes.fromhex(oid) for mode, name, oid in entries
    )
    return git(repo, "hash-object", "-t", "tree", "--literally", "-w", "--stdin", data=body).strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    git(path, "config", "user.name", "t")
    git(path, "config", "user.email", "t@example.com")
    return path


def listing(dest: Path) -> dict[str, str]:
    """Every path under ``dest``: ``file 0644``, ``dir``, or ``link -> target``."""
    found: dict[str, str] = {}
    for path in sorted(dest.rglob("*")):
        name = path.relative_to(dest).as_posix()
        if path.is_symlink():
            found[name] = f"link -> {os.readlink(path)}"
        elif path.is_dir():
            found[name] = "dir"
        else:
            found[name] = f"file {path.stat().st_mode & 0o777:04o}"
    return found


def commit_links(repo: Path, links: dict[str, str], files: dict[str, str]) -> None:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    for name, target in links.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).symlink_to(target)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "links")


LINKS = {
    "passwd": "/etc/passwd",  # absolute
    "up": "../../x",  # out by ..
    "chain_a": "chain_b",  # a -> b -> c -> out: the whole chain goes
    "chain_b": "chain_c",
    "chain_c": "../../../etc",
    "deep_link": "deep/dir/x",  # a link into a deep directory ...
    "back": "deep_link/../..",  # ... so that ../.. from it is deep/, inside: kept
    "here": ".",  # the root itself: kept
    "above": "here/..",  # lexically the root; for the kernel its parent: skipped
    "prefix": "deep/dir",  # a directory link used as the prefix of others
    "through": "prefix/x/file",  # inside: kept
    "through_out": "prefix/../../..",  # deep/dir -> deep -> root -> out: skipped
    "dangling": "nothere/file",  # dangling, inside: kept as a checkout would
    "dangling_out": "nothere/../../x",  # dangling and out: skipped
    "loop_a": "loop_b",  # a loop never resolves: skipped
    "loop_b": "loop_a",
    "self": "self",
    "sub/sibling": "../deep/dir/x/file",  # up one, then down: inside, kept
    "sneak": "../tree/deep/dir/x/file",  # out and back in by the tree's name: skipped
}


def test_the_link_rule(tmp_path: Path, repo: Path) -> None:
    commit_links(repo, LINKS, {"deep/dir/x/file": "data\n"})
    dest = tmp_path / "tree"
    report = Git(repo).export_tree("HEAD", dest)
    kept = {name for name, kind in listing(dest).items() if kind.startswith("link")}
    assert kept == {"deep_link", "back", "here", "prefix", "through", "dangling", "sub/sibling"}
    assert report.links == 7 and report.skipped_links == len(LINKS) - 7
    assert (dest / "back").resolve() == (dest / "deep").resolve()
    assert (dest / "through").read_text() == "data\n"
    # Whatever is kept resolves inside the tree, by the kernel's own reckoning.
    root = dest.resolve()
    for name in kept:
        resolved = Path(os.path.realpath(dest / name))
        assert resolved == root or root in resolved.parents, name


def test_the_link_rule_is_decided_without_the_file_system() -> None:
    links = {(b"l",): b"d/..", (b"d",): b"."}
    assert kept_links(links) == {(b"d",)}
    assert kept_links({(b"a", b"b"): b"../c"}) == {(b"a", b"b")}
    assert kept_links({(b"a", b"b"): b"../../c"}) == set()
    deep = {(b"x",): b"y/" * 30 + b"z", (b"y",): b"."}
    assert kept_links(deep) == set(deep)  # 31 hops: within the kernel's 40
    loop = {(b"y",): b"y2", (b"y2",): b"y"}
    assert kept_links(loop) == set()


def test_links_too_costly_to_judge_are_all_skipped() -> None:
    """Thousands of chains of 40 links with 2,000-component targets would take minutes
    to judge: past MAX_LINK_STEPS none is kept, in well under a second or two."""
    heavy = b"./" * 2000
    links = {(b"l%d" % i,): heavy + b"l%d" % (i + 1) for i in range(5000)}
    links[(b"ok",)] = b"l0"
    started = time.monotonic()
    assert kept_links(links) == set()
    assert time.monotonic() - started < 10
    assert kept_links({(b"ok",): b"x", (b"l",): heavy + b"x"}) == {(b"ok",), (b"l",)}


@pytest.mark.parametrize(
    "name",
    [
        b".git",
        b".GIT",
        b".Git",
        b".git.",
        b".git ",
        b".git. .",
        b"git~1",
        b"GIT~1",
        ".g\u200cit".encode(),
    ],
)
def test_every_dress_of_dot_git_is_refused(name: bytes) -> None:
    assert is_dotgit(name)
    assert safe_components(b"a/" + name + b"/config") is None


@pytest.mark.parametrize("path", [b"", b"/abs", b"a//b", b"a/", b"./a", b"a/./b", b"..", b"a/../b"])
def test_unsafe_paths_are_refused(path: bytes) -> None:
    assert safe_components(path) is None


def test_ordinary_names_pass() -> None:
    assert safe_components(b"a/.gitignore") == (b"a", b".gitignore")
    assert safe_components(b".github/git/x.git") == (b".github", b"git", b"x.git")
    assert not is_dotgit(b"..git") and not is_dotgit(b".gitx")


def test_entries_git_would_refuse_are_skipped(tmp_path: Path, repo: Path) -> None:
    data = blob(repo, b"evil\n")
    good = blob(repo, b"good\n")
    inner = raw_tree(repo, [("100644", b"..", data), ("100644", b"ok", good)])
    dotgit = raw_tree(repo, [("100644", b"config", data)])
    top = raw_tree(
        repo,
        [
            ("40000", b".GIT", dotgit),
            ("40000", b".git.", dotgit),
            ("40000", b"git~1", dotgit),
            ("100644", b"..", data),
            ("40000", b"sub", inner),
            ("100644", b"top", good),
        ],
    )
    dest = tmp_path / "tree"
    report = Git(repo).export_tree(top, dest)
    assert listing(dest) == {"sub": "dir", "sub/ok": "file 0644", "top": "file 0644"}
    assert report.skipped_entries == 5 and report.files == 2
    assert not (tmp_path / "evil").exists() and not (tmp_path.parent / "evil").exists()


def test_a_malformed_tree_never_writes_through_a_link(tmp_path: Path, repo: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    data = blob(repo, b"evil\n")
    link = blob(repo, str(outside).encode())
    inner = raw_tree(repo, [("100644", b"planted", data)])
    rel = blob(repo, b"../outside")
    top = raw_tree(
        repo,
        [
            ("120000", b"l", link),  # l -> the outside directory ...
            ("40000", b"l", inner),  # ... and l/planted: must never land there
            ("120000", b"r", rel),
            ("40000", b"r", inner),
            ("100644", b"twice", data),
            ("100644", b"twice", blob(repo, b"second\n")),
        ],
    )
    dest = tmp_path / "tree"
    Git(repo).export_tree(top, dest)
    assert list(outside.iterdir()) == []
    assert listing(dest) == {
        "l": "dir",
        "l/planted": "file 0644",
        "r": "dir",
        "r/planted": "file 0644",
        "twice": "file 0644",
    }
    assert (dest / "twice").read_text() == "evil\n"  # the first one listed wins


def test_a_submodule_is_an_empty_directory_and_modes_are_the_trees(
    tmp_path: Path, repo: Path
) -> None:
    script = blob(repo, b"#!/bin/sh\n")
    top = raw_tree(
        repo,
        [
            ("100755", b"run", script),
            ("100644", b"text", script),
            ("160000", b"vendor", "1" * 40),  # a commit of another repository
        ],
    )
    old_umask = os.umask(0o077)  # the modes are the tree's, whatever the umask
    try:
        report = Git(repo).export_tree(top, tmp_path / "tree")
    finally:
        os.umask(old_umask)
    assert listing(tmp_path / "tree") == {
        "run": "file 0755",
        "text": "file 0644",
        "vendor": "dir",
    }
    assert report.submodules == 1 and report.files == 2
    assert (tmp_path / "tree").stat().st_mode & 0o777 == 0o755


def test_a_missing_blob_fails_the_export(tmp_path: Path, repo: Path) -> None:
    top = raw_tree(repo, [("100644", b"gone", "2" * 40)])
    from wrapper.errors import WorktreeError

    with pytest.raises(WorktreeError) as caught:
        Git(repo).export_tree(top, tmp_path / "tree")
    assert caught.value.reason == "worktree_failed"
    assert "cat-file" in caught.value.message


def test_a_large_blob_is_streamed_byte_for_byte(tmp_path: Path, repo: Path) -> None:
    payload = os.urandom(3 * 1024 * 1024 + 17)
    top = raw_tree(
        repo, [("100644", b"big", blob(repo, payload)), ("100644", b"nl", blob(repo, b"\n"))]
    )
    Git(repo).export_tree(top, tmp_path / "tree")
    assert (tmp_path / "tree" / "big").read_bytes() == payload
    assert (tmp_path / "tree" / "nl").read_bytes() == b"\n"


EXPORT_SCRIPT = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
from wrapper.git import Git
from pathlib import Path
dest = Path(sys.argv[3])
report = Git(Path(sys.argv[2])).export_tree("HEAD", dest)
seen = {}
for path in sorted(dest.rglob("*")):
    name = path.relative_to(dest).as_posix()
    if path.is_symlink():
        seen[name] = "link " + os.readlink(path)
    elif path.is_dir():
        seen[name] = "dir"
    else:
        seen[name] = "file %o %s" % (path.stat().st_mode & 0o777, path.read_bytes().hex())
print(json.dumps({"report": vars(report), "tree": seen, "python": sys.version.split()[0]}))
"""


def test_the_export_is_the_same_under_the_oldest_python_on_the_machine(
    tmp_path: Path, repo: Path
) -> None:
    """Debian 12's /usr/bin/python3 (3.11.2) could not review at all with the tarfile
    export (``extractall(filter=)`` is 3.11.4+), and tarfile's filter let link chains out
    before 3.11.13; the exporter is the same on both (stdlib and kdev's own modules only:
    ``-I`` keeps the venv's packages out)."""
    assert SYSTEM_PYTHON.exists()
    commit_links(repo, LINKS, {"deep/dir/x/file": "data\n", "run.sh": "#!/bin/sh\n"})
    (repo / "run.sh").chmod(0o755)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "exec")
    results = []
    for index, python in enumerate((SYSTEM_PYTHON, Path(sys.executable))):
        out = subprocess.run(
            [
                str(python),
                "-I",
                "-c",
                EXPORT_SCRIPT,
                str(ROOT),
                str(repo),
                str(tmp_path / f"t{index}"),
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        results.append(json.loads(out))
    system, venv = results
    assert system["python"] == "3.11.2" or system["python"] != venv["python"]
    assert system["tree"] == venv["tree"] and system["report"] == venv["report"]
    assert venv["report"]["skipped_links"] == len(LINKS) - 7
