"""The engine is generic: no file in engine/ (code, docstrings, comments, migrations,
templates) names what the wrapper does with a fired event (issue 16)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ENGINE = Path(__file__).resolve().parents[2] / "engine"
WORDS = ("review", "reviewer", "reviews", "verdict", "kdev", "describe")
PATTERN = re.compile(r"\b(?:" + "|".join(WORDS) + r")\b", re.IGNORECASE)


def hits(root: Path) -> list[str]:
    """``file:line: text`` for every word of WORDS in every text file under ``root``."""
    found = []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts:
            continue
        text = path.read_bytes().decode("utf-8")  # a binary file in engine/ fails loudly
        for number, line in enumerate(text.splitlines(), start=1):
            if PATTERN.search(line):
                found.append(f"{path.relative_to(root.parent)}:{number}: {line.strip()}")
    return found


def test_no_file_in_the_engine_names_a_review_word() -> None:
    found = hits(ENGINE)
    assert not found, "review words in engine/:\n" + "\n".join(found)


def test_the_scan_reads_every_kind_of_file_and_finds_each_word(tmp_path: Path) -> None:
    root = tmp_path / "engine"
    (root / "migrations" / "versions").mkdir(parents=True)
    (root / "a.py").write_text('"""Docstring."""\nx = 1  # a Review here\n')
    (root / "migrations" / "versions" / "0001.py").write_text("# the reviewer\n")
    (root / "script.py.mako").write_text("${verdict}\n")
    (root / "clean.py").write_text("previews = reviewing = kdevs = describes_ = 1\n")
    (root / "words.txt").write_text("\n".join(["KDEV", "reviews", "describe."]) + "\n")
    assert hits(root) == [
        "engine/a.py:2: x = 1  # a Review here",
        "engine/migrations/versions/0001.py:1: # the reviewer",
        "engine/script.py.mako:1: ${verdict}",
        "engine/words.txt:1: KDEV",
        "engine/words.txt:2: reviews",
        "engine/words.txt:3: describe.",
    ]


@pytest.mark.parametrize("word", WORDS)
def test_each_word_is_matched_whole_and_in_any_case(word: str) -> None:
    assert PATTERN.search(f"x {word.upper()} y")
    assert PATTERN.search(f"({word})")
    assert not PATTERN.search(f"x {word}ing_ y")
