"""Roster findings posted on the pull request with a hidden signature (issue 18)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ghsim import GitHubSim
from ghsim.model import node_id
from tests.wrapper.reviewbench import REPO, Bench
from tests.wrapper.test_roster import roster_bench, roster_config  # noqa: F401
from wrapper.cli.app import app
from wrapper.config import KdevConfig
from wrapper.errors import KdevError
from wrapper.post import post_gated
from wrapper.review.findings import Finding, parse_findings, signature, signed_by
from wrapper.review.findings_post import newest_round

SECRET = "sk-findings-7f3e9a1c2b4d"

FINDINGS_REVIEWER = """\
import os, sys
prompt = sys.stdin.read()
if "independent validator of one code-review finding" in prompt:
    print("VALIDATION: VALID: the diff shows it")
    raise SystemExit(0)
print("reviewed")
if "Your role in this review: pci-auditor" in prompt:
    print("- [P1] the card number reaches the log at `plugins/auth/card.py:1`")
    print("P3 the name card is vague")
    leak = os.environ.get("LEAKY")
    if leak:
        print(f"P2 the key {leak} is hard-coded")
if "Your role in this review: code-reviewer" in prompt:
    print("1. **P2** app.py:40 is outside the diff")
print("VERDICT: APPROVE")
"""


def test_finding_lines_are_parsed_and_anchored_only_to_the_reviewers_files() -> None:
    output = "\n".join(
        [
            "Summary line, not a finding; P1 in prose is not one either.",
            "- [P1] broken at src/a.py:12 and b.py:3",
            "* **P2** see `docs/x.md:4`",
            "P3 a nit with no place",
            "P10 is not a priority",
            "2) P2 other.py:9 is not my file",
        ]
    )
    found = parse_findings("sec", output, ["src/a.py", "docs/x.md"])
    assert [(f.priority, f.path, f.line) for f in found] == [
        ("P1", "src/a.py", 12),
        ("P2", "docs/x.md", 4),
        ("P3", None, None),
        ("P2", None, None),
    ]
    assert found[0].text == "- [P1] broken at src/a.py:12 and b.py:3"


def test_a_signature_names_its_agent_and_cannot_be_broken_out_of() -> None:
    assert signature("pci-auditor") == "<!-- kdev-agent: pci-auditor -->"
    assert signed_by(f"text\n\n{signature('pci-auditor')}") == "pci-auditor"
    hostile = signature("x --> <script>")
    assert hostile == "<!-- kdev-agent: x------script- -->"
    assert signed_by("no signature here") is None


def test_the_gate_refuses_anything_but_a_signature_as_trailer(
    roster_bench: Bench,  # noqa: F811
) -> None:
    sent: list[str] = []

    def send(body: str) -> dict[str, object]:
        sent.append(body)
        return {"id": 1}

    config = KdevConfig.model_validate({})
    with pytest.raises(KdevError) as caught:
        post_gated(
            roster_bench.ledger(), config, {}, REPO, 1, "x", "finding", send, signature="<b>"
        )
    assert caught.value.reason == "invalid_signature" and sent == []
    post_gated(
        roster_bench.ledger(), config, {}, REPO, 1, "<b>", "finding", send, signature=signature("a")
    )
    assert sent == ["&lt;b>\n\n<!-- kdev-agent: a -->"]  # the body escaped, not the trailer


def _findings_config(bench: Bench, **extra: object) -> KdevConfig:
    script = bench.root / "findings_reviewer.py"
    script.write_text(FINDINGS_REVIEWER)
    config = roster_config(bench, [sys.executable, "-P", str(script)])
    return config.model_copy(update=extra) if extra else config


@pytest.fixture
def pr_number(roster_bench: Bench) -> Iterator[int]:  # noqa: F811
    files = {"app.py": "x = 1\n", "plugins/auth/card.py": "card = 2\n"}
    yield roster_bench.sim.open_pr(REPO, "f", files).number


def _signed(sim: GitHubSim, kind: str) -> list[tuple[str | None, str | None, int | None]]:
    comments = sim.comments(REPO, kind)
    return [(signed_by(c.body), c.path, c.line) for c in comments if signed_by(c.body)]


def test_roster_findings_are_posted_as_signed_line_and_pr_comments(
    roster_bench: Bench,  # noqa: F811
    pr_number: int,
) -> None:
    bench = roster_bench
    report = bench.review(pr_number, config=_findings_config(bench))
    assert report.verdict == "REQUEST_CHANGES"
    assert Path(report.artifact).exists()
    # The anchored P1 is a new review thread on card.py line 1 of the head.
    assert _signed(bench.sim, "review") == [("pci-auditor", "plugins/auth/card.py", 1)]
    # The unanchored P3, and the P2 whose line is outside the diff (GitHub's 422), are
    # PR-level comments.
    assert sorted(_signed(bench.sim, "issue")) == [
        ("code-reviewer", None, None),
        ("pci-auditor", None, None),
    ]
    outside = next(c for c in bench.sim.comments(REPO, "issue") if "app.py:40" in c.body)
    assert outside.body.startswith("**code-reviewer** (P2): 1. **P2** app.py:40")
    recorded = newest_round(bench.ledger(), REPO, pr_number)
    assert recorded is not None
    assert (recorded.expected, recorded.posted, recorded.failures) == (3, 3, [])
    posted_ids = {c["id"] for c in recorded.comments}
    assert posted_ids <= bench.ledger().posted_comment_ids(REPO)  # self-loop closed
    assert [c["anchored"] for c in recorded.comments].count(True) == 1
    on_disk = Path(report.artifact).parent / f"findings-{recorded.patch_id}.json"
    assert json.loads(on_disk.read_text())["expected"] == 3


def test_a_clean_roster_round_records_zero_of_zero(
    roster_bench: Bench,  # noqa: F811
    pr_number: int,
) -> None:
    bench = roster_bench
    report = bench.review(pr_number, config=roster_config(bench))
    assert report.verdict == "APPROVE"
    recorded = newest_round(bench.ledger(), REPO, pr_number)
    assert recorded is not None and (recorded.expected, recorded.posted) == (0, 0)
    assert _signed(bench.sim, "issue") == [] and _signed(bench.sim, "review") == []


def test_one_review_without_a_roster_posts_no_findings(
    roster_bench: Bench,  # noqa: F811
    pr_number: int,
) -> None:
    bench = roster_bench
    bench.review(pr_number)
    assert newest_round(bench.ledger(), REPO, pr_number) is None


def test_a_secret_in_a_finding_stops_the_round_before_anything_is_posted(
    roster_bench: Bench,  # noqa: F811
    pr_number: int,
) -> None:
    bench = roster_bench
    reviewer_env = [*bench.config().reviewer_env, "LEAKY"]
    config = _findings_config(bench, secret_env=["LEAKY"], reviewer_env=reviewer_env)
    with pytest.raises(KdevError) as caught:
        bench.review(pr_number, config=config, environ={"LEAKY": SECRET})
    # The verdict is refused first, and findings are posted only after it is written.
    assert caught.value.reason == "secret_in_output"
    assert _signed(bench.sim, "issue") == [] and _signed(bench.sim, "review") == []
    assert newest_round(bench.ledger(), REPO, pr_number) is None


def test_finding_dataclass_json_has_no_text() -> None:
    # The ledger record keeps where a finding went, not its words (they are on GitHub).
    assert "text" not in Finding("a", "P1", "secret-ish words").to_json()


def test_a_github_failure_of_a_line_comment_is_counted_not_retried_elsewhere(
    roster_bench: Bench,  # noqa: F811
    pr_number: int,
) -> None:
    bench = roster_bench
    bench.sim.inject_fault("POST", r"/pulls/\d+/comments$", status=403, times=None)
    with pytest.raises(KdevError) as caught:
        bench.review(pr_number, config=_findings_config(bench))
    assert caught.value.reason == "findings_post_incomplete"
    assert "1 of 3 findings posted" in caught.value.message
    recorded = newest_round(bench.ledger(), REPO, pr_number)
    assert recorded is not None and (recorded.expected, recorded.posted) == (3, 1)
    assert sorted(f["agent"] for f in recorded.failures) == ["code-reviewer", "pci-auditor"]
    assert {f["reason"] for f in recorded.failures} == {"finding_post_failed"}
    assert _signed(bench.sim, "review") == []  # a 403 is not moved to a PR-level comment


@pytest.fixture
def cli(roster_bench: Bench, monkeypatch: pytest.MonkeyPatch) -> CliRunner:  # noqa: F811
    config = roster_bench.root / "kdev-cli.yaml"
    config.write_text(f"reviews_dir: {roster_bench.root / 'reviews'}\n")
    monkeypatch.setenv("KDEV_CONFIG", str(config))
    monkeypatch.setenv("GITHUB_API_URL", roster_bench.sim.url)
    monkeypatch.setenv("GITHUB_TOKEN", roster_bench.token)
    return CliRunner()


def test_kdev_comments_agent_lists_only_that_reviewers_signed_findings(
    roster_bench: Bench,  # noqa: F811
    pr_number: int,
    cli: CliRunner,
) -> None:
    bench = roster_bench
    bench.review(pr_number, config=_findings_config(bench))
    forged = f"{signature('pci-auditor')} is quoted here, not at the end"
    bench.sim.comment(REPO, pr_number, forged, author="alice")
    base = ["comments", "--repo", REPO, "--pr", str(pr_number)]
    listed = cli.invoke(app, [*base, "--agent", "pci-auditor", "--json"])
    assert listed.exit_code == 0, listed.output
    items = json.loads(listed.stdout)["items"]
    assert sorted((i["kind"], i["path"], i["agent"]) for i in items) == [
        ("inline", "plugins/auth/card.py", "pci-auditor"),
        ("issue", None, "pci-auditor"),
    ]
    assert json.loads(listed.stdout)["open_threads"] == 1
    text = cli.invoke(app, [*base, "--agent", "code-reviewer"])
    assert text.exit_code == 0, text.output
    assert text.output.count("agent=code-reviewer") == 1 and "pci-auditor" not in text.output
    everything = json.loads(cli.invoke(app, [*base, "--json"]).stdout)["items"]
    assert len(everything) > 3  # without --agent: every comment, the forged one too
    bad = cli.invoke(app, [*base, "--agent", "no spaces"])
    assert bad.exit_code == 2 and bad.output.strip().endswith("[invalid_agent]")


def test_pr_status_reports_the_newest_rounds_posting_integrity(
    roster_bench: Bench,  # noqa: F811
    pr_number: int,
    cli: CliRunner,
) -> None:
    bench = roster_bench
    base = ["pr-status", "--repo", REPO, "--pr", str(pr_number)]
    bench.sim.inject_fault("POST", r"/pulls/\d+/comments$", status=403, times=None)
    with pytest.raises(KdevError):
        bench.review(pr_number, config=_findings_config(bench))
    shown = cli.invoke(app, [*base, "--json"])
    assert shown.exit_code == 0, shown.output
    posting = json.loads(shown.stdout)["posting"]
    assert (posting["expected"], posting["posted"], posting["complete"]) == (3, 1, False)
    text = cli.invoke(app, base).output
    assert "posting integrity: 1 of 3 findings posted, INCOMPLETE (finding_post_failed)" in text
    # A new head's clean round is now the newest: its record, not the older one, counts.
    bench.sim.clear_faults()
    bench.sim.push(REPO, pr_number, {"app.py": "x = 2\n"})
    # A roster round's reviewer legs are all counted at its gate (D95): the second round
    # of six needs room beside the first's nine legs of this PR.
    config = roster_config(bench)
    budgets = config.budgets.model_copy(update={"daily_rounds_per_pr": 20})
    bench.review(pr_number, config=config.model_copy(update={"budgets": budgets}))
    posting = json.loads(cli.invoke(app, [*base, "--json"]).stdout)["posting"]
    assert (posting["expected"], posting["posted"], posting["complete"]) == (0, 0, True)


def test_kdev_reopen_reopens_a_resolved_finding_and_fails_loud(
    roster_bench: Bench,  # noqa: F811
    pr_number: int,
    cli: CliRunner,
) -> None:
    bench = roster_bench
    bench.review(pr_number, config=_findings_config(bench))
    (root,) = [c for c in bench.sim.comments(REPO, "review") if signed_by(c.body)]
    node = node_id("PullRequestReviewComment", root.id)
    base = ["--repo", REPO, "--pr", str(pr_number), "--node", node]
    assert cli.invoke(app, ["resolve", *base]).exit_code == 0
    assert bench.sim.thread_resolved(REPO, root.id)
    reopened = cli.invoke(app, ["reopen", *base, "--json"])
    assert reopened.exit_code == 0, reopened.output
    assert json.loads(reopened.stdout)["resolved"] is False
    assert not bench.sim.thread_resolved(REPO, root.id)
    again = cli.invoke(app, ["reopen", *base])  # an open thread stays open, no mutation
    assert again.exit_code == 0 and again.stdout.startswith("reopened: thread ")
    listed = cli.invoke(app, ["comments", *base[:4], "--agent", "pci-auditor", "--unresolved"])
    assert "open threads: 1" in listed.output
    assert cli.invoke(app, ["resolve", *base]).exit_code == 0
    bench.sim.inject_fault("POST", r"/graphql$", status=502, times=None)
    failed = cli.invoke(app, ["reopen", *base])
    assert failed.exit_code != 0 and bench.sim.thread_resolved(REPO, root.id)
    bench.sim.clear_faults()
    missing = cli.invoke(app, ["reopen", *base[:4], "--node", "MDEyOk5vdGhpbmc5OQ=="])
    assert missing.exit_code == 1 and missing.output.strip().endswith("[thread_not_found]")


@pytest.mark.parametrize(
    ("action", "expected"),
    [("post_with_annotation", "annotate"), ("post_silently", "post"), ("drop", "withdraw")],
)
def test_uncertain_findings_follow_uncertain_action(action: str, expected: str) -> None:
    import dataclasses

    from wrapper.review.findings import finding_body
    from wrapper.review.validator import disposition, parse_validation

    uncertain = Finding("a", "P2", "x", validation="UNCERTAIN", validation_reason="unsure")
    invalid = Finding("a", "P1", "x", validation="INVALID", validation_reason="wrong")
    assert disposition(invalid, action) == "withdraw"
    assert disposition(Finding("a", "P3", "x"), action) == "post"
    assert disposition(uncertain, action) == expected
    shown = finding_body(dataclasses.replace(uncertain, action=disposition(uncertain, action)))
    assert ("Independent validator: uncertain: unsure" in shown) == (expected == "annotate")
    assert parse_validation("VALIDATION: VALID: a\nVALIDATION: INVALID - b") == ("INVALID", "b")
    assert parse_validation("VERDICT: APPROVE") == ("UNCERTAIN", "no validation line")
