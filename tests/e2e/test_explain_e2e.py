"""`kdev explain` and `li schedule events --pr` end to end: ghsim + real git + li + kdev.

Each fate a PR can meet is produced for real, then named by both sides: the engine's
decision (`li schedule events --pr`) and kdev's verdict line with its reason code.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from demo.run_demo import REVIEW_ARGS
from tests.e2e.test_review_e2e import BIN, REPO, Loop, make_loop

FAILING_REVIEWER = "reviewer:\n  backend: command\n  argv: [sh, -c, 'echo broken >&2; exit 3']\n"


def explain(loop: Loop, pr: int) -> dict[str, Any]:
    out = loop.kdev("explain", "--repo", REPO, "--pr", str(pr), "--json")
    result: dict[str, Any] = json.loads(out)
    return result


def events(loop: Loop, pr: int, name: str = "review") -> list[tuple[str, str | None]]:
    rows = json.loads(loop.li("schedule", "events", name, "--pr", str(pr), "--json"))
    return [(str(r["decision"]), r["detail"]) for r in rows]


def engine_pass(loop: Loop, **env: str) -> None:
    saved = dict(loop.env)
    loop.env.update(env)
    try:
        loop.li("schedule", "trigger", "review")
        loop.li("engine", "run", "--once")
    finally:
        loop.env.clear()
        loop.env.update(saved)


@pytest.fixture
def filtered(tmp_path: Path) -> Iterator[Loop]:
    """A schedule with draft, base and same-repo filters and one fire per pass."""
    for loop in make_loop(tmp_path, same_repo_only=True):
        loop.li("schedule", "remove", "review", "--yes")
        loop.li(
            "schedule", "add", "review", "--github", REPO, "--poll-interval", "1m",
            "--filter", "same_repo_only=true", "--filter", "draft=false",
            "--filter", "base=main", "--max-fires-per-poll", "1",
            "--cwd", str(loop.root / "checkout"), "--timeout", "5m",
            "--command", "kdev", "--", *REVIEW_ARGS,
        )  # fmt: skip
        loop.sim.advance(2)
        yield loop


def test_filtered_held_and_refused_fates_are_named_on_both_sides(filtered: Loop) -> None:
    loop, sim = filtered, filtered.sim
    release = sim.open_pr(REPO, "release", {"r.py": "1\n"})
    sim.advance(1)
    based = sim.open_pr(REPO, "topic", {"t.py": "1\n"}, base="release")
    fork = sim.open_pr(REPO, "evil", {"e.py": "1\n"}, from_fork="mallory/widgets")
    draft = sim.open_pr(REPO, "wip", {"w.py": "1\n"}, draft=True)
    sim.advance(1)
    odd = sim.open_pr(REPO, "odd", {"o.py": "1\n"}, author=("bad\u200bname", 777))
    sim.advance(1)
    later = sim.open_pr(REPO, "later", {"l.py": "1\n"})
    engine_pass(loop)

    assert events(loop, release.number) == [("fired", None)]
    for pr, fate, detail in [
        (fork, "excluded:same_repo_only", "not_same_repo"),
        (draft, "excluded:draft", "draft"),
        (based, "excluded:base", "base_mismatch"),
    ]:
        assert events(loop, pr.number) == [(fate, detail)]
        found = explain(loop, pr.number)
        assert found["fate"] == fate
        assert found["verdict"].startswith(f"head {pr.head_sha[:7]}: not reviewed: excluded by")
    text = loop.kdev("explain", "--repo", REPO, "--pr", str(fork.number)).strip().splitlines()
    assert text[0].startswith(f"{REPO} #{fork.number}")
    assert any("engine review: excluded:same_repo_only (not_same_repo)" in x for x in text)
    assert text[-1].startswith(f"head {fork.head_sha[:7]}: not reviewed: excluded by same_repo_")
    assert "(fork); a maintainer can" in text[-1]
    assert events(loop, later.number) == [("held", None)]
    assert explain(loop, later.number)["fate"] == "held"
    assert events(loop, odd.number) == [("held", None)]

    engine_pass(loop)  # the held batch: the odd one is refused, the later one fires
    assert events(loop, later.number) == [("held", None), ("fired", None)]
    assert events(loop, odd.number)[-1] == ("refused:unsafe_characters", None)
    assert explain(loop, odd.number)["fate"] == "refused:unsafe_characters"
    engine_pass(loop)
    engine_pass(loop)
    assert events(loop, odd.number)[-1] == ("skipped_after_refusals", "unsafe_characters")
    found = explain(loop, odd.number)
    assert found["fate"] == "skipped_after_refusals"
    runs = json.loads(loop.li("schedule", "runs", "review", "--pr", str(odd.number), "--json"))
    assert [(r["status"], r["reason"]) for r in runs] == [("refused", "unsafe_characters")]

    # The engine's side unreadable: said so, never guessed.
    loop.env["LI_DATABASE_URL"] = f"sqlite:///{loop.root / 'absent' / 'li.db'}"
    found = explain(loop, fork.number)
    assert found["fate"] == "unknown" and "the engine's side is unreadable" in found["verdict"]
    assert any("li_unreadable" in problem for problem in found["problems"])
    assert not (loop.root / "absent").exists()


@pytest.fixture
def budgeted(tmp_path: Path) -> Iterator[Loop]:
    for loop in make_loop(tmp_path, same_repo_only=True):
        config = Path(loop.env["KDEV_CONFIG"])
        text = config.read_text().replace("daily_legs_per_repo: 20", "daily_legs_per_repo: 3")
        config.write_text(text)
        failing = loop.root / "failing.yaml"
        failing.write_text(text.split("budgets:")[0].split("reviewer:")[0] + FAILING_REVIEWER
                           + "budgets:" + text.split("budgets:")[1])  # fmt: skip
        yield loop


def test_kdev_fates_and_a_blind_poller_are_named_with_their_reason(budgeted: Loop) -> None:
    loop, sim = budgeted, budgeted.sim
    first = sim.open_pr(REPO, "first", {"a.py": "def f():\n    pass  # TODO\n"})
    engine_pass(loop)
    found = explain(loop, first.number)
    assert found["fate"] == "reviewed"
    assert found["verdict"].startswith(f"head {first.head_sha[:7]}: reviewed REQUEST_CHANGES")
    assert "(artifact " in found["verdict"]

    # A stale head: the run for a head nobody reviewed happens after the next push.
    sim.advance(2)
    middle = sim.push(REPO, first.number, {"a.py": "def f():\n    return 0\n"})
    sim.advance(2)
    sim.push(REPO, first.number, {"a.py": "def f():\n    return 1\n"})
    loop.kdev(
        "review-pr", "--repo", REPO, "--pr", str(first.number), "--head-sha", middle,
        "--checkout", str(loop.root / "checkout"),
    )  # fmt: skip
    found = explain(loop, first.number)
    assert found["fate"] == "not_seen"
    assert "skipped_stale_head" in found["verdict"]
    assert events(loop, first.number) == [("fired", None)]
    assert [o["outcome"] for o in found["outcomes"]] == ["reviewed", "skipped_stale_head"]

    engine_pass(loop)  # the new head is reviewed (one kdev run per pass from here on)
    assert explain(loop, first.number)["fate"] == "reviewed"

    # A failed reviewer: the run fails, kdev records the failure with its reason.
    sim.advance(2)
    second = sim.open_pr(REPO, "second", {"b.py": "1\n"})
    engine_pass(loop, KDEV_CONFIG=str(loop.root / "failing.yaml"))
    found = explain(loop, second.number)
    assert (found["fate"], found["outcomes"][-1]["reason"]) == ("failed", "reviewer_failed"), found
    assert "not reviewed: failed (reviewer_failed)" in found["verdict"]
    runs = json.loads(loop.li("schedule", "runs", "review", "--pr", str(second.number), "--json"))
    assert runs[0]["status"] == "failed"

    # A deferral: the daily legs are spent (3: first, first's new head, second).
    sim.advance(2)
    third = sim.open_pr(REPO, "third", {"c.py": "1\n"})
    engine_pass(loop)
    found = explain(loop, third.number)
    assert found["fate"] == "deferred_budget"
    assert found["verdict"].startswith(
        f"head {third.head_sha[:7]}: not reviewed: deferred by daily_legs_per_repo until "
    )
    assert events(loop, third.number) == [("fired", None)]

    # A blind poller: three passes that fail authentication; the new PR is never seen.
    sim.advance(2)
    fourth = sim.open_pr(REPO, "fourth", {"d.py": "1\n"})
    for _ in range(3):
        engine_pass(loop, GITHUB_TOKEN="revoked")
    found = explain(loop, fourth.number)
    assert found["fate"] == "blind"
    assert "not seen yet: schedule review is blind (auth_error since " in found["verdict"]
    assert events(loop, fourth.number) == []
    health = subprocess.run(
        [str(BIN / "li"), "schedule", "health"], env=loop.env, capture_output=True, check=False
    )
    assert health.returncode == 20  # blind (docs/health.md, "Exit code")
