"""Money budgets (issue 31, D106): a cap crossed mid-day defers the next round with a
notice and the merge gate's ``pending`` (real ``kdev review-pr`` on ghsim over HTTP), the
sweep retries it when the window allows, and every way the decision could go wrong
fails closed."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.wrapper.reviewbench import BIN, REPO, STUB, Bench, open_bench
from tests.wrapper.test_roster_sized import BIG, PKG_ROSTER, ROOT_ROSTER, SMALL
from tests.wrapper.test_roster_sized import _config as roster_config
from tests.wrapper.test_roster_sized import _prompts as roster_prompts
from tests.wrapper.test_sweep import sweep
from wrapper.config import KdevConfig, load_config
from wrapper.config_money import MoneyBudgets
from wrapper.errors import ConfigError, Outcome
from wrapper.ledger.usagelog import UsageRecord, append_usage, read_usage
from wrapper.review.money_budget import day_window
from wrapper.review.sizing import estimate_tokens
from wrapper.usage import CostSource, LegUsage

CLAUDE = {"backend": "command", "argv": STUB, "model": "stub-claude", "usage": "claude-json"}
PRICES = {"stub-claude": {"input": "3", "output": "15"}}
CLAUDE_COST = Decimal("0.0417325")  # what the stub's Claude envelope reports per leg


@pytest.fixture
def bench(tmp_path: Path) -> Iterator[Bench]:
    with open_bench(tmp_path, {"app.py": "one\n"}) as made:
        yield made


def _config(bench: Bench, money: dict[str, Any], **overrides: Any) -> KdevConfig:
    config = bench.config(
        reviewer=overrides.pop("reviewer", CLAUDE),
        prices=overrides.pop("prices", PRICES),
        money_budgets=money,
        merge_gate={"enabled": True},
        **overrides,
    )
    return config.model_copy(update={"reviewer_env": [*config.reviewer_env, "KDEV_STUB_USAGE"]})


def _env(bench: Bench, config: KdevConfig) -> dict[str, str]:
    return {**bench.kdev_env(config), "KDEV_STUB_USAGE": "claude-json"}


def _kdev(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "kdev"), *args], env=env, capture_output=True, text=True, timeout=120
    )


def _review(bench: Bench, env: dict[str, str], pr: int) -> Any:
    head = bench.sim.pull(REPO, pr).head_sha
    done = _kdev(
        env, "review-pr", "--repo", REPO, "--pr", str(pr), "--head-sha", head,
        "--checkout", str(bench.checkout), "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _statuses(bench: Bench, sha: str) -> list[tuple[str, str | None]]:
    answer = httpx.get(
        f"{bench.sim.url}/repos/{REPO}/commits/{sha}/statuses",
        headers={"Authorization": f"token {bench.token}"},
        timeout=10,
    )
    answer.raise_for_status()
    return [(s["state"], s["description"]) for s in answer.json()]


def _deferred_notes(bench: Bench) -> list[dict[str, Any]]:
    return [n for n in bench.notes() if "DEFERRED" in n["subject"]]


def test_a_cap_crossed_mid_day_defers_the_next_round_until_the_next_utc_day(
    bench: Bench,
) -> None:
    # The first round's estimate fits $0.05; its reported $0.0417 leaves no room for a second.
    money = {"per_repo_per_day_usd": "0.05", "output_tokens_per_leg": 1000}
    config = _config(bench, money)
    env = _env(bench, config)
    first = bench.sim.open_pr(REPO, "a", {"a.py": "1\n"})
    second = bench.sim.open_pr(REPO, "b", {"b.py": "1\n"})
    assert _review(bench, env, first.number)["outcome"] == "reviewed"
    [spent] = read_usage(bench.ledger(), REPO)
    assert spent.usage.cost == CLAUDE_COST

    report = _review(bench, env, second.number)
    assert report["outcome"] == "deferred_budget"
    assert report["detail"].startswith("money_per_repo_per_day: $0.05+$0.0")
    assert report["detail"].endswith("/$0.05")
    [(_, number, marker)] = bench.ledger().list_deferred(REPO)
    _, next_day = day_window(datetime.now(UTC))
    assert (number, marker.budget, marker.reopens_at) == (
        second.number,
        "money_per_repo_per_day",
        next_day,
    )
    assert (marker.count, marker.limit) == (4, 5)  # cents: $0.0417 spent, $0.05 cap
    [note] = _deferred_notes(bench)
    body = note["body"]
    assert "DEFERRED: budget money_per_repo_per_day ($0.05+$0.0" in body
    assert "WHY: money_per_repo_per_day: spent $0.05 of $0.05 in its window" in body
    assert "this round's estimate $0.0" in body and "1000 output tokens each" in body
    assert "the setting is money_budgets.per_repo_per_day_usd" in body
    assert f"REOPENS_AT: {next_day.isoformat()}" in body
    [(state, description)] = _statuses(bench, second.head_sha)
    assert state == "pending" and description == f"review deferred ({report['detail']})"
    explained = _kdev(env, "explain", "--repo", REPO, "--pr", str(second.number))
    assert explained.returncode == 0, explained.stderr
    assert "deferred by money_per_repo_per_day until" in explained.stdout

    # Still the same UTC day: the sweep does not retry it.
    early = sweep(bench, kdev=config)
    assert early.repos[0].deferred[0].retried is None
    # The next UTC day: the window has room again, and the sweep reviews the head.
    wait = next_day - datetime.now(UTC) + timedelta(minutes=1)
    later = sweep(bench, kdev=config, later=wait)
    assert later.repos[0].deferred[0].retried == "reviewed"
    assert bench.ledger().list_deferred(REPO) == []
    assert _statuses(bench, second.head_sha)[0][0] != "pending"


def test_a_per_pr_cap_holds_that_pr_only(bench: Bench) -> None:
    config = _config(bench, {"per_pr_per_day_usd": "0.05", "output_tokens_per_leg": 1000})
    first = bench.sim.open_pr(REPO, "a", {"a.py": "1\n"})
    other = bench.sim.open_pr(REPO, "b", {"b.py": "1\n"})
    assert bench.review(first.number, config=config).outcome is Outcome.REVIEWED
    bench.sim.push(REPO, first.number, {"a.py": "2\n"})
    again = bench.review(first.number, config=config)
    assert again.outcome is Outcome.DEFERRED_BUDGET
    assert again.detail.startswith("money_per_pr_per_day: ")
    assert bench.review(other.number, config=config).outcome is Outcome.REVIEWED


def test_the_monthly_total_counts_every_repository_and_reopens_next_month(bench: Bench) -> None:
    now = datetime.now(UTC)
    other = UsageRecord(now, "octo/other", 7, "b" * 40, None, "review-pr", _cost("0.99"))
    append_usage(bench.ledger(), other)
    config = _config(bench, {"monthly_total_usd": "1", "output_tokens_per_leg": 1000})
    pr = bench.sim.open_pr(REPO, "a", {"a.py": "1\n"})
    report = bench.review(pr.number, config=config)
    assert report.outcome is Outcome.DEFERRED_BUDGET
    assert report.detail.startswith("money_monthly_total: $0.99+$0.0")
    [(_, _, marker)] = bench.ledger().list_deferred(REPO)
    assert marker.reopens_at is not None
    assert (marker.reopens_at.day, marker.reopens_at.hour) == (1, 0)
    assert marker.reopens_at > now and marker.reopens_at - now <= timedelta(days=31)


def _cost(value: str | None) -> LegUsage:
    if value is None:
        return LegUsage("stub-claude", None, None, CostSource.UNKNOWN, "usage_not_reported")
    return LegUsage("stub-claude", None, Decimal(value), CostSource.REPORTED)


def test_a_leg_of_unknown_cost_defers_unless_it_is_given_a_value(bench: Bench) -> None:
    now = datetime.now(UTC)
    pr = bench.sim.open_pr(REPO, "a", {"a.py": "1\n"})
    unknown = UsageRecord(now, REPO, 99, "c" * 40, None, "review-pr", _cost(None))
    append_usage(bench.ledger(), unknown)
    money: dict[str, Any] = {"per_repo_per_day_usd": "10", "output_tokens_per_leg": 1000}
    held = bench.review(pr.number, config=_config(bench, money))
    assert held.outcome is Outcome.DEFERRED_BUDGET
    assert held.detail.startswith("money_per_repo_per_day: $0.00+1 unknown+$0.0")
    [note] = _deferred_notes(bench)
    assert "1 leg(s) of unknown cost cannot be decided" in note["body"]
    assert "money_budgets.unknown_leg_usd is unset" in note["body"]
    # Counted at a value: $9.99 leaves no room, $1 does.
    dear = _config(bench, {**money, "unknown_leg_usd": "9.99"})
    assert bench.review(pr.number, config=dear).outcome is Outcome.DEFERRED_BUDGET
    cheap = _config(bench, {**money, "unknown_leg_usd": "1"})
    assert bench.review(pr.number, config=cheap).outcome is Outcome.REVIEWED


def test_a_model_without_a_price_is_deferred_loudly_never_passed(bench: Bench) -> None:
    pr = bench.sim.open_pr(REPO, "a", {"a.py": "1\n"})
    config = _config(bench, {"per_pr_per_day_usd": "100"}, prices={})
    report = bench.review(pr.number, config=config)
    assert report.outcome is Outcome.DEFERRED_BUDGET
    assert report.detail == "money_per_pr_per_day: $0.00+no price/$100.00"
    [note] = _deferred_notes(bench)
    assert "model 'stub-claude' has no price in prices" in note["body"]
    # Without a money budget the same model is reviewed: an unpriced model costs nothing
    # to gate only when no cap asks.
    assert bench.review(pr.number, config=_config(bench, {}, prices={})).outcome is (
        Outcome.REVIEWED
    )


def test_every_leg_of_a_chunked_round_is_in_the_estimate(bench: Bench) -> None:
    lines = "".join(f"value_{n} = '{'x' * 70}'\n" for n in range(20))
    files = {f"f{i}.py": lines for i in range(2)}  # ~650 tokens each: a chunk per file
    pr = bench.sim.open_pr(REPO, "big", files)
    sizing = {"max_prompt_tokens": 1500, "max_chunks": 4}
    # One leg's estimate ($0.015 of output, ~1,200 prompt tokens at $3/M) fits; two do not.
    money = {"per_pr_per_day_usd": "0.025", "output_tokens_per_leg": 1000}
    report = bench.review(pr.number, config=_config(bench, money, size_policy=sizing))
    assert report.outcome is Outcome.DEFERRED_BUDGET
    [note] = _deferred_notes(bench)
    assert "(2 leg(s), 1000 output tokens each)" in note["body"]


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("money_budgets:\n  per_repo_per_day_usd: -1\n", "money_budgets.per_repo_per_day_usd"),
        ("money_budgets:\n  monthly_total_usd: .nan\n", "money_budgets.monthly_total_usd"),
        ("money_budgets:\n  per_pr_per_day: 5\n", "money_budgets.per_pr_per_day"),
        ("money_budgets:\n  output_tokens_per_leg: -5\n", "money_budgets.output_tokens_per_leg"),
    ],
    ids=["negative", "nan", "unknown-key", "negative-allowance"],
)
def test_a_bad_money_budget_is_refused_with_its_key(tmp_path: Path, text: str, key: str) -> None:
    path = tmp_path / "kdev.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(str(path))
    assert caught.value.reason == "invalid_config" and key in caught.value.message


def test_the_documented_money_budgets_block_is_valid() -> None:
    text = (Path(__file__).parents[2] / "docs" / "reviewers.md").read_text()
    block = text.split("### Money budgets\n\n```yaml\n", 1)[1].split("```", 1)[0]
    config = KdevConfig.model_validate(yaml.safe_load(block))
    money = config.money_budgets
    assert (money.per_repo_per_day_usd, money.unknown_leg_usd) == (Decimal(20), Decimal("0.5"))
    assert money.any_cap and not KdevConfig().money_budgets.any_cap


def test_every_leg_of_a_roster_round_is_in_the_estimate(tmp_path: Path) -> None:
    """At $10,000 per million input tokens and no output allowance a cent is one token,
    so the deferral's estimate is the planned prompts' tokens, which must cover every
    prompt the round then runs."""
    files = {
        "app.py": "x\n",
        "AGENT-REVIEWERS.md": ROOT_ROSTER,
        "pkg/AGENT-REVIEWERS.md": PKG_ROSTER,
    }
    with open_bench(tmp_path, files) as bench:
        pr = bench.sim.open_pr(REPO, "big", {"pkg/big.py": BIG, "pkg/small.py": SMALL}).number
        roster = roster_config(bench, prices={"stub": {"input": "10000", "output": "1"}})
        money = {"per_pr_per_day_usd": "0", "output_tokens_per_leg": 0}
        held = bench.review(
            pr, config=roster.model_copy(update={"money_budgets": MoneyBudgets(**money)})
        )
        assert held.outcome is Outcome.DEFERRED_BUDGET
        estimated = held.detail.split("+$", 1)[1].split("/", 1)[0]
        planned = int(Decimal(estimated) * 100)
        [note] = _deferred_notes(bench)
        where = tmp_path / "prompts"
        where.mkdir()
        ran = bench.review(pr, config=roster, environ={"KDEV_STUB_PROMPTS": str(where)})
        assert ran.outcome is Outcome.REVIEWED
        prompts = roster_prompts(where)
        assert len(prompts) > 2  # chunks of both reviewers
        assert f"({len(prompts)} leg(s), 0 output tokens each)" in note["body"]
        real = sum(estimate_tokens(prompt) for prompt in prompts)
        assert real <= planned <= real * 1.1


def test_a_round_still_running_counts_as_unknown_until_it_must_have_ended(bench: Bench) -> None:
    """Another round's leg has started and has no usage line yet (it is running): its
    cost is unknown, so the round is deferred until it must have ended, not silently
    started beside it; once its usage is recorded the spend is known again."""
    pr = bench.sim.open_pr(REPO, "a", {"a.py": "1\n"})
    bench.ledger().record_leg_start(REPO, 99, "d" * 40)
    money: dict[str, Any] = {"per_repo_per_day_usd": "10", "output_tokens_per_leg": 1000}
    before = datetime.now(UTC)
    config = _config(bench, money, reviewer={**CLAUDE, "timeout_seconds": 30})
    held = bench.review(pr.number, config=config)
    assert held.outcome is Outcome.DEFERRED_BUDGET
    assert held.detail.startswith("money_per_repo_per_day: $0.00+1 unknown+$0.0")
    [(_, _, marker)] = bench.ledger().list_deferred(REPO)
    # The reviewer times out after 30 s; a deferral waits at least 60 s.
    assert marker.reopens_at is not None
    assert before + timedelta(seconds=59) <= marker.reopens_at <= before + timedelta(minutes=2)
    ended = UsageRecord(datetime.now(UTC), REPO, 99, "d" * 40, None, "review-pr", _cost("0.10"))
    append_usage(bench.ledger(), ended)
    assert bench.review(pr.number, config=config).outcome is Outcome.REVIEWED
