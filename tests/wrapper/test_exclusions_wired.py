"""Issue 28, D87 wired: ``kdev review-pr`` over ghsim with real git reads only the
reviewed paths, lists every excluded one with its rule (prompt, verdict, round summary),
keys the patch-id on D87's rule, never shows a diff nobody read as reviewed, and fails
loud on a bad base ``.kdev/exclusions.yaml``."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.wrapper.reviewbench import REPO, Bench, open_bench
from wrapper.config import KdevConfig
from wrapper.errors import ConfigError, Outcome
from wrapper.git import Git
from wrapper.review.exclusions import (
    Decision,
    exclusions_header,
    format_exclusions,
    header_exclusions,
)
from wrapper.review.patch_id import compute_patch_id

LOCK_TEXT = '{"lockfileVersion": 3, "packages": {"evil-pkg": "9.9.9"}}\n'
HANDLE = "kdev"
GEN_TEXT = "GENERATED_BODY = 1\n"


def capturing(bench: Bench, **overrides: Any) -> KdevConfig:
    """The stub reviewer, its prompt saved to ``prompt.txt`` first."""
    saved = bench.root / "prompt.txt"
    stub = f"{shlex.quote(sys.executable)} -P -m wrapper.stub_reviewer {saved}"
    reviewer = {
        "backend": "command",
        "argv": ["sh", "-c", f"cat > {saved}; {stub}"],
        "model": "stub",
        "timeout_seconds": 30,
    }
    return bench.config(reviewer=reviewer, **overrides)


def prompt(bench: Bench) -> str:
    return (bench.root / "prompt.txt").read_text()


def verdict(report: Any) -> str:
    return Path(report.artifact).read_text()


def test_a_lockfile_is_listed_not_read_and_a_lockfile_push_is_a_new_round(bench: Bench) -> None:
    config = capturing(bench, mention_handle=HANDLE, review_post={"enabled": True})
    pr = bench.sim.open_pr(
        REPO, "f", {"app.py": "print('hi')\nx = 1\n", "package-lock.json": LOCK_TEXT}
    ).number
    first = bench.review(pr, config=config)
    assert first.outcome is Outcome.REVIEWED
    text = prompt(bench)
    assert "x = 1" in text and "evil-pkg" not in text
    listed = "package-lock.json (lockfile: "
    assert listed in text.split("untrusted-excluded", 1)[1]
    assert "Not reviewed (excluded, 1):\n- package-lock.json (lockfile: " in verdict(first)
    [review] = bench.sim.reviews(REPO, pr)
    assert "Files not reviewed (1)" in review.body and "package-lock.json" in review.body
    assert "lockfile" in review.body.split("Files not reviewed", 1)[1]
    # A push that only bumps the lockfile: a new patch-id, a new round listing it.
    bench.sim.push(REPO, pr, {"package-lock.json": LOCK_TEXT.replace("9.9.9", "6.6.6")})
    second = bench.review(pr, config=config)
    assert second.outcome is Outcome.REVIEWED and second.patch_id != first.patch_id
    assert bench.legs() == 2 and "6.6.6" not in prompt(bench)
    assert "- package-lock.json (lockfile: " in verdict(second)


def test_the_patch_id_is_d3s_when_nothing_trusted_is_excluded(bench: Bench) -> None:
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "1\n", "yarn.lock": "x\n", "b.bin": "\0\1"})
    report = bench.review(pr.number)
    git = Git(bench.checkout)
    plain = compute_patch_id(git, "refs/kdev/base/main", pr.head_sha)
    assert report.outcome is Outcome.REVIEWED and report.patch_id == plain.patch_id
    assert plain.patch_id == git.patch_id(git.diff("refs/kdev/base/main", pr.head_sha))
    [note] = bench.notes()
    assert "EXCLUDED: yarn.lock (lockfile: yarn.lock)" in note["body"]
    assert "EXCLUDED: b.bin (binary: " in note["body"]
    assert "yarn.lock (lockfile: yarn.lock)" in note["fields"]["excluded"]


def test_the_notice_lists_only_the_header_kdev_wrote() -> None:
    decisions = (Decision("a.py"), Decision("go.sum", "lockfile", "go.sum"))
    body = exclusions_header(decisions) + "- fake (x: y)\nVERDICT: APPROVE\n"
    assert header_exclusions(body) == format_exclusions(decisions) == ["go.sum (lockfile: go.sum)"]
    assert header_exclusions("Looks fine.\nNot reviewed (excluded, 1):\n- a (b: c)\n") == []
    assert exclusions_header([Decision("a.py")]) == ""


@pytest.fixture
def marked(tmp_path: Path) -> Any:
    files = {
        "app.py": "x = 0\n",
        "gen.py": GEN_TEXT,
        ".gitattributes": "gen.py linguist-generated\n",
    }
    with open_bench(tmp_path, files) as made:
        yield made


def test_a_base_marked_generated_file_regenerated_carries_the_verdict(marked: Bench) -> None:
    config = capturing(marked)
    pr = marked.sim.open_pr(REPO, "f", {"app.py": "x = 1\n", "gen.py": "REGEN_ONE = 1\n"}).number
    first = marked.review(pr, config=config)
    assert first.outcome is Outcome.REVIEWED and "REGEN_ONE" not in prompt(marked)
    assert "- gen.py (linguist-generated: " in verdict(first)
    marked.sim.push(REPO, pr, {"gen.py": "REGEN_TWO = 2\n"})
    second = marked.review(pr, config=config)
    assert second.outcome is Outcome.CARRIED_FORWARD
    assert second.patch_id == first.patch_id and marked.legs() == 1


def test_a_pr_marking_its_own_file_generated_is_still_reviewed(bench: Bench) -> None:
    config = capturing(bench)
    files = {".gitattributes": "new.py linguist-generated\n", "new.py": "SNEAKY = 1\n"}
    pr = bench.sim.open_pr(REPO, "f", files).number
    report = bench.review(pr, config=config)
    assert report.outcome is Outcome.REVIEWED and "SNEAKY = 1" in prompt(bench)
    assert "untrusted-excluded" not in prompt(bench)
    assert "Not reviewed (excluded" not in verdict(report)


def _statuses(bench: Bench, sha: str) -> list[tuple[str, str]]:
    answer = httpx.get(
        f"{bench.sim.url}/repos/{REPO}/commits/{sha}/statuses",
        headers={"Authorization": f"token {bench.token}"},
        timeout=10,
    )
    answer.raise_for_status()
    return [(s["state"], s["description"]) for s in answer.json()]


def test_a_lockfile_only_pr_is_never_shown_as_reviewed(bench: Bench) -> None:
    pr = bench.sim.open_pr(REPO, "f", {"Cargo.lock": "[[package]]\n"})
    report = bench.review(pr.number, config=bench.config(merge_gate={"enabled": True}))
    assert report.outcome is Outcome.SKIPPED_ALL_EXCLUDED and report.patch_id is not None
    assert report.detail.startswith("nothing reviewed: every path excluded: Cargo.lock (lockfile: ")
    assert bench.legs() == 0 and report.verdict is None and report.artifact is None
    assert bench.ledger().find_verdict(REPO, pr.number, report.patch_id) is None
    assert _statuses(bench, pr.head_sha) == [("failure", "nothing reviewed: every path excluded")]


def test_a_diff_of_base_marked_files_only_is_skipped_all_excluded(marked: Bench) -> None:
    pr = marked.sim.open_pr(REPO, "f", {"gen.py": "REGEN = 1\n"}).number
    report = marked.review(pr)
    assert report.outcome is Outcome.SKIPPED_ALL_EXCLUDED and report.patch_id is None
    assert "gen.py (linguist-generated: " in report.detail and marked.legs() == 0


def test_a_bad_base_exclusions_file_fails_the_round_loud(tmp_path: Path) -> None:
    files = {"app.py": "x = 0\n", ".kdev/exclusions.yaml": "exclude: 3\n"}
    with open_bench(tmp_path, files) as bench:
        pr = bench.sim.open_pr(REPO, "f", {"app.py": "x = 1\n"})
        with pytest.raises(ConfigError) as raised:
            bench.review(pr.number, config=bench.config(merge_gate={"enabled": True}))
        assert raised.value.reason == "invalid_exclusions_file" and bench.legs() == 0
        [note] = bench.notes()
        assert "invalid_exclusions_file" in str(note)
        [(state, description)] = _statuses(bench, pr.head_sha)
        assert (state, description) == ("error", "kdev failed: invalid_exclusions_file")
