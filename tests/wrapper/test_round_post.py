"""Issue 27, D86: with ``review_post`` on, a round is one GitHub review (``event:
COMMENT``, the reviewed head, the line comments, the summary), through the gate, once."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import ValidationError

from engine.config import Settings
from engine.github import GitHubClient
from tests.wrapper.reviewbench import REPO, Bench, open_bench, openai_reviewer
from wrapper.config import KdevConfig
from wrapper.config_repo import review_post_enabled
from wrapper.errors import KdevError
from wrapper.post import PostingContext
from wrapper.review.findings_contract import (
    BAD_JSON,
    BAD_SEVERITY,
    MISSING_PATH,
    STRUCTURED_INSTRUCTION,
    UNKNOWN_FIELD,
    response_format,
)
from wrapper.review.round_post import (
    FALLBACK_NOTE,
    RoundPayload,
    marker,
    post_round,
    record_round,
)

HANDLE = "kdev"
BIG = "".join(f"line{n} = {n}\n" for n in range(1, 41))  # big.py in the base, 40 lines
CHANGED = BIG.replace("line20 = 20\n", "line20 = 'twenty'\n")
SECRET = "sk-roundpost-5a5a5a5a5a5a5a5a"


@pytest.fixture
def bench(tmp_path: Path) -> Iterator[Bench]:
    with open_bench(tmp_path, {"app.py": "print('hi')\n", "big.py": BIG}) as made:
        yield made


def finding(path: str, line: int, severity: str = "P2", **extra: Any) -> dict[str, Any]:
    return {
        "path": path,
        "line": line,
        "start_line": None,
        "severity": severity,
        "title": f"a problem at {path}:{line}",
        "body": f"the text of {path}:{line}",
        "replacement": None,
        **extra,
    }


def block(*findings: dict[str, Any], summary: str = "Two bugs.") -> str:
    data = {"kdev_findings": 1, "summary": summary, "findings": list(findings)}
    return f"```kdev-findings\n{json.dumps(data)}\n```\n\nVERDICT: REQUEST_CHANGES\n"


def config(bench: Bench, output: str | None = None, **overrides: Any) -> KdevConfig:
    """Review posting on; the reviewer prints ``output`` (None: the stub reviewer)."""
    data: dict[str, Any] = {"mention_handle": HANDLE, "review_post": {"enabled": True}}
    if output is not None:
        script = bench.root / "output.txt"
        script.write_text(output)
        data["reviewer"] = {
            "backend": "command",
            "argv": ["sh", "-c", f"cat >/dev/null; cat {script}"],
            "model": "fixed",
            "timeout_seconds": 30,
        }
    data.update(overrides)
    return bench.config(**data)


def open_change(bench: Bench) -> int:
    return bench.sim.open_pr(
        REPO, "f", {"big.py": CHANGED, "new.py": "a = 1\nb = 2\nc = 3\n"}
    ).number


def review_posts(bench: Bench) -> int:
    return len(bench.sim.requests_to(r"/pulls/\d+/reviews$", "POST"))


def test_a_findings_round_is_one_review_with_its_line_comments(bench: Bench) -> None:
    pr = open_change(bench)
    output = block(
        finding("big.py", 20, "P1", replacement="line20 = 20\n"),  # a suggestion
        finding("new.py", 3, "P3", start_line=1),  # a range
        finding("big.py", 2, "P2"),  # outside the hunk: in the summary
        finding("gone.py", 1, "P2"),  # no such file: in the summary
        finding("big.py", 99, "P3"),  # past the end of the file: in the summary
    )
    report = bench.review(pr, config=config(bench, output))
    assert report.verdict == "REQUEST_CHANGES"
    assert review_posts(bench) == 1
    [review] = bench.sim.reviews(REPO, pr)
    head = bench.sim.pull(REPO, pr).head_sha
    assert review.state == "COMMENTED" and review.commit_id == head
    assert review.body.rstrip().endswith(marker(report.patch_id))
    comments = {(c.path, c.line): c for c in bench.sim.review_comments(REPO, pr, review.id)}
    assert set(comments) == {("big.py", 20), ("new.py", 3)}
    assert "```suggestion\nline20 = 20\n```" in comments["big.py", 20].body
    assert comments["new.py", 3].start_line == 1
    assert "suggestion" not in comments["new.py", 3].body
    for where in ("big.py:2", "gone.py:1", "big.py:99"):
        assert where in review.body
    assert "past the end of the file" in review.body
    assert "1 P1, 2 P2, 2 P3" in review.body
    assert bench.sim.comments(REPO, kind="issue") == []  # no PR comment besides the review
    posted = bench.ledger().posted_comment_ids(REPO)
    assert {review.id, *(c.id for c in comments.values())} <= posted
    assert not list((bench.root / "reviews").rglob("undelivered-*.json"))
    assert not list((bench.root / "reviews").rglob("round-*.json"))
    assert len(bench.notes()) == 1  # one notice for the round
    bench.review(pr, config=config(bench, output))  # carried forward: nothing again
    assert review_posts(bench) == 1 and len(bench.notes()) == 1


def test_the_stub_answers_in_findings_when_asked(bench: Bench) -> None:
    pr = bench.sim.open_pr(REPO, "f", {"app.py": "print('hi')\nx = 1  # TODO\n"}).number
    report = bench.review(pr, config=config(bench))
    assert report.verdict == "REQUEST_CHANGES"
    [review] = bench.sim.reviews(REPO, pr)
    [comment] = bench.sim.review_comments(REPO, pr, review.id)
    assert (comment.path, comment.line) == ("app.py", 2)
    assert "```suggestion\nx = 1  # DONE\n```" in comment.body


def test_prose_is_one_review_with_the_prose(bench: Bench) -> None:
    pr = open_change(bench)
    report = bench.review(
        pr, config=config(bench, "All fine, nothing to add.\n\nVERDICT: APPROVE\n")
    )
    assert report.verdict == "APPROVE"
    [review] = bench.sim.reviews(REPO, pr)
    assert "All fine, nothing to add." in review.body
    assert bench.sim.review_comments(REPO, pr, review.id) == []


@pytest.mark.parametrize(
    ("output", "reason"),
    [
        ("```kdev-findings\n{not json\n```\nVERDICT: APPROVE\n", BAD_JSON),
        (block(finding("big.py", 20, "P9")), BAD_SEVERITY),
        (block(finding("", 20)), MISSING_PATH),
        ("I looked at it.\n", "no_verdict"),
    ],
    ids=["bad-json", "unknown-severity", "missing-path", "no-verdict"],
)
def test_output_breaking_the_contract_fails_and_posts_nothing(
    bench: Bench, output: str, reason: str
) -> None:
    pr = open_change(bench)
    with pytest.raises(KdevError) as caught:
        bench.review(pr, config=config(bench, output))
    assert caught.value.reason == reason
    assert review_posts(bench) == 0 and bench.sim.comments(REPO) == []
    assert not list((bench.root / "reviews").rglob("patch-*.md"))  # no verdict
    [note] = bench.notes()
    assert note["subject"].endswith("FAILURE")
    assert reason in note["body"]


def test_a_secret_in_a_finding_posts_nothing(bench: Bench) -> None:
    pr = open_change(bench)
    cfg = config(bench, block(finding("big.py", 20, body=f"key {SECRET}")), secret_env=["LEAKY"])
    with pytest.raises(KdevError) as caught:
        bench.review(pr, config=cfg, environ={"LEAKY": SECRET})
    assert caught.value.reason == "secret_in_output"
    assert review_posts(bench) == 0 and bench.sim.comments(REPO) == []
    assert not list((bench.root / "reviews").rglob("round-*.json"))  # nothing left owed
    assert not list((bench.root / "reviews").rglob("undelivered-*.json"))


def test_the_gate_refuses_a_recorded_round_with_a_secret(bench: Bench) -> None:
    """The round's own gate: a secret in one line comment posts no part of it."""
    pr = open_change(bench)
    head = bench.sim.pull(REPO, pr).head_sha
    patch_id = "ab" * 20
    comment = {"path": "big.py", "line": 20, "side": "RIGHT", "body": f"x {SECRET}"}
    payload = RoundPayload(patch_id, head, "summary", (comment,), "fallback")
    ledger = bench.ledger()
    record_round(ledger, REPO, pr, payload)
    cfg = config(bench, secret_env=["LEAKY"])
    settings = Settings(github_api_url=bench.sim.url, github_token=bench.token)
    with GitHubClient(settings) as client:
        posting = PostingContext(client, ledger, cfg, {"LEAKY": SECRET}, REPO, pr)
        with pytest.raises(KdevError) as caught:
            post_round(posting, patch_id)
    assert caught.value.reason == "secret_in_output"
    assert review_posts(bench) == 0


