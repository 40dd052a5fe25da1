"""Issue 31's acceptance: reviews on ghsim whose reviewers report usage in each shape (an
OpenAI-compatible endpoint's ``usage``, Claude's JSON, a CLI that reports nothing), run
through ``kdev review-pr``; the ledger, ``kdev costs --json`` and the metrics agree to the
cent, and a carried-forward head is counted as saved at the repository's average."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.llmkit import chat_completion, fake_upstream, openai_usage
from tests.wrapper.reviewbench import BIN, REPO, STUB, Bench
from wrapper.costs import summarize
from wrapper.errors import ReviewerFailed
from wrapper.ledger.ledger import Ledger
from wrapper.ledger.usagelog import USAGE_FILE, UsageRecord, append_usage, read_usage
from wrapper.metrics import read_all
from wrapper.usage import CostSource, LegUsage, Tokens, cents

PRICES = {"m": {"input": "3", "output": "15", "cached": "0.3"}}
# 300,000 uncached at $3, 100,000 cached at $0.30, 50,000 out at $15 per million.
OPENAI_COST = Decimal("1.68")
CLAUDE_COST = Decimal("0.0417325")  # what the stub's Claude envelope reports


def _kdev(env: dict[str, str], *args: str) -> Any:
    done = subprocess.run(
        [str(BIN / "kdev"), *args, "--json"], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _review(bench: Bench, env: dict[str, str], pr: int) -> Any:
    head = bench.sim.pull(REPO, pr).head_sha
    return _kdev(
        env, "review-pr", "--repo", REPO, "--pr", str(pr), "--head-sha", head,
        "--checkout", str(bench.checkout),
    )  # fmt: skip


def _env(bench: Bench, reviewer: dict[str, Any], **extra: str) -> dict[str, str]:
    config = bench.config(reviewer=reviewer, prices=PRICES)
    config = config.model_copy(update={"reviewer_env": [*config.reviewer_env, "KDEV_STUB_USAGE"]})
    metrics = str(bench.root / "kdev.prom")
    return {**bench.kdev_env(config), "KDEV_METRICS_FILE": metrics, **extra}


def _run_three_shapes(bench: Bench) -> dict[str, int]:
    prs = {
        name: bench.sim.open_pr(REPO, name, {f"{name}.py": "x = 1\n"}).number
        for name in ("openai", "claude", "prose")
    }
    with fake_upstream() as upstream:
        upstream.answer = chat_completion(
            "Fine.\nVERDICT: APPROVE", openai_usage(400_000, 50_000, cached=100_000)
        )
        openai = {"backend": "openai", "base_url": upstream.url, "model": "m",
                  "api_key_env": "REVIEWER_KEY", "max_attempts": 1}  # fmt: skip
        env = _env(bench, openai, REVIEWER_KEY="sk-test-" + "k" * 24)
        assert _review(bench, env, prs["openai"])["outcome"] == "reviewed"
    claude = {"backend": "command", "argv": STUB, "model": "stub-claude", "usage": "claude-json"}
    env = _env(bench, claude, KDEV_STUB_USAGE="claude-json")
    assert _review(bench, env, prs["claude"])["outcome"] == "reviewed"
    # The same head again: dedup carries the verdict forward, no leg runs.
    assert _review(bench, env, prs["claude"])["outcome"] == "carried_forward"
    prose = {"backend": "command", "argv": STUB, "model": "stub"}
    assert _review(bench, _env(bench, prose), prs["prose"])["outcome"] == "reviewed"
    return prs


def test_the_ledger_costs_and_metrics_agree_to_the_cent(bench: Bench) -> None:
    prs = _run_three_shapes(bench)
    records = list(read_usage(bench.ledger(), REPO))
    by_pr = {record.pr: record.usage for record in records}
    assert len(records) == 3  # the carried-forward head ran no leg
    assert by_pr[prs["openai"]] == LegUsage(
        "m", Tokens(400_000, 50_000, 100_000), OPENAI_COST, CostSource("computed")
    )
    claude = by_pr[prs["claude"]]
    assert (claude.cost, claude.source.value, claude.tokens) == (
        CLAUDE_COST,
        "reported",
        Tokens(12_500, 700, 9000),
    )
    prose = by_pr[prs["prose"]]
    assert (prose.cost, prose.tokens, prose.source.value) == (None, None, "unknown")

    env = bench.kdev_env()
    report = _kdev(env, "costs", "--repo", REPO)
    ledger_total = cents(sum((r.usage.cost or Decimal() for r in records), Decimal()))
    assert report["total"]["cost_usd"] == str(ledger_total) == "1.72"
    assert (report["total"]["legs"], report["total"]["legs_cost_unknown"]) == (3, 1)
    models = {row["model"]: row["cost_usd"] for row in report["by_model"]}
    assert models == {"m": "1.68", "stub-claude": "0.04", "stub": "0.00"}
    assert {row["pr"]: row["legs"] for row in report["by_pr"]} == dict.fromkeys(prs.values(), 1)
    [day] = report["by_day"]
    assert day["day"] == datetime.now(UTC).date().isoformat() and day["cost_usd"] == "1.72"
    # One leg not run, at the mean of the two legs of known cost.
    average = (OPENAI_COST + CLAUDE_COST) / 2
    assert report["saved"] == [
        {
            "repo": REPO,
            "legs_not_run": 1,
            "average_leg_cost_usd": str(cents(average)),
            "saved_usd": str(cents(average)),
        }  # fmt: skip
    ]

    text = subprocess.run(
        [str(BIN / "kdev"), "costs", "--repo", REPO], env=env, capture_output=True, text=True
    ).stdout.splitlines()
    assert text[0] == (
        "since the first leg: $1.72  3 legs (1 of unknown cost), 412500 in (109000 cached), "
        "50700 out"
    )
    assert text[-1] == (f"saved in {REPO}: 1 legs not run (carried forward), ${cents(average)}")

    counts = read_all(bench.root / "kdev.prom")
    spent = counts["kdev_reviewer_cost_usd"]
    assert str(cents(Decimal(repr(sum(spent.values()))))) == report["total"]["cost_usd"]
    assert spent[(REPO, "m")] == float(OPENAI_COST)
    assert counts["kdev_reviewer_tokens"][(REPO, "m", "cached")] == 100_000
    assert counts["kdev_reviewer_legs"][(REPO, "stub", "unknown")] == 1
    assert (REPO, "stub") not in spent  # unknown is never counted as zero


def test_the_verdict_and_explain_show_each_legs_usage(bench: Bench) -> None:
    prs = _run_three_shapes(bench)
    [verdict] = (bench.root / "reviews").rglob(f"pr-{prs['claude']}/patch-*.md")
    header, body = verdict.read_text().split("\n---\n", 1)
    assert header.splitlines()[-1] == (
        "USAGE: 1 leg: 12500 in (9000 cached), 700 out; $0.0417325 (1 reported)"
    )
    assert body.startswith("Stub review")  # the review itself is as the reviewer wrote it
    patch_id = verdict.name.removeprefix("patch-").removesuffix(".md")
    record = bench.ledger().find_verdict(REPO, prs["claude"], patch_id)
    assert record is not None and record.usage.startswith("1 leg: 12500 in")
    shown = _kdev(bench.kdev_env(), "explain", "--repo", REPO, "--pr", str(prs["prose"]))
    [usage] = shown["usage"]
    assert (usage["source"], usage["cost"], usage["reason"]) == (
        "unknown",
        None,
        "reviewer_reports_no_usage",
    )
    assert any(line["source"] == "usage" for line in shown["timeline"])


def test_costs_since_leaves_older_legs_out_and_a_bad_since_is_refused(bench: Bench) -> None:
    _run_three_shapes(bench)
    env = bench.kdev_env()
    future = "2999-01-01T00:00:00Z"
    later = _kdev(env, "costs", "--since", future)
    assert later["total"]["legs"] == 0 and later["since"] == future and later["saved"] == []
    done = subprocess.run(
        [str(BIN / "kdev"), "costs", "--since", "soon"], env=env, capture_output=True, text=True
    )
    assert done.returncode != 0 and "[invalid_since]" in done.stderr


def test_a_torn_usage_line_is_skipped_and_summing_is_exact(tmp_path: Path) -> None:
    """Costs sum without float drift (0.1 + 0.2 + 0.005 is 0.305, shown 0.31); a line a
    killed writer tore, or one whose cost is a float, is skipped, never summed."""
    ledger = Ledger(tmp_path / "reviews")
    at = datetime(2026, 1, 2, tzinfo=UTC)
    for cost in ("0.1", "0.2", "0.005"):
        usage = LegUsage("m", None, Decimal(cost), CostSource.REPORTED)
        append_usage(ledger, UsageRecord(at, REPO, 1, "a" * 40, None, "review-pr", usage))
    path = ledger.repo_dir(REPO) / USAGE_FILE
    good = path.read_text().splitlines()[0]
    with path.open("a") as log:
        log.write(good.replace('"0.1"', "0.1") + "\n" + good[:30])
    records = list(read_usage(ledger, REPO))
    assert [r.usage.cost for r in records] == [Decimal("0.1"), Decimal("0.2"), Decimal("0.005")]
    report = summarize(records, None, {}, {}).to_json()
    assert report["total"]["cost_usd"] == "0.31" and report["by_day"][0]["day"] == "2026-01-02"


def test_a_leg_that_fails_after_it_spent_is_still_recorded(bench: Bench) -> None:
    """An answer without a verdict fails the round (no_verdict), but its tokens were
    spent: the usage log has them, priced, and no verdict is written."""
    pr = bench.sim.open_pr(REPO, "f", {"a.py": "x = 1\n"})
    with fake_upstream() as upstream:
        upstream.answer = chat_completion("I forgot the verdict.", openai_usage(1000, 10))
        reviewer = {"backend": "openai", "base_url": upstream.url, "model": "m",
                    "api_key_env": "REVIEWER_KEY", "max_attempts": 1}  # fmt: skip
        config = bench.config(reviewer=reviewer, prices=PRICES)
        with pytest.raises(ReviewerFailed) as caught:
            bench.review(pr.number, config=config, environ={"REVIEWER_KEY": "k" * 24})
    assert caught.value.reason == "no_verdict"
    [record] = read_usage(bench.ledger(), REPO)
    assert (record.pr, record.head_sha, record.command) == (pr.number, pr.head_sha, "review-pr")
    assert record.usage.cost == Decimal("0.00315")  # 1000 in at $3, 10 out at $15 per million
    assert not list((bench.root / "reviews").rglob("patch-*.md"))


def test_costs_refuses_a_repository_that_is_not_owner_name(bench: Bench) -> None:
    done = subprocess.run(
        [str(BIN / "kdev"), "costs", "--repo", "../etc"],
        env=bench.kdev_env(), capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode != 0 and "[invalid_repo]" in done.stderr
