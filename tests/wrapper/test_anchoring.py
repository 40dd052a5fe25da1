"""Anchoring findings on the diff the way GitHub checks them (issue 27, D84), on real
``git diff`` output."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.gitkit import git, numbered
from wrapper.review.anchoring import (
    BINARY_FILE,
    DIFF_UNPARSEABLE,
    FILE_DELETED,
    NO_HUNKS,
    NOT_IN_DIFF,
    OUTSIDE_HUNKS,
    RANGE_ACROSS_HUNKS,
    DiffError,
    FileDiff,
    Hunk,
    parse_diff,
    place,
    place_all,
)
from wrapper.review.findings_contract import LINE_PAST_END, Finding


def write(root: Path, name: str, data: str | bytes) -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8", newline="")


def at(path: str, line: int, start: int | None = None, replacement: str | None = None) -> Finding:
    return Finding(path, line, "P2", "t", "b", start_line=start, replacement=replacement)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A base and a head commit covering the shapes a diff can have."""
    root = tmp_path_factory.mktemp("anchor")
    git(root, "init", "-q", "-b", "main")
    base = {
        "two_hunks.txt": numbered(20),
        "gone.txt": numbered(3),
        "old_name.txt": numbered(12),
        "image.bin": b"\x00\x01\x02 binary\n",
        "mode.sh": "echo hi\n",
        "no_eol.txt": "a\nb\nc",
        "sp ace.txt": "a\nb\nc\n",
        "caf\u00e9.txt": "x\n",
        "tab\tname.txt": "x\n",
        "shrink.txt": numbered(10),
        "crlf.txt": "one\r\ntwo\r\nthree\r\n",
        "odd.txt": "a\u2028still a\nb\x0bstill b\nc\x0cstill c\n",
    }
    for name, data in base.items():
        write(root, name, data)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    write(root, "two_hunks.txt", numbered(20).replace("line 3\n", "LINE 3\n").replace(
        "line 18\n", "LINE 18\nline 18b\n"))  # fmt: skip
    (root / "gone.txt").unlink()
    (root / "old_name.txt").unlink()
    write(root, "new_name.txt", numbered(12).replace("line 12\n", "line twelve\n"))
    write(root, "image.bin", b"\x00\x01\x02 other binary\n")
    (root / "mode.sh").chmod(0o755)
    write(root, "no_eol.txt", "a\nb\nC")
    write(root, "sp ace.txt", "a\nB\nc\n")
    write(root, "caf\u00e9.txt", "y\n")
    write(root, "tab\tname.txt", "y\n")
    write(root, "shrink.txt", numbered(10).replace("line 5\nline 6\n", ""))
    write(root, "crlf.txt", "one\r\nTWO\r\nthree\r\n")
    write(root, "odd.txt", "a\u2028still a\nB\x0bstill b\nc\x0cstill c\n")
    write(root, "added.py", "print(1)\nprint(2)\n")
    write(root, "empty_new.txt", "")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "head")
    return root


@pytest.fixture(scope="module")
def files(repo: Path) -> dict[str, FileDiff]:
    return parse_diff(git(repo, "diff", "-M", "HEAD~1", "HEAD"))


def test_every_file_of_a_real_diff_is_read(files: dict[str, FileDiff]) -> None:
    assert sorted(files) == sorted(
        [
            "added.py",
            "caf\u00e9.txt",
            "crlf.txt",
            "empty_new.txt",
            "gone.txt",
            "image.bin",
            "mode.sh",
            "new_name.txt",
            "no_eol.txt",
            "odd.txt",
            "shrink.txt",
            "sp ace.txt",
            "tab\tname.txt",
            "two_hunks.txt",
        ]
    )
    statuses = {path: diff.status for path, diff in files.items()}
    assert statuses["added.py"] == statuses["empty_new.txt"] == "added"
    assert statuses["gone.txt"] == "deleted"
    assert statuses["new_name.txt"] == "renamed"
    assert files["new_name.txt"].old_path == "old_name.txt"
    assert files["added.py"].old_path is None
    assert files["image.bin"].binary and not files["image.bin"].hunks
    assert files["mode.sh"].hunks == () and files["empty_new.txt"].hunks == ()


def test_hunks_have_the_head_side_ranges_git_wrote(files: dict[str, FileDiff]) -> None:
    assert files["two_hunks.txt"].hunks == (
        Hunk(1, 6, 1, 6, frozenset({3})),
        Hunk(15, 6, 15, 7, frozenset({18, 19})),
    )
    assert files["added.py"].hunks == (Hunk(0, 0, 1, 2, frozenset({1, 2})),)
    assert files["gone.txt"].hunks == (Hunk(1, 3, 0, 0),)
    assert files["new_name.txt"].hunks == (Hunk(9, 4, 9, 4, frozenset({12})),)
    assert files["no_eol.txt"].hunks == (Hunk(1, 3, 1, 3, frozenset({3})),)
    assert files["shrink.txt"].hunks == (Hunk(2, 8, 2, 6),)
    assert files["sp ace.txt"].hunks == (Hunk(1, 3, 1, 3, frozenset({2})),)
    assert files["crlf.txt"].hunks == (Hunk(1, 3, 1, 3, frozenset({2})),)
    assert files["odd.txt"].hunks == (Hunk(1, 3, 1, 3, frozenset({2})),)
    assert (
        files["caf\u00e9.txt"].hunks
        == files["tab\tname.txt"].hunks
        == (Hunk(1, 1, 1, 1, frozenset({1})),)
    )


