"""Issue 10, wrapper side: late events, whitespace, GitHub failures (review-pr)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.e2e.test_review_e2e import make_loop
from tests.wrapper.reviewbench import BIN, REPO, Bench
from wrapper.config import KdevConfig
from wrapper.errors import ConfigError, GitHubFailed, Outcome
from wrapper.git import Git
from wrapper.review.patch_id import compute_patch_id


def _patch_id_of(bench: Bench, head: str) -> str | None:
    git = Git(bench.checkout)
    subprocess.run(
        ["git", "fetch", "-q", "origin", head, "+refs/heads/main:refs/kdev/base/main"],
        cwd=bench.checkout,
        check=True,
    )
    return compute_patch_id(git, "refs/kdev/base/main", head).patch_id


def _wrong_index_entries(bench: Bench, pr: int) -> list[str]:
    """Heads whose index entry names a patch-id not computed from that head."""
    return [
        head
        for head, entry in bench.ledger().read_index(REPO, pr).items()
        if _patch_id_of(bench, head) != entry.patch_id
    ]


# --- item 1: a late event never records another diff's verdict -------------------------


def test_a_late_event_for_a_force_pushed_away_head_records_its_own_diff(bench: Bench) -> None:
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "x = 1\n"})
    old = pr.head_sha  # never fetched into the checkout
    bench.sim.advance(2)
    new = bench.sim.force_push(REPO, pr.number, {"a.py": "x = 2\n"})
    assert bench.review(pr.number, head_sha=new).outcome is Outcome.REVIEWED
    late = bench.review(pr.number, head_sha=old)
    # The late head is fetched by SHA: its own patch-id, never the new head's.
    assert late.outcome is Outcome.SKIPPED_STALE_HEAD
    assert late.patch_id == _patch_id_of(bench, old) != _patch_id_of(bench, new)
    index = bench.ledger().read_index(REPO, pr.number)
    assert old not in index
    assert _wrong_index_entries(bench, pr.number) == []
    assert bench.legs() == 1


def test_a_late_event_carries_forward_only_a_verdict_of_its_own_diff(bench: Bench) -> None:
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "x = 1\n"})
    first = pr.head_sha
    bench.review(pr.number, head_sha=first)
    bench.sim.advance(2)
    new = bench.sim.force_push(REPO, pr.number, {"a.py": "x = 2\n"})
    bench.review(pr.number, head_sha=new)
    bench.sim.advance(2)
    same = bench.sim.force_push(REPO, pr.number, {"a.py": "x = 1\n"})  # back to diff 1
    bench.sim.advance(2)
    bench.sim.force_push(REPO, pr.number, {"a.py": "x = 3\n"})
    late = bench.review(pr.number, head_sha=same)
    assert late.outcome is Outcome.CARRIED_FORWARD
    assert bench.ledger().read_index(REPO, pr.number)[same].carried_from == first
    assert _wrong_index_entries(bench, pr.number) == []


def test_a_head_the_remote_cannot_give_records_nothing(bench: Bench) -> None:
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "x = 1\n"})
    missing = "0123456789abcdef" * 2 + "01234567"
    report = bench.review(pr.number, head_sha=missing)
    assert report.outcome is Outcome.SKIPPED_STALE_HEAD and report.patch_id is None
    assert "cannot be fetched" in report.detail
    assert bench.ledger().read_index(REPO, pr.number) == {}
    assert not list((bench.root / "reviews").rglob("patch-*.md"))


# --- item 3: whitespace is significant ---------------------------------------------------


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (
            "def f(x, c):\n    if c:\n        pass\n    return x\n",
            "def f(x, c):\n    if c:\n        pass\n        return x\n",
        ),
        ("a:\n  b: 1\nc: 2\n", "a:\n  b: 1\n  c: 2\n"),
        ("all:\n\techo hi\n", "all:\n        echo hi\n"),
    ],
    ids=["python-return-into-if", "yaml-nesting", "makefile-tab"],
)
def test_a_whitespace_only_change_is_reviewed_again(bench: Bench, before: str, after: str) -> None:
    pr = bench.sim.open_pr(REPO, "f", {"m.txt": before})
    first = bench.review(pr.number)
    assert first.outcome is Outcome.REVIEWED
    bench.sim.advance(2)
    bench.sim.push(REPO, pr.number, {"m.txt": after})
    second = bench.review(pr.number)
    assert second.outcome is Outcome.REVIEWED and second.patch_id != first.patch_id
    assert bench.legs() == 2


# --- item 4: a GitHub failure is not a fork ----------------------------------------------


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ({"status": 401}, "github_auth"),
        ({"status": 403}, "github_auth"),
        ({"status": 502}, "github_unavailable"),
        ({"status": 503}, "github_unavailable"),
        ({"malformed": True}, "github_malformed"),
        ({"delay": 4.0}, "github_unavailable"),
    ],
    ids=["401", "403", "502", "503", "malformed", "timeout"],
)
def test_unreadable_metadata_fails_the_run_loudly(
    bench: Bench, fault: dict[str, object], reason: str
) -> None:
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "x = 1\n"})
    bench.sim.inject_fault("GET", rf"/pulls/{pr.number}$", times=None, **fault)  # type: ignore[arg-type]
    env = bench.kdev_env()
    env["LI_GITHUB_TIMEOUT"] = "1"
    argv = [str(BIN / "kdev"), "review-pr", "--repo", REPO, "--pr", str(pr.number)]
    argv += ["--head-sha", pr.head_sha, "--checkout", str(bench.checkout), "--json"]
    result = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == GitHubFailed.exit_code == 17, result.stderr
    assert result.stderr.strip().endswith(f"[{reason}]")
    assert "skipped_fork" not in result.stdout
    [note] = bench.notes()
    assert note["subject"].endswith("FAILURE") and f"FAILURE: {reason}" in note["body"]
    assert bench.ledger().read_index(REPO, pr.number) == {} and bench.legs() == 0


def test_a_null_head_repository_is_still_a_fork(bench: Bench) -> None:
    pr = bench.sim.open_pr(REPO, "evil", {"a.py": "1\n"}, from_fork="mallory/widgets")
    bench.sim.set_head_repo_null(REPO, pr.number)
    report = bench.review(pr.number, head_sha=pr.head_sha)
    assert report.outcome is Outcome.SKIPPED_FORK and report.detail == "head repository deleted"
    assert bench.notes() == []


def test_kdev_json_report_of_a_stale_late_head(bench: Bench) -> None:
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "x = 1\n"})
    old = pr.head_sha
    bench.sim.advance(2)
    bench.sim.force_push(REPO, pr.number, {"a.py": "x = 2\n"})
    argv = [str(BIN / "kdev"), "review-pr", "--repo", REPO, "--pr", str(pr.number)]
    argv += ["--head-sha", old, "--checkout", str(bench.checkout), "--json"]
    result = subprocess.run(argv, env=bench.kdev_env(), capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1])["outcome"] == "skipped_stale_head"
    index = bench.root / "reviews" / "octo__widgets" / f"pr-{pr.number}" / "index.json"
    assert not index.exists() or old not in index.read_text()


def test_a_legacy_stable_ledger_is_upgraded_and_never_matched(bench: Bench) -> None:
    """An old ledger keyed by --stable ids: its verdicts move aside, the PR is reviewed
    once more, and the old whitespace-blind id can never carry a verdict."""
    pr = bench.sim.open_pr(REPO, "f", {"m.py": "def f(x):\n    return x\n"})
    first = bench.review(pr.number)
    assert first.outcome is Outcome.REVIEWED
    reviews = bench.root / "reviews"
    pr_dir = reviews / "octo__widgets" / f"pr-{pr.number}"
    # Make it what an old kdev wrote: the verdict under its --stable id, no marker.
    diff = subprocess.run(
        ["git", "diff", f"refs/kdev/base/main...{pr.head_sha}"],
        cwd=bench.checkout,
        capture_output=True,
        check=True,
    ).stdout
    stable = (
        subprocess.run(["git", "patch-id", "--stable"], input=diff, capture_output=True, check=True)
        .stdout.split()[0]
        .decode()
    )
    verdict = Path(first.artifact)
    verdict.rename(pr_dir / f"patch-{stable}.md")
    text = (pr_dir / f"patch-{stable}.md").read_text().replace(first.patch_id, stable)
    (pr_dir / f"patch-{stable}.md").write_text(text)
    index = (pr_dir / "index.json").read_text().replace(first.patch_id, stable)
    (pr_dir / "index.json").write_text(index)
    (reviews / "ledger-format").unlink()
    assert bench.ledger().read_index(REPO, pr.number) == {}  # upgraded on open
    assert (pr_dir / "legacy-stable" / f"patch-{stable}.md").exists()
    assert (reviews / "ledger-format").read_text() == "patch-id: verbatim\n"
    again = bench.review(pr.number)
    assert again.outcome is Outcome.REVIEWED and again.patch_id == first.patch_id
    assert bench.legs() == 2
    assert bench.review(pr.number).outcome is Outcome.CARRIED_FORWARD  # once per upgrade


# --- item 5: --force checks everything before it deletes anything -------------------------


def _verdict_files(bench: Bench) -> list[str]:
    return sorted(p.name for p in (bench.root / "reviews").rglob("patch-*.md"))


def test_force_with_a_stale_head_is_an_error_that_deletes_nothing(bench: Bench) -> None:
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "x = 1\n"})
    old = pr.head_sha
    assert bench.review(pr.number).outcome is Outcome.REVIEWED
    before = (_verdict_files(bench), bench.ledger().read_index(REPO, pr.number))
    bench.sim.advance(2)
    bench.sim.push(REPO, pr.number, {"b.py": "y = 2\n"})
    with pytest.raises(ConfigError) as caught:
        bench.review(pr.number, head_sha=old, force=True)
    assert caught.value.reason == "stale_head" and "nothing was deleted" in caught.value.message
    assert (_verdict_files(bench), bench.ledger().read_index(REPO, pr.number)) == before
    assert bench.legs() == 1


@pytest.mark.parametrize("failure", ["no_reviewer", "metadata", "budget"])
def test_force_that_cannot_review_deletes_nothing(bench: Bench, failure: str) -> None:
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "x = 1\n"})
    assert bench.review(pr.number).outcome is Outcome.REVIEWED
    before = (_verdict_files(bench), bench.ledger().read_index(REPO, pr.number))
    if failure == "no_reviewer":
        with pytest.raises(ConfigError):
            bench.review(pr.number, force=True, config=KdevConfig())
    elif failure == "metadata":
        bench.sim.inject_fault("GET", rf"/pulls/{pr.number}$", status=401, times=None)
        with pytest.raises(GitHubFailed):
            bench.review(pr.number, head_sha=pr.head_sha, force=True)
    else:
        config = bench.config(budgets={"daily_legs_per_repo": 1})
        report = bench.review(pr.number, force=True, config=config)
        assert report.outcome is Outcome.DEFERRED_BUDGET
    assert (_verdict_files(bench), bench.ledger().read_index(REPO, pr.number)) == before


def test_force_without_head_sha_reviews_the_current_head(bench: Bench) -> None:
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "x = 1\n"})
    assert bench.review(pr.number).outcome is Outcome.REVIEWED
    bench.sim.advance(2)
    head = bench.sim.push(REPO, pr.number, {"b.py": "y = 2\n"})
    argv = [str(BIN / "kdev"), "review-pr", "--force", "--repo", REPO, "--pr", str(pr.number)]
    argv += ["--checkout", str(bench.checkout), "--json"]
    for expected_legs in (2, 3):  # --force reviews the same current head again
        result = subprocess.run(
            argv, env=bench.kdev_env(), capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 0, result.stderr
        report = json.loads(result.stdout.strip().splitlines()[-1])
        assert (report["outcome"], report["head_sha"]) == ("reviewed", head)
        assert bench.legs() == expected_legs
    assert bench.ledger().read_index(REPO, pr.number)[head].carried_from is None


def test_a_github_failure_shows_as_a_failed_run_in_li(tmp_path: Path) -> None:
    """Through the engine: a 401 on the PR's metadata is a failed run (exit 17), not a
    succeeded skipped_fork."""
    for loop in make_loop(tmp_path, same_repo_only=True):
        pr = loop.sim.open_pr(REPO, "f", {"a.py": "x = 1\n"})
        loop.sim.inject_fault("GET", rf"/pulls/{pr.number}$", status=401, times=None)
        [run] = loop.engine_pass()
        detail = json.loads(loop.li("schedule", "run", str(run["id"]), "--json"))
        assert detail["status"] == "failed", detail
        assert detail["exit_code"] == 17, detail
        assert "[github_auth]" in detail["stderr_tail"], detail
        failed = json.loads(loop.li("schedule", "runs", "--status", "failed", "--json"))
        assert [r["id"] for r in failed] == [run["id"]]
        assert loop.legs() == 0
