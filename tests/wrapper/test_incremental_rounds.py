"""Issue 28, incremental rounds (D91-D93): five scripted rounds on one PR, through
``review_pr`` against ghsim over HTTP with real git, where the reviewer repeats earlier
findings, fixes some and reintroduces one. Nothing is posted twice, every closed
finding's thread is replied to and resolved, the reintroduced one is posted as new, and
a delta round's verdict is derived."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.wrapper.reviewbench import BIN, REPO, Bench, open_bench
from wrapper.config import KdevConfig
from wrapper.errors import KdevError
from wrapper.ledger.findings_history import is_derived, read_history
from wrapper.review.findings_earlier import EARLIER_UNKNOWN_ID

HANDLE = "kdev"
BASE = "".join(f"v{n} = {n}\n" for n in range(1, 31))
OTHER = "".join(f"w{n} = {n}\n" for n in range(1, 11))


def app(*, top: str = "", b: str = "'fifteen'", a: str = "'five'") -> str:
    text = BASE.replace("v5 = 5\n", f"v5 = {a}\n").replace("v15 = 15\n", f"v15 = {b}\n")
    return top + text.replace("v25 = 25\n", "v25 = 'twenty-five'\n")


def finding(line: int, title: str, severity: str = "P2", path: str = "app.py") -> dict[str, Any]:
    return {
        "path": path,
        "line": line,
        "start_line": None,
        "severity": severity,
        "title": title,
        "body": f"Why {title} matters.",
        "replacement": None,
    }


def answer(*findings: dict[str, Any], earlier: dict[str, str] | None = None) -> str:
    data: dict[str, Any] = {"kdev_findings": 1, "summary": "Scripted.", "findings": list(findings)}
    if earlier is not None:
        data["kdev_findings"] = 2
        data["earlier"] = [
            {"id": ident, "status": status, "note": f"{ident} is {status}"}
            for ident, status in earlier.items()
        ]
    return f"```kdev-findings\n{json.dumps(data)}\n```\n\nVERDICT: REQUEST_CHANGES\n"


@pytest.fixture
def bench(tmp_path: Path) -> Iterator[Bench]:
    with open_bench(tmp_path, {"app.py": BASE, "other.py": OTHER}) as made:
        yield made


def config(bench: Bench, mode: str = "full") -> KdevConfig:
    """The scripted reviewer: saves its prompt, prints ``output.txt``."""
    root = bench.root
    return bench.config(
        mention_handle=HANDLE,
        review_post={"enabled": True},
        incremental={"mode": mode},
        reviewer={
            "backend": "command",
            "argv": ["sh", "-c", f"cat > {root}/prompt.txt; cat {root}/output.txt"],
            "model": "scripted",
            "timeout_seconds": 30,
        },
    )


def round_(bench: Bench, pr: int, output: str, mode: str = "full") -> tuple[Any, str]:
    (bench.root / "output.txt").write_text(output)
    report = bench.review(pr, config=config(bench, mode))
    return report, (bench.root / "prompt.txt").read_text()


def roots(bench: Bench, pr: int) -> list[Any]:
    return [
        c
        for c in bench.sim.comments(REPO, kind="review")
        if c.pull_number == pr and c.in_reply_to_id is None
    ]


def replies_to(bench: Bench, root_id: int) -> list[Any]:
    return [c for c in bench.sim.comments(REPO, kind="review") if c.in_reply_to_id == root_id]


def titled(bench: Bench, pr: int, title: str) -> list[Any]:
    return [c for c in roots(bench, pr) if title in c.body]


def test_five_rounds_post_nothing_twice_and_close_what_is_fixed(bench: Bench) -> None:
    pr = bench.sim.open_pr(REPO, "work", {"app.py": app(), "other.py": OTHER + "w11 = 11\n"})
    pr_number = pr.number

    # Round 1: three findings, each posted on its line.
    r1, _ = round_(
        bench, pr_number, answer(finding(5, "A"), finding(15, "B"), finding(25, "C", "P3"))
    )
    assert r1.verdict == "REQUEST_CHANGES" and len(roots(bench, pr_number)) == 3

    # Round 2: two lines added above; the reviewer repeats A and B and says all stand.
    bench.sim.push(REPO, pr_number, {"app.py": app(top="# one\n# two\n")})
    r2, prompt2 = round_(
        bench,
        pr_number,
        answer(finding(7, "A"), finding(17, "B"), earlier={"F1": "standing", "F2": "standing"}),
    )
    assert "untrusted-changes-since-review" in prompt2 and "untrusted-earlier-findings" in prompt2
    assert "F1 [P2] app.py:7 (its lines are unchanged (now line 7)): A" in prompt2
    assert '"kdev_findings": 2' in prompt2
    assert r2.verdict == "REQUEST_CHANGES" and len(roots(bench, pr_number)) == 3  # nothing new

    # Round 3: B's line changed (fixed); A repeated; a new finding D.
    bench.sim.push(REPO, pr_number, {"app.py": app(top="# one\n# two\n", b="'FIFTEEN'")})
    _, prompt3 = round_(
        bench,
        pr_number,
        answer(finding(7, "A"), finding(27, "D"), earlier={"F2": "fixed", "F1": "standing"}),
    )
    assert "F2 [P2] app.py:17 (its code changed; its thread is outdated on GitHub): B" in prompt3
    assert len(roots(bench, pr_number)) == 4 and len(titled(bench, pr_number, "D")) == 1
    [b_thread] = titled(bench, pr_number, "B")
    assert any("Fixed at" in c.body for c in replies_to(bench, b_thread.id))

    # Round 4: B's old text is back and the reviewer finds it again: posted as new. C wrong.
    # (A third line on top: the same text as round 2 would be the same diff, carried.)
    bench.sim.push(REPO, pr_number, {"app.py": app(top="# one\n# two\n# three\n")})
    round_(bench, pr_number, answer(finding(18, "B"), earlier={"F3": "wrong", "F4": "standing"}))
    b_threads = titled(bench, pr_number, "B")
    assert len(b_threads) == 2 and b_threads[0].id < b_threads[1].id
    [c_thread] = titled(bench, pr_number, "C")
    assert any("Withdrawn at" in c.body for c in replies_to(bench, c_thread.id))
    history = read_history(bench.ledger(), REPO, pr_number)
    assert [f.id for f in history.findings if f.reintroduces == "F2"] == ["F5"]

    # Round 5, delta: A fixed; B repeated; other.py did not change, so it is not sent.
    bench.sim.push(REPO, pr_number, {"app.py": app(top="# one\n# two\n# three\n", a="5 + 0")})
    r5, prompt5 = round_(
        bench,
        pr_number,
        answer(finding(18, "B"), earlier={"F1": "fixed", "F4": "standing", "F5": "standing"}),
        mode="delta",
    )
    assert "diff --git a/other.py" in prompt2 and "diff --git a/other.py" not in prompt5
    assert "This is a delta round" in prompt5
    assert r5.verdict == "REQUEST_CHANGES"  # D (P2) and B again stand: derived
    assert is_derived(bench.ledger(), REPO, pr_number, r5.patch_id)
    assert r5.detail.startswith("derived verdict (delta round)")
    assert "1 earlier findings closed" in r5.detail
    verdict_file = Path(r5.artifact).read_text()
    assert "Derived verdict (delta round)" in verdict_file
    [review5] = [
        r
        for r in bench.sim.reviews(REPO, pr_number)
        if r.commit_id == bench.sim.pull(REPO, pr_number).head_sha and "kdev-round" in r.body
    ]
    assert "Derived verdict (delta round)" in review5.body

    shown = subprocess.run(
        [str(BIN / "kdev"), "explain", "--repo", REPO, "--pr", str(pr_number)],
        env=bench.kdev_env(config(bench, "delta")),
        capture_output=True,
        text=True,
        check=False,
    )
    assert "derived: a delta round's verdict" in shown.stdout.splitlines()[-1], shown.stderr

    # Over the five rounds: five findings posted, once each; the second B only after
    # the first B's thread was closed. Every closed finding: one reply, resolved.
    posted = roots(bench, pr_number)
    assert len(posted) == 5
    first_b, second_b = titled(bench, pr_number, "B")
    assert max(c.id for c in replies_to(bench, first_b.id)) < second_b.id
    for title in ("A", "C"):
        assert len(titled(bench, pr_number, title)) == 1
    for closed in (titled(bench, pr_number, "A")[0], first_b, c_thread):
        assert bench.sim.thread_resolved(REPO, closed.id)
        assert len(replies_to(bench, closed.id)) == 1
    open_threads = [c for c in posted if not bench.sim.thread_resolved(REPO, c.id)]
    assert {c.id for c in open_threads} == {second_b.id, titled(bench, pr_number, "D")[0].id}


def test_a_report_of_an_id_the_round_did_not_list_fails_loud(bench: Bench) -> None:
    pr = bench.sim.open_pr(REPO, "work", {"app.py": app()}).number
    round_(bench, pr, answer(finding(5, "A")))
    bench.sim.push(REPO, pr, {"app.py": app(b="'FIFTEEN'")})
    with pytest.raises(KdevError) as caught:
        round_(bench, pr, answer(earlier={"F9": "fixed"}))
    assert caught.value.reason == EARLIER_UNKNOWN_ID
    assert len(roots(bench, pr)) == 1  # nothing of the refused round posted
