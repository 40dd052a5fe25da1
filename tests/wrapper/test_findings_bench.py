"""Issue 27 acceptance on real PR rounds: ``bench.findings`` (quick, three cases of the
vendored trace) lands every anchorable finding on its line, loses none, writes one review
per round, and every suggestion it posts applies in ghsim to the reviewer's replacement.
Also: the counts come from ghsim (a finding GitHub never got is counted lost), and the
trace cutter keeps real hunks and drops what it cannot replay."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from bench import findings, findings_trace
from bench.findings_reviewer import findings_for
from ghsim import GitHubSim

CASES = 3


def test_quick_findings_bench_meets_every_goal(tmp_path: Path) -> None:
    result = findings.measure(CASES, tmp_path)
    assert len(result.rounds) == CASES
    for kind in (*findings.ANCHORABLE, *findings.UNANCHORABLE):
        assert result.total("findings", (kind,)) > 0, kind
    assert result.landed == result.anchorable  # 100 % on their line
    assert result.summarised == result.unanchorable
    assert result.lost == 0
    for done in result.rounds:
        assert done.writes == 1 and done.reviews == 1 and done.notifications == 1
        assert done.emitted > 1  # the baseline: one comment (write, notification) each
        assert done.suggestion_failures == []
        assert done.suggestions_applied == done.suggestions_posted > 0
    lines = findings.report(result)
    assert any("findings lost: 0  goal 0: met" in line for line in lines)


def test_a_finding_github_never_got_is_counted_lost(tmp_path: Path) -> None:
    case = findings.load_trace()[0]
    with GitHubSim(tmp_path / "github") as sim:
        sim.add_token(findings.TOKEN, ("review-bot", 4242))
        done = findings.run_case(sim, tmp_path, 1, case)
        assert done.lost == []
        path = next(iter(case["files"]))
        ghost = {
            "path": path,
            "line": 1,
            "start_line": None,
            "title": f"[changed] {path}:1 never emitted",
            "replacement": None,
        }
        again = findings.Round(commit=case["commit"])
        findings.count_round(sim, "bench/case01", 1, [ghost], again)
    assert again.lost == [ghost["title"]]
    assert again.landed == {} and again.in_summary == {}


def test_the_scripted_reviewer_reads_context_outside_and_range_places() -> None:
    diff = "\n".join(
        [
            "diff --git a/f.py b/f.py",
            "--- a/f.py",
            "+++ b/f.py",
            "@@ -10,3 +10,6 @@ def f():",
            " keep",
            "+one",
            "+two",
            "+three",
            "+four",
            " tail",
        ]
    )
    found = {(f["title"].split("]")[0][1:], f["start_line"], f["line"]) for f in findings_for(diff)}
    assert ("changed", None, 11) in found
    assert ("context", None, 10) in found
    assert ("suggestion", None, 14) in found
    assert ("suggestion", 12, 13) in found
    assert ("outside", None, 1) in found  # line 1 precedes the hunk (no file: no "after")
    assert ("missing", None, 1) in found


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout


def _commit(repo: Path, files: dict[str, str | None], message: str) -> str:
    for name, text in files.items():
        if text is None:
            (repo / name).unlink()
        else:
            (repo / name).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", message)
    return _git(repo, "rev-parse", "HEAD").strip()


def test_the_cutter_keeps_the_hunks_and_drops_what_it_cannot_replay(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    long = "".join(f"line {n}\n" for n in range(100))
    root = _commit(repo, {"a.txt": long, "gone.txt": "x\n"}, "root")
    edit = _commit(repo, {"a.txt": long.replace("line 50\n", "line fifty\n")}, "edit")
    _commit(repo, {"gone.txt": None}, "delete")
    _commit(repo, {"big.txt": "y" * (findings_trace.MAX_EXCERPT + 1)}, "big")
    _commit(repo, {"p.txt": "see " + "/" + "root/notes\n"}, "outside")  # in pieces: D22
    added = _commit(repo, {"new.txt": "hello\n"}, "add")
    trace, dropped = findings_trace.cut(repo, root, "HEAD", 10)
    assert [c["commit"] for c in trace["cases"]] == [edit, added]
    assert [d.split(": ", 1)[1] for d in dropped] == [
        "gone.txt: status D",
        f"big.txt: excerpt over {findings_trace.MAX_EXCERPT} bytes",
        "p.txt: names a path outside the repository",
    ]
    cut = trace["cases"][0]["files"]["a.txt"]
    margin = findings_trace.MARGIN
    assert cut["cut_lines"] == 50 - margin
    assert cut["before"].splitlines() == long.splitlines()[50 - margin : 51 + margin]
    assert cut["after"].splitlines()[margin] == "line fifty"
    assert trace["cases"][1]["files"]["new.txt"] == {
        "before": None,
        "after": "hello\n",
        "cut_lines": 0,
    }
    json.dumps(trace)  # what main writes


def test_the_vendored_trace_names_its_commits() -> None:
    data = json.loads(findings.TRACE.read_text(encoding="utf-8"))
    assert len(data["cases"]) >= 15
    for case in data["cases"]:
        assert len(case["commit"]) == 40 and len(case["parent"]) == 40
        for excerpt in case["files"].values():
            assert len(excerpt["after"].encode()) <= data["max_excerpt"]
