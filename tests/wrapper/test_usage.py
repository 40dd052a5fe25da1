"""Usage per leg (issue 31, D103/D104): each documented shape parsed, every malformed one
refused whole, prices applied in Decimal, a reported cost winning over a computed one."""

from __future__ import annotations

import json
import os
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from tests.llmkit import chat_completion, fake_upstream, openai_usage
from wrapper.config import CommandReviewer, KdevConfig, OpenAIReviewer
from wrapper.config_prices import ModelPrice
from wrapper.review.reviewer import run_reviewer
from wrapper.stub_reviewer import STUB_USAGE, enveloped
from wrapper.usage import (
    NO_PRICE,
    NO_USAGE_FORMAT,
    NOT_REPORTED,
    CostSource,
    LegUsage,
    Reported,
    Tokens,
    UsageMeter,
    describe,
    priced,
    summary,
)
from wrapper.usage_shapes import FORMATS, MALFORMED, UNREADABLE, command_output
from wrapper.usage_shapes import openai_usage as parse_openai

STUB = [sys.executable, "-P", "-m", "wrapper.stub_reviewer"]
ROOT = Path(__file__).resolve().parents[2]
PRICES = {"M": ModelPrice(input=Decimal(3), output=Decimal(15), cached=Decimal("0.3"))}
STUB_PROMPT = sum(int(STUB_USAGE[k]) for k in ("input", "cache_read", "cache_write"))


def test_the_openai_usage_block_gives_prompt_answer_and_cached_tokens() -> None:
    got = parse_openai({"usage": openai_usage(1200, 300, cached=200)})
    assert got == Reported(Tokens(1200, 300, 200))
    assert parse_openai({"usage": openai_usage(10, 2)}) == Reported(Tokens(10, 2, None))


@pytest.mark.parametrize(
    "usage",
    [
        "12",
        {"prompt_tokens": -1, "completion_tokens": 2},
        {"prompt_tokens": 1.5, "completion_tokens": 2},
        {"prompt_tokens": True, "completion_tokens": 2},
        {"prompt_tokens": 10},
        {
            "prompt_tokens": 10,
            "completion_tokens": 2,
            "prompt_tokens_details": {"cached_tokens": 11},
        },
        {"prompt_tokens": 10, "completion_tokens": 2, "prompt_tokens_details": []},
        {
            "prompt_tokens": 10,
            "completion_tokens": 2,
            "prompt_tokens_details": {"cached_tokens": "1"},
        },
    ],
)
def test_a_malformed_openai_usage_is_unknown_never_a_number(usage: Any) -> None:
    assert parse_openai({"usage": usage}) == Reported(None, None, MALFORMED)


def test_an_answer_without_usage_is_not_reported() -> None:
    assert parse_openai({"choices": []}) == Reported(None, None, NOT_REPORTED)
    assert parse_openai({"usage": None}) == Reported(None, None, NOT_REPORTED)


def test_claude_json_gives_the_review_its_tokens_and_its_exact_reported_cost() -> None:
    text, got = command_output("claude-json", enveloped("claude-json", "Fine.\nVERDICT: APPROVE"))
    assert text == "Fine.\nVERDICT: APPROVE"
    assert got == Reported(Tokens(STUB_PROMPT, 700, 9000), Decimal("0.0417325"))


@pytest.mark.parametrize("usage_format", ["codex-jsonl", "gemini-json"])
def test_codex_and_gemini_give_the_review_and_their_tokens(usage_format: str) -> None:
    text, got = command_output(usage_format, enveloped(usage_format, "VERDICT: APPROVE"))
    assert text == "VERDICT: APPROVE"
    assert got == Reported(Tokens(STUB_PROMPT, 700, 9000))


def _claude(**fields: Any) -> str:
    return json.dumps({"type": "result", "result": "VERDICT: APPROVE", **fields})


