"""Issue 24: nothing of the PR runs outside the sandbox. A PR's ``.gitattributes`` names
filter, diff and merge drivers, textconv, ``export-subst``, ``export-ignore``, ``ident``
and end-of-line conversion, and the operator's global git config defines those drivers
(as ``git lfs install`` does for ``filter.lfs``): a whole ``kdev review-pr`` against
ghsim never runs one, and the tree the reviewer sees is the head's, byte for byte."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.wrapper.reviewbench import REPO, Bench
from wrapper.errors import Outcome

ATTRIBUTES = """\
*.txt filter=evil diff=evil merge=evil
*.bin filter=lfs diff=lfs merge=lfs -text
subst.txt export-subst
ignored.txt export-ignore
*.crlf text eol=crlf
*.id ident
"""
FILES: dict[str, str | bytes] = {
    ".gitattributes": ATTRIBUTES,
    "a.txt": "hello\n",
    "model.bin": b"version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 1\n",
    "subst.txt": "commit $Format:%H$\n",
    "ignored.txt": "still here\n",
    "lines.crlf": "one\ntwo\n",
    "v.id": "$Id$\n",
}


def evil_global_config(root: Path) -> tuple[Path, Path]:
    """A global git config whose every driver runs a script that leaves a marker."""
    marker = root / "driver-ran"
    script = root / "driver.sh"
    script.write_text(f'#!/bin/sh\necho "$0 $*" >> {marker}\ncat\n')
    script.chmod(0o755)
    drivers = "\n".join(
        (
            '[filter "evil"]',
            f"\tsmudge = {script}",
            f"\tclean = {script}",
            f"\tprocess = {script}",
            "\trequired = true",
            '[diff "evil"]',
            f"\ttextconv = {script}",
            f"\tcommand = {script}",
            '[merge "evil"]',
            f"\tdriver = {script} %O %A %B",
            '[filter "lfs"]',
            f"\tsmudge = {script}",
            f"\tclean = {script}",
            f"\tprocess = {script}",
            "\trequired = true",
            '[diff "lfs"]',
            f"\ttextconv = {script}",
            "[core]",
            f"\tattributesFile = {root / 'global-attributes'}",
        )
    )
    (root / "global-attributes").write_text("* filter=evil\n")
    config = root / "global.gitconfig"
    config.write_text(drivers + "\n")
    return config, marker


def head_tree(checkout: Path, sha: str) -> dict[str, tuple[str, bytes]]:
    """path -> (mode, blob) of every file of ``sha``'s tree, read from git's objects."""
    listing = subprocess.run(
        ["git", "ls-tree", "-r", "-z", sha],
        cwd=checkout,
        capture_output=True,
        check=True,
    ).stdout
    found = {}
    for record in filter(None, listing.split(b"\0")):
        meta, _, path = record.partition(b"\t")
        mode, _, oid = meta.decode().split(" ")
        data = subprocess.run(
            ["git", "cat-file", "blob", oid], cwd=checkout, capture_output=True, check=True
        ).stdout
        found[path.decode()] = (mode, data)
    return found


def test_a_review_runs_no_driver_and_the_reviewer_sees_the_heads_blobs(
    bench: Bench, monkeypatch: pytest.MonkeyPatch
) -> None:
    pr = bench.sim.open_pr(REPO, "attrs", FILES)  # made before the evil config exists
    config_file, marker = evil_global_config(bench.root)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config_file))
    monkeypatch.setenv("HOME", str(bench.root))
    copy = bench.root / "seen"
    reviewer = {
        "backend": "command",
        "argv": ["sh", "-c", 'cp -a . "$KDEV_TREE_COPY"; cat >/dev/null; echo "VERDICT: APPROVE"'],
        "timeout_seconds": 30,
    }
    config = bench.config(reviewer=reviewer, reviewer_env=["KDEV_TREE_COPY"])
    report = bench.review(pr.number, config=config, environ={"KDEV_TREE_COPY": str(copy)})
    assert report.outcome is Outcome.REVIEWED and report.verdict == "APPROVE"
    assert not marker.exists(), marker.read_text()

    expected = head_tree(bench.checkout, pr.head_sha)
    seen = {path.relative_to(copy).as_posix(): path for path in copy.rglob("*") if path.is_file()}
    assert sorted(seen) == sorted(expected)
    for name, (mode, data) in expected.items():
        assert seen[name].read_bytes() == data, name
        assert seen[name].stat().st_mode & 0o777 == (0o755 if mode == "100755" else 0o644)
    assert (copy / "subst.txt").read_text() == "commit $Format:%H$\n"  # no export-subst
    assert (copy / "v.id").read_text() == "$Id$\n"  # no ident
    assert (copy / "lines.crlf").read_bytes() == b"one\ntwo\n"  # no eol conversion

    # The same setup does run the drivers through git archive (the old export): the
    # test could fail.
    subprocess.run(
        ["git", "archive", "--format=tar", pr.head_sha],
        cwd=bench.checkout,
        capture_output=True,
    )
    assert marker.exists()
