"""The independent validator's withdrawn findings are withdrawn on their thread (issue 18,
D57): posted, then replied to with the validator's reason and resolved (a PR-level one:
replied to and hidden), each step recorded, a half-done withdrawal finished by the next
run without a second reply."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from typer.testing import CliRunner

from engine.config import Settings
from engine.github.client import GitHubClient
from tests.wrapper.reviewbench import REPO, Bench
from tests.wrapper.test_findings import cli, pr_number  # noqa: F401
from tests.wrapper.test_roster import roster_bench, roster_config  # noqa: F401
from wrapper.cli.app import app
from wrapper.errors import KdevError, Outcome
from wrapper.review.findings import Finding, signed_by
from wrapper.review.findings_post import (
    PostTarget,
    check_withdrawn,
    newest_round,
    post_findings,
    withdraw_pending,
)
from wrapper.review.findings_withdraw import withdraw_step

VALIDATING_REVIEWER = """\\
import sys
prompt = sys.stdin.read()
if "independent validator of one code-review finding" in prompt:
    if "reaches the log" in prompt:
        print("thinking")
        print("VALIDATION: INVALID: the log call masks the number, see @kdev review")
    elif "outside the diff" in prompt:
        print("no decision line at all")
    else:
        print("VALIDATION: VALID: yes")
    raise SystemExit(0)
print("reviewed")
if "Your role in this review: pci-auditor" in prompt:
    print("- [P1] the card number reaches the log at `plugins/auth/card.py:1`")
    print("P3 the name card is vague")
if "Your role in this review: code-reviewer" in prompt:
    print("1. **P2** app.py:40 is outside the diff")
    print("P2 the loop in app.py never ends")