def test_the_binary_patch_form_is_read_too(repo: Path) -> None:
    binary = parse_diff(git(repo, "diff", "--binary", "-M", "HEAD~1", "HEAD"))
    assert binary["image.bin"].binary
    assert (
        binary["two_hunks.txt"] == parse_diff(git(repo, "diff", "HEAD~1", "HEAD"))["two_hunks.txt"]
    )


def test_a_zero_context_diff_has_hunks_with_an_empty_head_side(repo: Path) -> None:
    shrink = parse_diff(git(repo, "diff", "-U0", "HEAD~1", "HEAD", "--", "shrink.txt"))
    assert shrink["shrink.txt"].hunks == (Hunk(5, 2, 4, 0),)
    assert place(at("shrink.txt", 4), shrink).reason == NO_HUNKS
    two = parse_diff(git(repo, "diff", "-U0", "HEAD~1", "HEAD", "--", "two_hunks.txt"))
    assert two["two_hunks.txt"].hunks == (
        Hunk(3, 1, 3, 1, frozenset({3})),
        Hunk(18, 1, 18, 2, frozenset({18, 19})),
    )
    assert place(at("two_hunks.txt", 4), two).reason == OUTSIDE_HUNKS


@pytest.mark.parametrize(
    ("finding", "kind", "suggestion", "reason"),
    [
        (at("two_hunks.txt", 3), "line", False, None),  # an added line
        (at("two_hunks.txt", 1), "line", False, None),  # a context line
        (at("two_hunks.txt", 3, replacement="x"), "line", True, None),
        (at("two_hunks.txt", 6, 1, "x\n"), "range", True, None),  # the whole hunk
        (at("two_hunks.txt", 21, 15), "range", False, None),
        (at("two_hunks.txt", 7), "summary", False, OUTSIDE_HUNKS),
        (at("two_hunks.txt", 14), "summary", False, OUTSIDE_HUNKS),
        (at("two_hunks.txt", 22), "summary", False, OUTSIDE_HUNKS),
        (at("two_hunks.txt", 16, 5, "x"), "summary", False, RANGE_ACROSS_HUNKS),
        (at("two_hunks.txt", 7, 6), "summary", False, OUTSIDE_HUNKS),
        (at("two_hunks.txt", 15, 14), "summary", False, RANGE_ACROSS_HUNKS),
        (at("added.py", 2, 1, ""), "range", True, None),
        (at("gone.txt", 1), "summary", False, FILE_DELETED),
        (at("image.bin", 1), "summary", False, BINARY_FILE),
        (at("mode.sh", 1), "summary", False, NO_HUNKS),
        (at("empty_new.txt", 1), "summary", False, NO_HUNKS),
        (at("old_name.txt", 12), "summary", False, NOT_IN_DIFF),
        (at("new_name.txt", 12, 9, "x"), "range", True, None),
        (at("new_name.txt", 8), "summary", False, OUTSIDE_HUNKS),
        (at("untouched.txt", 1), "summary", False, NOT_IN_DIFF),
        (at("no_eol.txt", 3, replacement="C"), "line", True, None),
        (at("sp ace.txt", 2), "line", False, None),
        (at("caf\u00e9.txt", 1), "line", False, None),
        (at("tab\tname.txt", 1), "line", False, None),
        (at("shrink.txt", 7, 2), "range", False, None),
        (at("shrink.txt", 8), "summary", False, OUTSIDE_HUNKS),
    ],
    ids=lambda value: value.location if isinstance(value, Finding) else str(value),
)
def test_a_finding_is_placed_where_github_accepts_it(
    files: dict[str, FileDiff],
    finding: Finding,
    kind: str,
    suggestion: bool,
    reason: str | None,
) -> None:
    placement = place(finding, files)
    assert (placement.kind, placement.suggestion, placement.reason) == (kind, suggestion, reason)
    assert placement.inline == (kind != "summary")
    assert bool(placement.detail) == (kind == "summary")


def test_a_finding_with_a_problem_goes_to_the_summary_with_it(
    files: dict[str, FileDiff],
) -> None:
    odd = Finding("two_hunks.txt", 3, "P1", "t", "b", problem=LINE_PAST_END, problem_detail="d")
    placement = place(odd, files)
    assert (placement.kind, placement.reason, placement.detail) == ("summary", LINE_PAST_END, "d")


def test_place_all_keeps_every_finding_in_order(files: dict[str, FileDiff]) -> None:
    findings = [at("two_hunks.txt", 3), at("gone.txt", 1), at("added.py", 1)]
    placed = place_all(findings, files)
    assert [p.finding for p in placed] == findings
    assert [p.kind for p in placed] == ["line", "summary", "line"]