def test_a_refused_anchor_posts_every_finding_in_the_summary(bench: Bench) -> None:
    pr = open_change(bench)
    bench.sim.inject_fault("POST", r"/pulls/\d+/reviews$", status=422)
    output = block(finding("big.py", 20, "P1"), finding("new.py", 2, "P3"))
    report = bench.review(pr, config=config(bench, output))
    assert report.verdict == "REQUEST_CHANGES"
    assert review_posts(bench) == 2  # the refused one made nothing
    [review] = bench.sim.reviews(REPO, pr)
    assert bench.sim.review_comments(REPO, pr, review.id) == []
    assert "big.py:20" in review.body and "new.py:2" in review.body
    assert FALLBACK_NOTE in review.body


def test_posting_needs_a_mention_handle(bench: Bench) -> None:
    """Refused with the config, before any run (``kdev config validate`` says so too:
    tests/wrapper/test_config_cli.py)."""
    open_change(bench)
    with pytest.raises(ValidationError, match="review_post needs mention_handle"):
        bench.config(review_post={"enabled": True})
    assert review_posts(bench) == 0


def test_review_post_is_off_by_default_and_per_repository(bench: Bench) -> None:
    assert not review_post_enabled(KdevConfig(), REPO)
    handle = {"mention_handle": HANDLE}  # posting needs one (validated with the config)
    on = KdevConfig.model_validate({"review_post": {"enabled": True}, **handle})
    assert review_post_enabled(on, REPO)
    off_here = {
        "review_post": {"enabled": True},
        "repositories": {REPO.upper(): {"review_post": {"enabled": False}}},
        **handle,
    }
    assert not review_post_enabled(KdevConfig.model_validate(off_here), REPO)
    on_here = {"repositories": {REPO: {"review_post": {"enabled": True}}}, **handle}
    assert review_post_enabled(KdevConfig.model_validate(on_here), REPO)
    assert not review_post_enabled(KdevConfig.model_validate(on_here), "octo/other")
    # Off: the stub's ordinary review, as one PR comment through github-comment.
    pr = open_change(bench)
    cfg = bench.config(
        mention_handle=HANDLE,
        notify=[{"type": "github-comment"}],
        repositories={REPO: {"review_post": {"enabled": False}}},
        review_post={"enabled": True},
    )
    bench.review(pr, config=cfg)
    assert review_posts(bench) == 0
    assert len(bench.sim.comments(REPO, kind="issue")) == 1


