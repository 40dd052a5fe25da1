"""``kdev triage`` and ``kdev loop-status``: the rules (pure), and a triage pass against
ghsim with a notice to the owner sent once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ghsim import GitHubSim
from wrapper.authorloop.decisions import Decision, decide, parse_manual, rule_decision
from wrapper.authorloop.feedback import Feedback
from wrapper.authorloop.loopstatus import CEILING, contradictions, dispositions, loop_status
from wrapper.authorloop.rounds import Round
from wrapper.authorloop.triage import Basis, Priority, Source
from wrapper.errors import ConfigError

REPO = "octo/widgets"
TOKEN = "tok-loop"
KDEV = str(Path(sys.executable).with_name("kdev"))


def item(
    ident: int,
    source: Source = Source.GEMINI,
    priority: Priority = Priority.P2,
    basis: Basis = Basis.MARKER,
    path: str | None = "app.py",
    line: int | None = 3,
) -> Feedback:
    return Feedback(
        kind="inline", id=ident, node_id=f"N{ident}", user="bot", source=source,
        priority=priority, body="body", created_at="2026-12-01T00:00:00Z",
        path=path, line=line, basis=basis,
    )  # fmt: skip


def decision(ident: int, choice: str, head: str, path: str = "app.py", line: int = 3) -> Decision:
    return Decision(ident, choice, "r", "rule", "P2", "gemini", head, path, line)


def rounds(*severe: bool) -> list[Round]:
    return [Round(f"h{n}", f"p{n}", "APPROVE", "t", flag, []) for n, flag in enumerate(severe)]


def test_the_triage_rules() -> None:
    assert rule_decision(item(1, source=Source.HUMAN))[0] == "escalate"
    assert rule_decision(item(2, basis=Basis.SUMMARY, priority=Priority.P1))[0] == "reject"
    assert rule_decision(item(3, priority=Priority.P1)) == ("fix", "P1 finding")
    assert rule_decision(item(4, priority=Priority.P3))[0] == "reject"


def test_manual_decisions_win_and_are_never_replaced_by_a_rule() -> None:
    manual = parse_manual(["1=reject:already handled upstream", "2=escalate"])
    assert manual == {1: ("reject", "already handled upstream"), 2: ("escalate", "decided by hand")}
    first = decide([item(1), item(2), item(3)], {}, manual, "h0")
    assert (first[1].decision, first[1].by) == ("reject", "manual")
    assert first[3].by == "rule"
    again = decide([item(1), item(2), item(3)], first, {}, "h1")
    assert again[1] == first[1] and again[3].head_sha == "h0"  # kept, not re-decided
    for bad in ("x=fix", "1=maybe", "1=reject", "1=reject: "):
        with pytest.raises(ConfigError) as caught:
            parse_manual([bad])
        assert caught.value.reason == "invalid_decision"
    with pytest.raises(ConfigError):
        decide([item(1)], {}, {9: ("fix", "x")}, "h0")


@pytest.mark.parametrize(
    ("severe", "decisions", "state"),
    [
        ((), {}, "continue"),
        ((True,), {}, "continue"),
        ((True, False), {}, "continue"),
        ((True, False, False), {}, "one_more_round"),
        ((True, False, False, False), {}, "stop_clean"),
        ((True,) * CEILING, {}, "stop_ceiling"),
        ((True,), {1: decision(1, "escalate", "h0")}, "escalate"),
        ((True, True), {1: decision(1, "fix", "h0"), 2: decision(2, "fix", "h1", line=5)},
         "escalate"),
        ((True, True), {1: decision(1, "fix", "h0"), 2: decision(2, "fix", "h1", line=40)},
         "continue"),
        ((True,), {n: decision(n, "reject", "h0", line=n * 10) for n in range(5)}, "escalate"),
        ((True,), {n: decision(n, "reject", "h0", line=n * 10) for n in range(4)}, "continue"),
    ],
)  # fmt: skip
def test_the_stopping_rules(
    severe: tuple[bool, ...], decisions: dict[int, Decision], state: str
) -> None:
    assert loop_status(rounds(*severe), decisions).state == state


def test_dispositions_and_contradictions_for_the_readiness_summary() -> None:
    manual_reject = Decision(5, "reject", "kept on purpose", "manual", "P2", "human", "h0")
    p3 = Decision(6, "reject", "P3: optional", "rule", "P3", "gemini", "h0")
    decided = [decision(1, "fix", "h0"), decision(2, "fix", "h1", line=40), manual_reject, p3,
               Decision(7, "escalate", "a person", "rule", "P2", "human", "h1")]  # fmt: skip
    assert dispositions(decided, "h1") == {
        "fixed": 1,
        "fix_pending": 1,
        "wont_fix": 1,
        "out_of_scope": 1,
        "escalated": 1,
    }
    reversal = [decision(1, "fix", "h0"), decision(2, "fix", "h1", line=4)]
    assert len(contradictions(reversal, rounds(True, True))) == 1
    assert contradictions(reversal, rounds(True)) == []  # h1 is no reviewed round


@pytest.fixture
def sim() -> Iterator[GitHubSim]:
    with GitHubSim() as running:
        running.add_token(TOKEN, ("author-agent", 501))
        running.create_repo(REPO, files={"app.py": "a = 1\nb = 2\nc = 3\n"})
        yield running


def test_triage_decides_stores_and_escalates_once(sim: GitHubSim, tmp_path: Path) -> None:
    pr = sim.open_pr(REPO, "feature/x", {"app.py": "a = 1\nb = 3\nc = 3\n"}, author="author")
    high = sim.comment(REPO, pr.number, "![high] b is wrong", ("gemini-code-assist[bot]", 7))
    nit = sim.comment(REPO, pr.number, "nit: spacing", ("gemini-code-assist[bot]", 7))
    person = sim.comment(REPO, pr.number, "Why not keep b = 2?", ("alice", 11))
    notices = tmp_path / "notices.jsonl"
    (tmp_path / "kdev.yaml").write_text(f"notify:\n  - {{type: file, path: '{notices}'}}\n")
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "GITHUB_API_URL": sim.url,
        "GITHUB_TOKEN": TOKEN,
        "KDEV_CONFIG": str(tmp_path / "kdev.yaml"),
        "KDEV_REVIEWS_DIR": str(tmp_path / "reviews"),
    }

    def kdev(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [KDEV, *args, "--repo", REPO, "--pr", str(pr.number), "--json"]
        return subprocess.run(argv, env=env, capture_output=True, text=True, check=False)

    done = kdev("triage")
    assert done.returncode == 0, done.stderr
    by_id = {d["comment_id"]: d["decision"] for d in json.loads(done.stdout)["decisions"]}
    assert by_id == {high.id: "fix", nit.id: "reject", person.id: "escalate"}
    assert len(notices.read_text().splitlines()) == 1
    assert kdev("triage").returncode == 0
    assert len(notices.read_text().splitlines()) == 1  # the escalation notice went once
    status = json.loads(kdev("loop-status").stdout)
    assert status["state"] == "escalate" and f"comment {person.id}" in status["reason"]

    settled = kdev("triage", "--decide", f"{person.id}=reject:kept on purpose")
    assert settled.returncode == 0, settled.stderr
    status = json.loads(kdev("loop-status").stdout)
    assert (status["state"], status["reason"]) == ("continue", "no review round yet")
    bad = kdev("triage", "--decide", "123456=fix")
    assert bad.returncode == 2 and "[invalid_decision]" in bad.stderr
    assert TOKEN not in done.stdout + done.stderr


def test_close_out_replies_resolves_hides_in_order_and_only_once(
    sim: GitHubSim, tmp_path: Path
) -> None:
    pr = sim.open_pr(REPO, "feature/x", {"app.py": "a = 1\nb = 3\nc = 3\n"}, author="author")
    bot = ("gemini-code-assist[bot]", 7)
    finding = sim.comment(REPO, pr.number, "![medium] b changed", bot, kind="review",
                          path="app.py", line=2)  # fmt: skip
    nit = sim.comment(REPO, pr.number, "nit: spacing", bot)
    (tmp_path / "kdev.yaml").write_text("mention_handle: kdev-bot\n")
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "GITHUB_API_URL": sim.url,
        "GITHUB_TOKEN": TOKEN,
        "KDEV_CONFIG": str(tmp_path / "kdev.yaml"),
        "KDEV_REVIEWS_DIR": str(tmp_path / "reviews"),
    }

    def kdev(*args: str) -> dict[str, object]:
        argv = [KDEV, *args, "--repo", REPO, "--pr", str(pr.number), "--json"]
        done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)  # type: ignore[no-any-return]

    kdev("triage")
    first = kdev("close-out")["closed"]
    # Only the rejected nit is settled: the fix is not pushed yet.
    assert first == [
        {"comment_id": nit.id, "decision": "reject", "done_now": ["replied", "hidden"],
         "done_before": []},
    ]  # fmt: skip
    bodies = [c.body for c in sim.comments(REPO) if c.pull_number == pr.number]
    assert any("Won't fix: P3: optional, outside this loop" in b for b in bodies)
    assert sim.minimized(REPO, nit.id) and not sim.minimized(REPO, finding.id)

    sim.push(REPO, pr.number, {"app.py": "a = 1\nb = 2\nc = 3\n"})
    second = kdev("close-out")["closed"]
    fixed = next(c for c in second if c["comment_id"] == finding.id)
    assert fixed["done_now"] == ["replied", "resolved", "hidden"]
    assert sim.thread_resolved(REPO, finding.id) and sim.minimized(REPO, finding.id)
    replies = [c for c in sim.comments(REPO) if c.in_reply_to_id == finding.id]
    assert len(replies) == 1 and replies[0].body.startswith("Fixed in ")
    status = kdev("pr-status")
    assert status["dispositions"] == {
        "fixed": 1, "fix_pending": 0, "wont_fix": 0, "out_of_scope": 1, "escalated": 0,
    }  # fmt: skip
    assert status["contradictions"] == []
    third = kdev("close-out")["closed"]
    assert all(c["done_now"] == [] for c in third)  # idempotent
    assert len([c for c in sim.comments(REPO) if c.in_reply_to_id == finding.id]) == 1