def test_an_empty_diff_has_no_files() -> None:
    assert parse_diff("") == {}


def test_a_deleted_file_replaced_by_a_new_one_of_the_same_name_is_the_new_one(
    tmp_path: Path,
) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    write(tmp_path, "x", "one\n")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "base")
    (tmp_path / "x").unlink()
    (tmp_path / "x").symlink_to("target")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "head")
    diff = git(tmp_path, "diff", "HEAD~1", "HEAD")
    assert diff.count("diff --git a/x b/x") == 2
    files = parse_diff(diff)
    assert files["x"].status == "added"
    assert place(at("x", 1), files).kind == "line"


BROKEN = [
    "not a diff\n",
    "diff --cc x\n",
    "diff --git a/x b/x\n--- a/x\n",
    "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n",  # the diff ends in a hunk
    "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n+c\n",  # too many lines
    "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-a\n-b\n-c\n",
    "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n?a\n",
    "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -x +1 @@\n-a\n+b\n",
    "diff --git x x\n--- x\n+++ x\n@@ -1 +1 @@\n-a\n+b\n",  # no a/ b/ prefixes
    "diff --git a/x b/x\n--- /dev/null\n+++ /dev/null\n",
    "diff --git a/x b/y\nold mode 100644\nnew mode 100755\n",  # two names, no rename
    'diff --git "a/x b/x\nold mode 100644\nnew mode 100755\n',  # an unclosed quote
    'diff --git "a/\\q" "b/\\q"\nold mode 100644\nnew mode 100755\n',  # a bad escape
    "diff --git a/x b/x\nsomething else\n",
]


@pytest.mark.parametrize("text", BROKEN)
def test_a_diff_kdev_cannot_read_is_an_error_not_a_guess(text: str) -> None:
    with pytest.raises(DiffError) as caught:
        parse_diff(text)
    assert caught.value.reason == DIFF_UNPARSEABLE
    assert str(caught.value).startswith("diff line ")


# --- the property: a line is anchorable iff git shows it -----------------------------


@st.composite
def edits(draw: st.DrawFn) -> tuple[list[str], list[tuple[str, str]], int]:
    """A base of distinct lines and an edit script over it: every line kept, deleted or
    replaced, with fresh lines inserted anywhere. Distinct lines make the alignment
    unique, so any correct diff program finds exactly this script."""
    base = [f"base {n}" for n in range(draw(st.integers(0, 30)))]
    script: list[tuple[str, str]] = []
    fresh = iter(range(10_000))

    def inserts() -> None:
        for _ in range(draw(st.integers(0, 2)) if draw(st.booleans()) else 0):
            script.append(("add", f"new {next(fresh)}"))

    for line in base:
        inserts()
        action = draw(st.sampled_from(["keep", "keep", "keep", "del"]))
        script.append((action, line))
    inserts()
    return base, script, draw(st.integers(0, 4))


def shown_lines(script: list[tuple[str, str]], context: int) -> tuple[set[int], set[int]]:
    """The model: head lines a diff with ``context`` shows (added lines, and kept lines
    at most ``context`` kept lines away from a change), and the added ones."""
    shown: set[int] = set()
    added: set[int] = set()
    numbers: list[int | None] = []
    number = 0
    for action, _ in script:
        if action == "del":
            numbers.append(None)
            continue
        number += 1
        numbers.append(number)
        if action == "add":
            added.add(number)
    changes = [i for i, (action, _) in enumerate(script) if action != "keep"]
    for i, (action, _) in enumerate(script):
        head = numbers[i]
        if action == "del" or head is None:
            continue
        if action == "add":
            shown.add(head)
            continue
        for change in changes:
            lo, hi = sorted((i, change))
            kept_between = sum(1 for a, _ in script[lo : hi + 1] if a == "keep")
            if kept_between <= context:
                shown.add(head)
                break
    return shown, added


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("property")


@settings(max_examples=40, deadline=None)
@given(edits(), st.data())
def test_a_line_is_anchorable_exactly_when_git_shows_it(
    scratch: Path, case: tuple[list[str], list[tuple[str, str]], int], data: st.DataObject
) -> None:
    base, script, context = case
    head = [text for action, text in script if action != "del"]
    write(scratch, "old", "".join(f"{line}\n" for line in base))
    write(scratch, "new", "".join(f"{line}\n" for line in head))
    diff = git(scratch, "diff", "--no-index", f"-U{context}", "old", "new", ok=(0, 1))
    files = parse_diff(diff)
    shown, added = shown_lines(script, context)
    got = files.get("new")
    assert (got.right_lines if got else set()) == shown
    assert {n for hunk in (got.hunks if got else ()) for n in hunk.added} == added
    for _ in range(5):
        line = data.draw(st.integers(1, len(head) + 2))
        start = data.draw(st.none() | st.integers(1, line))
        placement = place(at("new", line, start, replacement="r"), files)
        wanted = set(range(start or line, line + 1))
        assert placement.inline == (wanted <= shown), (start, line, diff)
        assert placement.suggestion == placement.inline