def _endpoint(answer: dict[str, Any], seen: list[dict[str, Any]]) -> httpx.MockTransport:
    def reply(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        content = json.dumps(answer)
        return httpx.Response(200, json={"choices": [{"message": {"content": content}}]})

    return httpx.MockTransport(reply)


@pytest.mark.parametrize("broken", [False, True], ids=["valid", "unknown-key"])
def test_an_openai_backend_answers_under_the_json_schema(bench: Bench, broken: bool) -> None:
    pr = open_change(bench)
    answer: dict[str, Any] = {
        "kdev_findings": 1,
        "summary": "One nit.",
        "findings": [finding("new.py", 2, "P3")],
    }
    if broken:
        answer["verdict"] = "APPROVE"
    seen: list[dict[str, Any]] = []
    cfg = config(bench, reviewer=openai_reviewer("http://llm.invalid/v1"))
    run = lambda: bench.review(  # noqa: E731
        pr, config=cfg, environ={"REVIEWER_KEY": "k"}, reviewer_transport=_endpoint(answer, seen)
    )
    if broken:
        with pytest.raises(KdevError) as caught:
            run()
        assert caught.value.reason == UNKNOWN_FIELD
        assert review_posts(bench) == 0
        return
    report = run()
    [request] = seen
    assert request["response_format"] == response_format()
    assert request["messages"][0]["content"].rstrip().endswith(STRUCTURED_INSTRUCTION.rstrip())
    assert report.verdict == "APPROVE"  # a P3 alone does not block
    [review] = bench.sim.reviews(REPO, pr)
    [comment] = bench.sim.review_comments(REPO, pr, review.id)
    assert (comment.path, comment.line) == ("new.py", 2)


@pytest.mark.parametrize("status", [500, 422], ids=["server-error", "refused-twice"])
def test_a_failed_post_stays_owed_and_the_rerun_posts_it(bench: Bench, status: int) -> None:
    pr = open_change(bench)
    bench.sim.inject_fault("POST", r"/pulls/\d+/reviews$", status=status, times=2)
    cfg = config(bench, block(finding("big.py", 20, "P1")))
    with pytest.raises(KdevError) as caught:
        bench.review(pr, config=cfg)
    assert caught.value.reason == "review_post_failed"
    assert bench.sim.reviews(REPO, pr) == []
    assert list((bench.root / "reviews").rglob("patch-*.md"))  # the verdict stands
    if status == 500:  # the fallback is only for a refused anchor
        assert review_posts(bench) == 1
        bench.sim.clear_faults()
    report = bench.review(pr, config=cfg)
    assert report.outcome.value == "carried_forward"
    [review] = bench.sim.reviews(REPO, pr)
    assert len(bench.sim.review_comments(REPO, pr, review.id)) == 1
    assert not list((bench.root / "reviews").rglob("undelivered-*.json"))
