"""The prompt-token estimate, the per-family limits and ``size_policy`` (issue 28, D89)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from wrapper.config import KdevConfig, load_config
from wrapper.config_sizing import SizePolicy
from wrapper.errors import ConfigError
from wrapper.review.sizing import (
    DEFAULT_CAP,
    FAMILIES,
    UNKNOWN_LIMIT,
    estimate_span,
    estimate_tokens,
    family_of,
    limit_for,
)


def test_ascii_counts_a_token_per_two_and_a_half_chars() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("a" * 1000) == 400
    assert estimate_tokens("abcdef") == 3  # rounded up, never down


def test_non_ascii_counts_its_utf8_bytes_denser() -> None:
    # 100 CJK characters are 300 UTF-8 bytes: 300 / 1.2 = 250 tokens.
    assert estimate_tokens("日" * 100) == 250
    assert estimate_tokens("ab" + "é" * 6) == 11  # 2/2.5 + 12/1.2 = 10.8


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=300), start=st.integers(0, 300), end=st.integers(0, 300))
def test_a_span_costs_what_its_slice_costs(text: str, start: int, end: int) -> None:
    start, end = min(start, len(text)), min(end, len(text))
    assert estimate_span(text, start, end) == estimate_tokens(text[start:end])


@settings(max_examples=100, deadline=None)
@given(left=st.text(max_size=200), right=st.text(max_size=200))
def test_the_estimate_of_a_whole_covers_its_parts(left: str, right: str) -> None:
    whole = estimate_tokens(left + right)
    assert estimate_tokens(left) + estimate_tokens(right) - 1 <= whole
    assert whole <= estimate_tokens(left) + estimate_tokens(right)


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("gpt-4o-mini", "gpt-4o"),
        ("openai/gpt-4.1-mini", "gpt-4.1"),
        ("o3-mini", "o-series"),
        ("o1-mini-2024-09-12", "o1-mini"),
        ("gpt-5", "gpt-5"),
        ("claude-sonnet-4-5", "claude"),
        ("Gemini-2.5-pro", "gemini"),
    ],
)
def test_models_fall_in_their_family(model: str, family: str) -> None:
    found = family_of(model)
    assert found is not None and found.name == family
    limit = limit_for(model)
    assert limit.tokens == found.default_limit and family in limit.source


def test_each_default_is_at_most_half_the_window_and_the_cap() -> None:
    for family in FAMILIES:
        assert family.default_limit <= min(family.window // 2, DEFAULT_CAP), family.name
        assert family.source


def test_an_unknown_model_gets_the_unknown_limit_and_a_setting_wins() -> None:
    assert limit_for("command").tokens == UNKNOWN_LIMIT
    assert family_of("llama-3") is None
    assert limit_for("gpt-4o", 5_000).tokens == 5_000


def test_size_policy_global_and_per_model() -> None:
    config = KdevConfig.model_validate(
        {"size_policy": {"max_prompt_tokens": 20_000, "models": {"claude-opus-4": 150_000}}}
    )
    policy = config.size_policy
    assert policy.limit("gpt-4o").tokens == 20_000
    assert policy.limit("Claude-Opus-4").tokens == 150_000
    assert policy.limit("Claude-Opus-4").source == "size_policy.models.claude-opus-4"
    assert SizePolicy().limit("claude-opus-4").tokens == DEFAULT_CAP
    assert SizePolicy().max_chunks == 8


@pytest.mark.parametrize(
    "bad",
    [
        {"max_prompt_tokens": 10},
        {"models": {"gpt-4o": 10}},
        {"max_chunks": 0},
        {"max_prompt_tokens": "lots"},
        {"chunk_by": "file"},
    ],
)
def test_a_bad_size_policy_is_refused(bad: dict[str, object], tmp_path: Path) -> None:
    path = tmp_path / "kdev.yaml"
    path.write_text(yaml.safe_dump({"size_policy": bad}), encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(str(path))
    assert caught.value.reason == "invalid_config"
    assert "size_policy" in str(caught.value)
