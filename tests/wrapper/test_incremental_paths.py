"""Issue 28, incremental rounds (D91, D92) on their other paths, through ``review_pr``
against ghsim over HTTP: a reply GitHub refuses is done once by the next run; ``--force``
makes a delta repository's round full; a round over the prompt limit is still chunked
(D89) and its legs' reports merged; ``incremental.mode`` is validated."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from pydantic import ValidationError

from tests.wrapper.reviewbench import REPO, Bench, open_bench, openai_reviewer
from tests.wrapper.test_incremental_rounds import answer, finding
from wrapper.config import KdevConfig
from wrapper.config_repo import incremental_mode
from wrapper.errors import KdevError
from wrapper.ledger.findings_history import read_history
from wrapper.review.findings_contract import response_format
from wrapper.review.findings_earlier import EARLIER_INSTRUCTION

BASE = "".join(f"v{n} = {n}\n" for n in range(1, 31))
OTHER = "".join(f"w{n} = {n}\n" for n in range(1, 31))


@pytest.fixture
def bench(tmp_path: Path) -> Iterator[Bench]:
    with open_bench(tmp_path, {"app.py": BASE, "other.py": OTHER}) as made:
        yield made


def config(bench: Bench, mode: str = "full", **extra: object) -> KdevConfig:
    root = bench.root
    prompts = root / "prompts"
    prompts.mkdir(exist_ok=True)
    script = f"n=$(ls {prompts} | wc -l); cat > {prompts}/p$n.txt; cat {root}/output.txt"
    return bench.config(
        mention_handle="kdev",
        review_post={"enabled": True},
        incremental={"mode": mode},
        reviewer={
            "backend": "command",
            "argv": ["sh", "-c", script],
            "model": "scripted",
            "timeout_seconds": 30,
        },  # fmt: skip
        **extra,
    )


def run(bench: Bench, pr: int, output: str, cfg: KdevConfig, force: bool = False) -> object:
    (bench.root / "output.txt").write_text(output)
    return bench.review(pr, config=cfg, force=force)


def prompts(bench: Bench) -> list[str]:
    found = sorted((bench.root / "prompts").glob("p*.txt"), key=lambda p: int(p.stem[1:]))
    return [p.read_text() for p in found]


def replies(bench: Bench) -> list[object]:
    return [c for c in bench.sim.comments(REPO, kind="review") if c.in_reply_to_id is not None]


def test_a_refused_reply_is_done_by_the_next_run_once(bench: Bench) -> None:
    pr = bench.sim.open_pr(REPO, "w", {"app.py": BASE.replace("v5 = 5", "v5 = 'x'")}).number
    run(bench, pr, answer(finding(5, "A")), config(bench))
    bench.sim.push(REPO, pr, {"app.py": BASE.replace("v5 = 5", "v5 = 'y'")})
    bench.sim.inject_fault("POST", r"/pulls/\d+/comments/\d+/replies$", status=422)
    with pytest.raises(KdevError) as caught:
        run(bench, pr, answer(earlier={"F1": "fixed"}), config(bench))
    assert caught.value.reason == "reply_failed"
    [root] = [c for c in bench.sim.comments(REPO, kind="review") if c.in_reply_to_id is None]
    assert replies(bench) == [] and not bench.sim.thread_resolved(REPO, root.id)
    for _ in range(2):  # the head's verdict is carried; what is owed is done, once
        run(bench, pr, answer(), config(bench))
    assert len(replies(bench)) == 1 and bench.sim.thread_resolved(REPO, root.id)
    [entry] = read_history(bench.ledger(), REPO, pr).findings
    assert entry.closing is not None and entry.closing.replied and entry.closing.resolved


def test_force_makes_a_delta_round_full(bench: Bench) -> None:
    pr = bench.sim.open_pr(REPO, "w", {"app.py": BASE + "x = 1\n", "other.py": OTHER + "y\n"})
    run(bench, pr.number, answer(), config(bench, "delta"))
    bench.sim.push(REPO, pr.number, {"app.py": BASE + "x = 2\n"})
    report = run(bench, pr.number, answer(earlier={}), config(bench, "delta"), force=True)
    forced = prompts(bench)[-1]
    assert "diff --git a/other.py" in forced and "This is a delta round" not in forced
    history = read_history(bench.ledger(), REPO, pr.number)
    assert history.rounds[report.patch_id] == "full"  # type: ignore[attr-defined]
    bench.sim.push(REPO, pr.number, {"app.py": BASE + "x = 3\n"})
    report = run(bench, pr.number, answer(earlier={}), config(bench, "delta"))
    assert "diff --git a/other.py" not in prompts(bench)[-1]
    assert read_history(bench.ledger(), REPO, pr.number).rounds[report.patch_id] == "delta"  # type: ignore[attr-defined]


def test_a_chunked_round_merges_its_legs_reports(bench: Bench) -> None:
    def new(name: str, changed: int = 0) -> str:
        return "".join(f"{name}_{n} = {n + (changed if n == 50 else 0)}\n" for n in range(1, 151))

    pr = bench.sim.open_pr(REPO, "w", {"n1.py": new("a"), "n2.py": new("b")}).number
    size = {"max_prompt_tokens": 2100}
    first = answer(finding(50, "A", path="n1.py"), finding(50, "B", path="n2.py"))
    run(bench, pr, first, config(bench, size_policy=size))
    assert len(prompts(bench)) > 1  # chunked
    assert len(bench.sim.comments(REPO, kind="review")) == 2
    bench.sim.push(REPO, pr, {"n1.py": new("a", 1000), "n2.py": new("b") + "tail = 1\n"})
    before = len(prompts(bench))
    again = answer(finding(50, "B", path="n2.py"), earlier={"F1": "fixed", "F2": "standing"})
    run(bench, pr, again, config(bench, size_policy=size))
    legs = prompts(bench)[before:]
    assert len(legs) > 1 and all("F1 [P2] n1.py:50 (its code changed" in leg for leg in legs)
    roots = [c for c in bench.sim.comments(REPO, kind="review") if c.in_reply_to_id is None]
    assert len(roots) == 2  # B is not posted again
    [a_root] = [c for c in roots if c.path == "n1.py"]
    assert bench.sim.thread_resolved(REPO, a_root.id) and len(replies(bench)) == 1


def test_an_unknown_mode_is_refused(bench: Bench) -> None:
    with pytest.raises(ValidationError):
        config(bench, "sometimes")


def test_the_documented_setting_is_valid_and_a_repository_wins() -> None:
    text = (Path(__file__).parents[2] / "docs" / "reviewers.md").read_text()
    section = text.split("## Incremental rounds (`incremental`)", 1)[1]
    block = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    loaded = KdevConfig.model_validate(yaml.safe_load(block))
    assert incremental_mode(loaded, "octo/docs-site") == "delta"
    assert incremental_mode(loaded, "octo/other") == "full"


def test_a_structured_backend_is_held_to_version_2(bench: Bench) -> None:
    pr = bench.sim.open_pr(REPO, "w", {"app.py": BASE.replace("v5 = 5", "v5 = 'x'")}).number
    seen: list[dict[str, Any]] = []
    answers = [
        {"kdev_findings": 1, "summary": "s", "findings": [finding(5, "A")]},
        {"kdev_findings": 2, "summary": "s", "findings": [],
         "earlier": [{"id": "F1", "status": "fixed", "note": None}]},
    ]  # fmt: skip

    def reply(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        content = json.dumps(answers[len(seen) - 1])
        return httpx.Response(200, json={"choices": [{"message": {"content": content}}]})

    cfg = bench.config(
        mention_handle="kdev",
        review_post={"enabled": True},
        reviewer=openai_reviewer("http://llm.invalid/v1"),
    )
    env = {"REVIEWER_KEY": "k"}
    transport = httpx.MockTransport(reply)
    bench.review(pr, config=cfg, environ=env, reviewer_transport=transport)
    bench.sim.push(REPO, pr, {"app.py": BASE.replace("v5 = 5", "v5 = 'y'")})
    report = bench.review(pr, config=cfg, environ=env, reviewer_transport=transport)
    assert seen[0]["response_format"] == response_format()
    assert seen[1]["response_format"] == response_format(2)
    assert EARLIER_INSTRUCTION in seen[1]["messages"][0]["content"]
    assert report.verdict == "APPROVE" and len(replies(bench)) == 1


def test_a_shifted_range_is_found_whole_at_its_new_place(bench: Bench) -> None:
    changed = BASE.replace("v4 = 4", "v4 = 'x'").replace("v6 = 6", "v6 = 'y'")
    pr = bench.sim.open_pr(REPO, "w", {"app.py": changed}).number
    ranged = {**finding(6, "R"), "start_line": 4}
    run(bench, pr, answer(ranged), config(bench))
    bench.sim.push(REPO, pr, {"app.py": "# a\n# b\n" + changed})
    run(bench, pr, answer(earlier={"F1": "standing"}), config(bench))
    assert "F1 [P2] app.py:8 (its lines are unchanged (now line 8)): R" in prompts(bench)[-1]
    [entry] = read_history(bench.ledger(), REPO, pr).findings
    assert (entry.start_line, entry.line, entry.state) == (6, 8, "open")
    assert len(bench.sim.comments(REPO, kind="review")) == 1


def test_unreadable_threads_fail_the_round_before_its_leg(bench: Bench) -> None:
    pr = bench.sim.open_pr(REPO, "w", {"app.py": BASE.replace("v5 = 5", "v5 = 'x'")}).number
    run(bench, pr, answer(finding(5, "A")), config(bench))
    legs = bench.legs()
    bench.sim.push(REPO, pr, {"app.py": BASE.replace("v5 = 5", "v5 = 'y'")})
    bench.sim.inject_fault("POST", r"/graphql$", status=422)
    with pytest.raises(KdevError) as caught:
        run(bench, pr, answer(earlier={"F1": "fixed"}), config(bench))
    assert caught.value.reason == "github_read_failed"
    assert bench.legs() == legs and len(prompts(bench)) == 1  # no leg spent


def test_ids_not_read_back_are_attached_by_the_next_run(bench: Bench) -> None:
    pr = bench.sim.open_pr(REPO, "w", {"app.py": BASE.replace("v5 = 5", "v5 = 'x'")}).number
    bench.sim.inject_fault("GET", r"/pulls/\d+/reviews$", status=422)
    with pytest.raises(KdevError) as caught:
        run(bench, pr, answer(finding(5, "A")), config(bench))
    assert caught.value.reason == "incremental_close_failed"
    [entry] = read_history(bench.ledger(), REPO, pr).findings
    assert entry.comment_id is None
    run(bench, pr, answer(), config(bench))  # carried forward: the ids are read now
    [entry] = read_history(bench.ledger(), REPO, pr).findings
    [root] = bench.sim.comments(REPO, kind="review")
    assert entry.comment_id == root.id
    bench.sim.push(REPO, pr, {"app.py": BASE.replace("v5 = 5", "v5 = 'y'")})
    run(bench, pr, answer(earlier={"F1": "fixed"}), config(bench))
    assert bench.sim.thread_resolved(REPO, root.id) and len(replies(bench)) == 1
