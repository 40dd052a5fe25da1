"""The repository stands on its own: no file reads or links a path outside it."""

from __future__ import annotations

import fnmatch
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Built from pieces so this file does not match itself.
OUTSIDE = re.compile(
    "|".join(
        [
            re.escape(".." + "/shared"),
            re.escape("/" + "work/"),
            "/" + r"home/[A-Za-z0-9_.-]+",
            "/" + r"root/",
            "/" + r"Users/[A-Za-z0-9_.-]+",
        ]
    )
)
# Paths that are not this machine's: the sandbox's own HOME inside bwrap, a config
# example for a CI user, a file the hostile reviewer fixture snoops for, and the
# directories of a container's Dockerfile that a real review comment in the corpus
# (tests/data/bot_comments.json) quotes.
NOT_OURS = re.compile(
    r"/" + r"home/reviewer\b|/" + r"home/ci/|/" + r"root/\.config/gh/|"
    r"/" + r"home/\.lilith\b|/" + r"home/LogFiles\b"
)
MARKDOWN_LINK = re.compile(r"\]\(([^)\s]+)\)")
SKIPPED_DIRS = {".git", ".venv", "build", "dist", "__pycache__", ".mypy_cache", ".ruff_cache"}


def tracked_files() -> list[Path]:
    """``git ls-files`` (plus new, not ignored files); a walk when there is no git."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout
        names = [name for name in out.decode().split("\0") if name]
        return [ROOT / name for name in names if (ROOT / name).is_file()]
    except (OSError, subprocess.CalledProcessError):
        ignored = [*SKIPPED_DIRS, *ignore_patterns()]
        return [
            path
            for path in ROOT.rglob("*")
            if path.is_file()
            and not any(
                fnmatch.fnmatch(part, pattern)
                for part in path.relative_to(ROOT).parts
                for pattern in ignored
            )
        ]


def ignore_patterns() -> list[str]:
    """The simple name patterns of ``.gitignore`` (what a copy without git still has)."""
    lines = (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    return [line.strip().rstrip("/") for line in lines if line.strip() and line[0] != "#"]


def text_of(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None


def test_no_file_names_a_path_outside_the_repository() -> None:
    files = tracked_files()
    assert len(files) > 50
    hits = []
    for path in files:
        text = text_of(path)
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if OUTSIDE.search(NOT_OURS.sub("", line)):
                hits.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert hits == []


def without_code(markdown: str) -> str:
    """``markdown`` without fenced blocks and code spans: a link written as an example
    inside code (``[text](url)``) is not a link."""
    kept, fenced = [], False
    for line in markdown.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if not fenced:
            kept.append(re.sub(r"`+[^`]*`+", "", line))
    return "\n".join(kept)


def test_no_markdown_link_leaves_the_repository() -> None:
    hits = []
    for path in tracked_files():
        if path.suffix != ".md" or (text := text_of(path)) is None:
            continue
        for target in MARKDOWN_LINK.findall(without_code(text)):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            resolved = (path.parent / target.split("#", 1)[0]).resolve()
            if not resolved.is_relative_to(ROOT) or not resolved.exists():
                hits.append(f"{path.relative_to(ROOT)}: {target}")
    assert hits == []


def test_the_pattern_catches_what_it_is_meant_to() -> None:
    for bad in (".." + "/shared/design/X.md", "/" + "work/shared/fixtures", "/" + "home/alice/x"):
        assert OUTSIDE.search(bad), bad
    for fine in ("tests/fixtures/github/pull.json", "docs/decisions.md", "../x"):
        assert not OUTSIDE.search(fine), fine