@pytest.mark.parametrize(
    ("stdout", "reason"),
    [
        (_claude(total_cost_usd="0.1", usage={"input_tokens": 1, "output_tokens": 1}), MALFORMED),
        (_claude(total_cost_usd=-1, usage={"input_tokens": 1, "output_tokens": 1}), MALFORMED),
        (_claude(total_cost_usd=0.1, usage={"input_tokens": 1}), MALFORMED),
        (_claude(total_cost_usd=0.1, usage=[1]), MALFORMED),
        (_claude(), NOT_REPORTED),
        ('{"type": "result", "total_cost_usd": 1}', UNREADABLE),
        ("Fine.\nVERDICT: APPROVE", UNREADABLE),
        ('{"response": "VERDICT: APPROVE", "stats": {"models": {}}}', MALFORMED),
    ],
)
def test_a_claude_or_gemini_envelope_not_as_documented_records_unknown(
    stdout: str, reason: str
) -> None:
    usage_format = "gemini-json" if "response" in stdout else "claude-json"
    text, got = command_output(usage_format, stdout)
    assert got == Reported(None, None, reason)
    # The review is what the envelope holds, or the whole output when there is none.
    assert text == ("VERDICT: APPROVE" if reason != UNREADABLE else stdout)


def test_a_codex_stream_with_a_bad_turn_or_a_torn_line_records_unknown() -> None:
    good = enveloped("codex-jsonl", "VERDICT: APPROVE").splitlines()
    bad_turn = [*good[:-1], json.dumps({"type": "turn.completed", "usage": {"input_tokens": 1}})]
    assert command_output("codex-jsonl", "\n".join(bad_turn))[1].reason == MALFORMED
    torn = "\n".join([*good, '{"type": "turn.comp'])
    assert command_output("codex-jsonl", torn) == (torn, Reported(None, None, UNREADABLE))
    no_turn = "\n".join(good[:-1])
    assert command_output("codex-jsonl", no_turn) == (
        "VERDICT: APPROVE",
        Reported(None, None, NOT_REPORTED),
    )


def test_a_prose_reviewer_reports_nothing_and_its_output_is_untouched() -> None:
    assert FORMATS[0] == "none"
    assert command_output("none", '{"result": "x"}') == (
        '{"result": "x"}',
        Reported(None, None, NO_USAGE_FORMAT),
    )


def test_a_reported_cost_wins_over_the_computed_one_and_says_so() -> None:
    tokens = Tokens(400_000, 50_000, 100_000)
    computed = priced("m", Reported(tokens), PRICES)
    assert computed == LegUsage("m", tokens, Decimal("1.68"), CostSource.COMPUTED)
    reported = priced("m", Reported(tokens, Decimal("0.5")), PRICES)
    assert (reported.cost, reported.source) == (Decimal("0.5"), CostSource.REPORTED)
    assert priced("other", Reported(tokens), PRICES) == LegUsage(
        "other", tokens, None, CostSource.UNKNOWN, NO_PRICE
    )
    unknown = priced("m", Reported(None, None, MALFORMED), PRICES)
    assert (unknown.cost, unknown.source, unknown.reason) == (None, CostSource.UNKNOWN, MALFORMED)


def test_cached_tokens_without_a_cached_price_are_charged_as_input() -> None:
    prices = {"m": ModelPrice(input=Decimal(2), output=Decimal(0))}
    assert priced("m", Reported(Tokens(1_000_000, 0, 500_000)), prices).cost == Decimal(2)


def test_prices_in_kdev_yaml_are_exact_decimals_and_refuse_what_is_not_money() -> None:
    config = KdevConfig.model_validate({"prices": {"m": {"input": 0.1, "output": 0.2}}})
    price = config.prices["m"]
    assert price.input == Decimal("0.1") and price.cached is None
    assert priced("m", Reported(Tokens(3_000_000, 0)), config.prices).cost == Decimal("0.3")
    for bad in ({"input": -1, "output": 1}, {"input": "nan", "output": 1}, {"input": 1}):
        with pytest.raises(ValidationError):
            KdevConfig.model_validate({"prices": {"m": bad}})
    with pytest.raises(ValidationError):
        KdevConfig.model_validate({"reviewer": {"argv": ["x"], "usage": "jsonish"}})


def test_the_ledger_form_round_trips_and_refuses_a_cost_that_is_not_its_source() -> None:
    usage = LegUsage("m", Tokens(5, 6, 1), Decimal("0.000123"), CostSource.COMPUTED)
    assert LegUsage.from_json(json.loads(json.dumps(usage.to_json()))) == usage
    unknown = LegUsage("m", None, None, CostSource.UNKNOWN, NOT_REPORTED)
    assert LegUsage.from_json(unknown.to_json()) == unknown
    for bad in (
        {**usage.to_json(), "cost": None},
        {**unknown.to_json(), "cost": "1"},
        {**usage.to_json(), "cost": 0.1},
        {**usage.to_json(), "cost": "-1"},
        {**usage.to_json(), "tokens_in": "5"},
    ):
        with pytest.raises(ValueError):
            LegUsage.from_json(bad)