print("VERDICT: APPROVE")
"""
WITHDRAWN = "Withdrawn by the independent validator"


def _validating(bench: Bench) -> Any:
    script = bench.root / "validating_reviewer.py"
    script.write_text(VALIDATING_REVIEWER)
    return roster_config(bench, [sys.executable, "-P", str(script)]).model_copy(
        update={"mention_handle": "kdev"}
    )


def _root(bench: Bench, needle: str, kind: str) -> Any:
    (found,) = [
        c
        for c in bench.sim.comments(REPO, kind)
        if needle in c.body and signed_by(c.body) and c.in_reply_to_id is None
    ]
    return found


def _withdrawals(bench: Bench) -> list[Any]:
    return [c for c in bench.sim.comments(REPO) if WITHDRAWN in c.body]


def test_invalid_findings_are_posted_then_withdrawn_on_their_thread(
    roster_bench: Bench,  # noqa: F811
    pr_number: int,  # noqa: F811
    cli: CliRunner,  # noqa: F811
) -> None:
    bench = roster_bench
    report = bench.review(pr_number, config=_validating(bench))
    assert report.verdict == "REQUEST_CHANGES"
    recorded = newest_round(bench.ledger(), REPO, pr_number)
    assert recorded is not None
    # Every finding is posted, the two withdrawn ones too: expected and posted count all
    # four; the withdrawn ones are counted apart, each with its reason and steps done.
    assert (recorded.expected, recorded.posted, recorded.failures) == (4, 4, [])
    withdrawn = sorted(
        (w["agent"], w["validation"], w["reason"], w["anchored"], tuple(w["done"]))
        for w in recorded.withdrawn
    )
    assert withdrawn == [
        ("code-reviewer", "UNCERTAIN", "no validation line", False, ("replied", "hidden")),
        (
            "pci-auditor",
            "INVALID",
            "the log call masks the number, see @kdev review",
            True,
            ("replied", "resolved"),
        ),
    ]
    assert recorded.acceptance == {
        "code-reviewer": {"valid": 1, "invalid": 0, "uncertain": 1},
        "pci-auditor": {"valid": 0, "invalid": 1, "uncertain": 0},
    }
    # The INVALID line comment: a reply on its thread with the reason, then resolved.
    invalid = _root(bench, "reaches the log", "review")
    (reply,) = [c for c in bench.sim.comments(REPO, "review") if c.in_reply_to_id == invalid.id]
    assert reply.body.startswith(f"{WITHDRAWN}: INVALID: the log call masks the number")
    assert "@kdev" not in reply.body  # neutralised by the gate like every posted body
    assert bench.sim.thread_resolved(REPO, invalid.id)
    # The dropped UNCERTAIN finding fell back to a PR-level comment: a signed reply that
    # quotes it, and the finding hidden as resolved.
    dropped = _root(bench, "outside the diff", "issue")
    notice = next(c for c in bench.sim.comments(REPO, "issue") if WITHDRAWN in c.body)
    assert f"Re: finding comment {dropped.id}" in notice.body
    assert "UNCERTAIN (uncertain_action: drop): no validation line" in notice.body
    assert signed_by(notice.body) == "code-reviewer"
    assert bench.sim.minimized(REPO, dropped.id) == "RESOLVED"
    # The kept findings are neither replied to nor hidden.
    kept = _root(bench, "never ends", "issue")
    assert bench.sim.minimized(REPO, kept.id) is None and len(_withdrawals(bench)) == 2
    assert {reply.id, notice.id} <= bench.ledger().posted_comment_ids(REPO)
    # Six reviewer legs plus three validation legs (P3 findings are not checked).
    assert bench.legs() == 9
    # kdev comments --agent shows the withdrawn line comment resolved, and lists the
    # PR-level withdrawal notice beside the finding it withdraws.
    base = ["comments", "--repo", REPO, "--pr", str(pr_number), "--json"]
    items = json.loads(cli.invoke(app, [*base, "--agent", "pci-auditor"]).stdout)["items"]
    assert [i["resolved"] for i in items if i["id"] == invalid.id] == [True]
    items = json.loads(cli.invoke(app, [*base, "--agent", "code-reviewer"]).stdout)["items"]
    assert any(i["id"] == notice.id and WITHDRAWN in i["body"] for i in items)
    shown = cli.invoke(app, ["pr-status", "--repo", REPO, "--pr", str(pr_number), "--json"])
    posting = json.loads(shown.stdout)["posting"]
    assert (posting["expected"], posting["posted"], posting["withdrawn"]) == (4, 4, 2)


def test_a_failed_withdrawal_fails_the_run_and_the_next_run_finishes_it(
    roster_bench: Bench,  # noqa: F811
    pr_number: int,  # noqa: F811
) -> None:
    bench = roster_bench
    config = _validating(bench)
    bench.sim.inject_fault("POST", r"/graphql$", status=502, times=None)
    with pytest.raises(KdevError) as caught:
        bench.review(pr_number, config=config)
    assert caught.value.reason == "findings_withdraw_incomplete"
    recorded = newest_round(bench.ledger(), REPO, pr_number)
    assert recorded is not None and (recorded.expected, recorded.posted) == (4, 4)
    assert sorted(tuple(w["done"]) for w in recorded.withdrawn) == [("replied",), ("replied",)]
    errors = {w["error"] for w in recorded.withdrawn}
    assert errors == {"finding_withdraw_failed", "github_read_failed"}
    invalid = _root(bench, "reaches the log", "review")
    assert not bench.sim.thread_resolved(REPO, invalid.id)
    bench.sim.clear_faults()
    # The next run of the same head carries the verdict forward and finishes the steps
    # left: no second reply, the thread resolved, the PR-level finding hidden.
    again = bench.review(pr_number, config=config)
    assert again.outcome is Outcome.CARRIED_FORWARD
    assert len(_withdrawals(bench)) == 2
    assert bench.sim.thread_resolved(REPO, invalid.id)
    dropped = _root(bench, "outside the diff", "issue")
    assert bench.sim.minimized(REPO, dropped.id) == "RESOLVED"
    finished = newest_round(bench.ledger(), REPO, pr_number)
    assert finished is not None
    assert all("error" not in w and len(w["done"]) == 2 for w in finished.withdrawn)
    assert bench.legs() == 9  # nothing reviewed again


class Crash(BaseException):
    """A process dying between two steps (not a KdevError: nothing catches it)."""


@pytest.fixture
def target(roster_bench: Bench, pr_number: int) -> Iterator[PostTarget]:  # noqa: F811
    bench = roster_bench
    settings = Settings(github_api_url=bench.sim.url, github_token=bench.token)
    head = bench.sim.pull(REPO, pr_number).head_sha
    with GitHubClient(settings) as client:
        yield PostTarget(
            client, bench.ledger(), bench.config(), {}, REPO, pr_number, head
        )  # fmt: skip


def test_a_crash_after_posting_is_finished_by_the_next_run_without_a_second_reply(
    roster_bench: Bench,  # noqa: F811
    target: PostTarget,
) -> None:
    bench = roster_bench
    invalid = Finding(
        "pci-auditor",
        "P1",
        "- [P1] wrong at plugins/auth/card.py:1",
        "plugins/auth/card.py",
        1,
        validation="INVALID",
        validation_reason="it is masked",
        action="withdraw",
    )
    calls: list[str] = []

    def dies_before_resolving(step: str, where: PostTarget, entry: dict[str, Any]) -> None:
        calls.append(step)
        if step == "resolved":
            raise Crash
        withdraw_step(step, where, entry)

    def dies_at_once(step: str, where: PostTarget, entry: dict[str, Any]) -> None:
        raise Crash

    # Killed right after posting, before any withdrawal step: the record has the posted
    # finding with nothing done.
    with pytest.raises(Crash):
        post_findings(target, "a" * 40, [invalid], bench.ledger().clock, dies_at_once)
    recorded = newest_round(bench.ledger(), REPO, target.pr)
    assert recorded is not None and (recorded.expected, recorded.posted) == (1, 1)
    assert [w["done"] for w in recorded.withdrawn] == [[]]
    with pytest.raises(KdevError) as caught:
        check_withdrawn(target, "verdict.md")
    assert caught.value.reason == "findings_withdraw_incomplete"
    # The next run replies, then dies before resolving; the reply is recorded done.
    with pytest.raises(Crash):
        withdraw_pending(target, dies_before_resolving)
    assert calls == ["replied", "resolved"] and len(_withdrawals(bench)) == 1
    # The run after that only resolves: still one reply.
    calls.clear()

    def counted(step: str, where: PostTarget, entry: dict[str, Any]) -> None:
        calls.append(step)
        withdraw_step(step, where, entry)

    assert withdraw_pending(target, counted) == 0
    assert calls == ["resolved"] and len(_withdrawals(bench)) == 1
    root = _root(bench, "wrong at", "review")
    assert bench.sim.thread_resolved(REPO, root.id)
    check_withdrawn(target, "verdict.md")  # nothing left: no error
    assert withdraw_pending(target, dies_at_once) == 0  # and nothing is done again


def test_two_runs_finishing_the_same_withdrawal_reply_once(
    roster_bench: Bench,  # noqa: F811
    target: PostTarget,
) -> None:
    bench = roster_bench
    invalid = Finding(
        "pci-auditor", "P1", "P1 wrong at plugins/auth/card.py:1", "plugins/auth/card.py", 1,
        validation="INVALID", validation_reason="masked", action="withdraw",
    )  # fmt: skip

    def dies_at_once(step: str, where: PostTarget, entry: dict[str, Any]) -> None:
        raise Crash

    with pytest.raises(Crash):
        post_findings(target, "b" * 40, [invalid], bench.ledger().clock, dies_at_once)

    def slow(step: str, where: PostTarget, entry: dict[str, Any]) -> None:
        time.sleep(0.2)  # widens the window two unlocked runs would both pass through
        withdraw_step(step, where, entry)

    with ThreadPoolExecutor(max_workers=2) as pool:
        left = list(pool.map(lambda _: withdraw_pending(target, slow), range(2)))
    assert left == [0, 0] and len(_withdrawals(bench)) == 1
    assert bench.sim.thread_resolved(REPO, _root(bench, "wrong at", "review").id)
