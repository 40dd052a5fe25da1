"""Issue 28, incremental rounds (D91, D92): the pure parts. The per-file diff of two diffs
on real git (a rebase onto a moved base shows nothing; a real change shows only its file),
the fingerprint across line shifts, contract version 2 and its failures, the settle
rules, the history's failures, and the bench's entry point in both modes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from wrapper.errors import LedgerError
from wrapper.ledger.findings_history import (
    UNREADABLE,
    History,
    history_path,
    read_history,
    write_history,
)
from wrapper.ledger.ledger import Ledger
from wrapper.review import findings_contract as fc
from wrapper.review.finding_identity import anchored_lines, fingerprint, locate
from wrapper.review.findings_earlier import (
    EARLIER_MALFORMED,
    EARLIER_REPEATED,
    EARLIER_UNKNOWN_ID,
    EarlierReport,
    merge_earlier,
)
from wrapper.review.incremental_prompt import (
    EarlierFinding,
    build_incremental_prompt,
    incremental_prompt_text,
    interdiff,
)
from wrapper.review.incremental_settle import SettleRefused, settle

LINES = [f"line {n}" for n in range(1, 41)]


def git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(repo), "PATH": "/usr/bin:/bin"}  # fmt: skip
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout


def commit(repo: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD").strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    git(tmp_path, "init", "-q", "-b", "main")
    commit(tmp_path, {"a.py": "\n".join(LINES) + "\n", "b.py": "x = 1\n"}, "base")
    return tmp_path


def test_a_rebase_onto_a_moved_base_shows_no_change(repo: Path) -> None:
    base = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-qb", "work")
    commit(repo, {"a.py": "\n".join(LINES).replace("line 30", "LINE 30") + "\n"}, "work")
    reviewed = git(repo, "diff", f"{base}...work")
    git(repo, "checkout", "-q", "main")
    moved = "\n".join(["new top", *LINES]) + "\n"  # the base moves every line down
    commit(repo, {"a.py": moved, "b.py": "x = 2\n"}, "base moves")
    git(repo, "checkout", "-q", "work")
    git(repo, "rebase", "-q", "main")
    rebased = git(repo, "diff", "main...work")
    assert rebased != reviewed  # the hunk numbers moved ...
    assert interdiff(reviewed, rebased).changed == ()  # ... and nothing changed
    commit(repo, {"a.py": moved.replace("line 30", "LINE 31")}, "a real change")
    changed = interdiff(reviewed, git(repo, "diff", "main...work"))
    assert changed.changed == ("a.py",)
    assert "-+LINE 30" in changed.text and "++LINE 31" in changed.text


def test_a_file_only_the_reviewed_diff_had_is_a_change() -> None:
    old = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"
    assert interdiff(old, "").changed == ("x",)


def test_the_fingerprint_survives_a_shift_and_not_a_change() -> None:
    before = anchored_lines(LINES, 10, 9)
    shifted = ["new", "new", *LINES]
    after = anchored_lines(shifted, 12, 11)
    assert fingerprint("a.py", "Bad  Loop", before) == fingerprint("a.py", "bad loop", after)
    edited = [*LINES[:9], "line 10 changed", *LINES[10:]]
    assert fingerprint("a.py", "bad loop", anchored_lines(edited, 10, 9)) != fingerprint(
        "a.py", "bad loop", before
    )
    assert fingerprint("b.py", "bad loop", before) != fingerprint("a.py", "bad loop", before)
    assert locate(before, shifted, 10) == 12
    assert locate(before, edited, 10) is None and locate(before, None, 10) is None
    assert anchored_lines(LINES, 99, None) == [] and anchored_lines(None, 1, None) == []


def test_the_nearest_copy_is_where_a_repeated_line_is() -> None:
    lines = ["x", "a", "x", "b", "x"]
    assert locate(["x"], lines, 5) == 5 and locate(["x"], lines, 2) == 1
    assert locate(["x"], lines, 4) == 3  # a tie: the earlier one


def v2(**extra: Any) -> str:
    data = {"kdev_findings": 2, "summary": "s", "findings": [], "earlier": []}
    data.update(extra)
    return f"```kdev-findings\n{json.dumps(data)}\n```\nVERDICT: APPROVE\n"


def parsed(text: str) -> fc.ParsedReview | fc.ContractFailure:
    return fc.parse_review(text, structured=False, head_lines={})


def test_version_2_carries_the_report_and_version_1_stays_accepted() -> None:
    report = [{"id": "F1", "status": "fixed", "note": "done"}, {"id": "F2", "status": "wrong",
              "note": None}]  # fmt: skip
    answer = parsed(v2(earlier=report))
    assert isinstance(answer, fc.ParsedReview)
    assert answer.earlier == (EarlierReport("F1", "fixed", "done"), EarlierReport("F2", "wrong"))
    old = parsed(v2(kdev_findings=1, earlier=None).replace(', "earlier": null', ""))
    assert isinstance(old, fc.ParsedReview) and old.earlier == ()
    with_key = parsed(v2(kdev_findings=1))  # version 1 has no such key
    assert isinstance(with_key, fc.ContractFailure) and with_key.reason == fc.UNKNOWN_FIELD


@pytest.mark.parametrize(
    ("earlier", "reason"),
    [
        ({}, EARLIER_MALFORMED),
        ([{"id": "F1", "status": "gone", "note": None}], EARLIER_MALFORMED),
        ([{"id": "1", "status": "fixed", "note": None}], EARLIER_MALFORMED),
        ([{"id": "F1", "status": "fixed", "note": None, "why": 1}], EARLIER_MALFORMED),
        ([{"id": "F1", "status": "fixed", "note": 3}], EARLIER_MALFORMED),
        ([{"id": "F1", "status": "fixed", "note": "x" * 1001}], EARLIER_MALFORMED),
        (["F1"], EARLIER_MALFORMED),
        ([{"id": "F1", "status": "fixed", "note": None}] * 2, EARLIER_REPEATED),
    ],
    ids=["not-array", "status", "id", "key", "note-type", "note-long", "item", "repeated"],
)
def test_a_malformed_report_refuses_the_whole_block(earlier: Any, reason: str) -> None:
    answer = parsed(v2(earlier=earlier))
    assert isinstance(answer, fc.ContractFailure) and answer.reason == reason


def test_the_structured_schema_of_version_2_requires_the_report() -> None:
    schema = fc.response_format(2)["json_schema"]["schema"]
    assert "earlier" in schema["required"] and schema["properties"]["kdev_findings"]["enum"] == [2]
    assert "earlier" not in fc.response_format()["json_schema"]["schema"]["properties"]


def test_chunk_legs_reports_merge_with_standing_first() -> None:
    legs = [
        (EarlierReport("F1", "fixed"), EarlierReport("F2", "fixed")),
        (EarlierReport("F1", "standing"), EarlierReport("F2", "wrong")),
    ]
    merged = {r.id: r.status for r in merge_earlier(legs)}
    assert merged == {"F1": "standing", "F2": "wrong"}


def first_history() -> tuple[History, dict[str, list[str]]]:
    answer = fc.ParsedReview(
        "findings",
        "REQUEST_CHANGES",
        "s",
        (fc.Finding("a.py", 5, "P2", "A", "a"), fc.Finding("a.py", 9, "P3", "B", "b")),
    )
    files = {"a.py": LINES}
    done = settle(History(), answer, files.get, listed=(), patch_id="p1", head_sha="h1",
                  derived=False)  # fmt: skip
    return done.history, files


def test_settle_drops_repeats_closes_reported_and_posts_reintroduced() -> None:
    history, files = first_history()
    assert [f.id for f in history.findings] == ["F1", "F2"]
    again = fc.ParsedReview(
        "findings", "APPROVE", "s", (fc.Finding("a.py", 5, "P2", "a", "again"),),
        earlier=(EarlierReport("F2", "fixed", "gone"),),
    )  # fmt: skip
    second = settle(history, again, files.get, listed=("F1", "F2"), patch_id="p2",
                    head_sha="h2", derived=True)  # fmt: skip
    assert second.parsed.findings == () and second.repeated == ("F1",)
    assert second.parsed.verdict == "REQUEST_CHANGES"  # F1 (P2) stands: derived
    assert "Derived verdict" in second.parsed.summary
    assert [f.id for f in second.closed] == ["F2"]
    back = fc.ParsedReview("findings", "APPROVE", "s", (fc.Finding("a.py", 9, "P3", "B", "b"),))
    third = settle(second.history, back, files.get, listed=("F1",), patch_id="p3",
                   head_sha="h3", derived=False)  # fmt: skip
    [new] = [f for f in third.history.findings if f.round == "p3"]
    assert (new.id, new.reintroduces) == ("F3", "F2") and len(third.parsed.findings) == 1


def test_a_finding_reported_fixed_and_found_again_stands() -> None:
    history, files = first_history()
    contradictory = fc.ParsedReview(
        "findings", "APPROVE", "s", (fc.Finding("a.py", 5, "P2", "A", "a"),),
        earlier=(EarlierReport("F1", "fixed"),),
    )  # fmt: skip
    done = settle(history, contradictory, files.get, listed=("F1", "F2"), patch_id="p2",
                  head_sha="h2", derived=False)  # fmt: skip
    assert done.closed == () and done.parsed.findings == ()
    assert {f.id: f.state for f in done.history.findings}["F1"] == "open"


def test_settle_refuses_an_unlisted_id() -> None:
    history, files = first_history()
    answer = fc.ParsedReview("findings", "APPROVE", "s", earlier=(EarlierReport("F7", "fixed"),))
    with pytest.raises(SettleRefused) as caught:
        settle(history, answer, files.get, listed=("F1",), patch_id="p2", head_sha="h2",
               derived=False)  # fmt: skip
    assert caught.value.reason == EARLIER_UNKNOWN_ID


def test_the_history_round_trips_and_an_unreadable_one_fails_loud(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "reviews")
    history, _ = first_history()
    write_history(ledger, "o/r", 1, history)
    assert read_history(ledger, "o/r", 1) == history
    history_path(ledger, "o/r", 1).write_text('{"version": 1}')
    with pytest.raises(LedgerError) as caught:
        read_history(ledger, "o/r", 1)
    assert caught.value.reason == UNREADABLE
    history_path(ledger, "o/r", 1).write_text("{")
    with pytest.raises(LedgerError):
        read_history(ledger, "o/r", 1)


OLD = (
    "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-a\n+b\n"
    "diff --git a/big.py b/big.py\n--- a/big.py\n+++ b/big.py\n@@ -1 +1 @@\n-c\n"
    + "".join(f"+{n}\n" for n in range(1))
)
NEW = OLD.replace("+b\n", "+B\n")


def test_the_bench_entry_point_in_both_modes() -> None:
    earlier = [EarlierFinding("F1", "a.py", 1, "P2", "bad b", "why", code="changed")]
    full = incremental_prompt_text(OLD, NEW, earlier, "full")
    delta = incremental_prompt_text(OLD, NEW, earlier, "delta")
    assert "diff --git a/big.py" in full and "diff --git a/big.py" not in delta
    for text in (full, delta):
        assert "F1 [P2] a.py:1 (its code changed): bad b" in text
        assert "untrusted-changes-since-review" in text and "kdev_findings" in text
    assert build_incremental_prompt(OLD, OLD, [], "full").section.startswith("No file's change")
    with pytest.raises(ValueError):
        build_incremental_prompt(OLD, NEW, [], "half")  # type: ignore[arg-type]