def test_the_header_sums_the_legs_and_says_unknown_never_zero() -> None:
    legs = [
        LegUsage("m", Tokens(10, 2, 1), Decimal("0.50"), CostSource.REPORTED),
        LegUsage("m", Tokens(5, 1), Decimal("0.25"), CostSource.COMPUTED),
        LegUsage("stub", None, None, CostSource.UNKNOWN, NO_USAGE_FORMAT),
    ]
    assert summary(legs) == (
        "3 legs: 15 in (1 cached), 3 out; tokens of 1 unknown; $0.75 (1 reported, 1 computed) "
        f"and cost of 1 unknown ({NO_USAGE_FORMAT})"
    )
    assert summary(legs[2:]) == f"1 leg: tokens of 1 unknown; cost of 1 unknown ({NO_USAGE_FORMAT})"
    assert summary([]) == "" and "$0" not in describe(legs[2])
    assert describe(legs[0]) == "m: 10 in (1 cached), 2 out; $0.5 (reported)"


def test_the_openai_backend_meters_its_answers_usage(tmp_path: Path) -> None:
    meter = UsageMeter()
    with fake_upstream() as upstream:
        upstream.answer = chat_completion("VERDICT: APPROVE", openai_usage(1200, 300, 200))
        reviewer = OpenAIReviewer(backend="openai", base_url=upstream.url, model="m")
        result = run_reviewer(reviewer, "p", tmp_path, {"OPENAI_API_KEY": "k" * 20}, meter=meter)
        upstream.answer = chat_completion("VERDICT: APPROVE", {"prompt_tokens": "many"})
        run_reviewer(reviewer, "p", tmp_path, {"OPENAI_API_KEY": "k" * 20}, meter=meter)
    assert result.verdict == "APPROVE"
    assert meter.take() == [
        ("m", Reported(Tokens(1200, 300, 200))),
        ("m", Reported(None, None, MALFORMED)),
    ]
    assert meter.take() == []


@pytest.mark.parametrize("usage_format", FORMATS)
def test_a_command_reviewer_is_read_in_its_usage_format(tmp_path: Path, usage_format: str) -> None:
    """The stub prints each CLI's envelope; kdev finds the verdict inside it."""
    meter = UsageMeter()
    reviewer = CommandReviewer(argv=STUB, model="stub", usage=usage_format)  # type: ignore[arg-type]
    environ = {**os.environ, "PYTHONPATH": str(ROOT), "KDEV_STUB_USAGE": usage_format}
    result = run_reviewer(
        reviewer, "x = 1\n", tmp_path, environ,
        extra_env_names=["PYTHONPATH", "KDEV_STUB_USAGE"], meter=meter,
    )  # fmt: skip
    assert result.verdict == "APPROVE" and result.body.startswith("Stub review")
    [(model, reported)] = meter.take()
    assert model == "stub"
    if usage_format == "none":
        assert reported == Reported(None, None, NO_USAGE_FORMAT)
    else:
        assert reported.tokens == Tokens(STUB_PROMPT, 700, 9000)
        assert reported.cost == (Decimal("0.0417325") if usage_format == "claude-json" else None)


def test_the_verdict_header_carries_the_usage_line_and_files_without_it_still_parse() -> None:
    from datetime import UTC, datetime

    from wrapper.errors import LedgerError
    from wrapper.ledger.codec import parse_verdict, render_verdict
    from wrapper.ledger.records import VerdictRecord

    record = VerdictRecord(
        verdict="APPROVE", pr_url="", head_sha="a" * 40, patch_id="b" * 40, base="main",
        reviewed_at=datetime(2026, 1, 2, tzinfo=UTC), model="m", body="USAGE: x\nVERDICT: APPROVE",
        pr=3, usage="1 leg: 5 in (0 cached), 1 out; $0.01 (1 computed)",
    )  # fmt: skip
    text = render_verdict(record)
    assert "REVIEWER_MODEL: m\nUSAGE: 1 leg: 5 in" in text
    assert parse_verdict(text) == record
    plain = render_verdict(VerdictRecord(**{**record.__dict__, "usage": ""}))
    assert "\nUSAGE:" not in plain.split("\n---\n")[0] and parse_verdict(plain).usage == ""
    with pytest.raises(LedgerError):
        render_verdict(VerdictRecord(**{**record.__dict__, "usage": "two\nlines"}))
