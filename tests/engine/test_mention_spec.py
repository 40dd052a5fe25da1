"""The mention acceptance table of issue 17: bodies built from the CommonMark and GFM spec
examples with the handle inserted at several places, answers computed once from
cmark-gfm's HTML and stored (tests/gen_mention_spec_cases.py regenerates them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine.triggers import count_mentions, find_mention, pings
from wrapper.neutralise import neutralise

TABLE = json.loads(
    (Path(__file__).parents[1] / "data" / "mention_spec_cases.json").read_text(encoding="utf-8")
)
CASES: list[dict[str, Any]] = TABLE["cases"]
HANDLE: str = TABLE["handle"]


def _id(case: dict[str, Any]) -> str:
    return f"ex{case['example']}-{case['where']}"


def test_the_table_is_big_and_mixed() -> None:
    assert len(CASES) >= 150
    assert len({case["example"] for case in CASES}) >= 150
    counted = sum(case["mentions"] > 0 for case in CASES)
    assert 50 <= counted <= len(CASES) - 50  # both answers are well represented
    sections = {case["section"] for case in CASES}
    assert {"Tables (extension)", "Autolinks (extension)", "Raw HTML", "HTML blocks"} <= sections


@pytest.mark.parametrize("case", CASES, ids=[_id(case) for case in CASES])
def test_the_detector_agrees_with_cmark_gfm(case: dict[str, Any]) -> None:
    body = case["body"]
    assert count_mentions(body, HANDLE) == case["mentions"]
    assert (find_mention(body, HANDLE) is not None) is (case["mentions"] > 0)


@pytest.mark.parametrize("case", CASES[::4], ids=[_id(case) for case in CASES[::4]])
def test_no_mention_survives_neutralising_a_spec_body(case: dict[str, Any]) -> None:
    out = neutralise(case["body"], HANDLE)
    assert count_mentions(out, HANDLE) == 0 and pings(out) == []
    # Every mention GitHub links is neutralised (quotes too, D69), nothing else changes.
    assert (out == case["body"]) is (pings(case["body"]) == [])
    assert case["mentions"] == 0 or out != case["body"]
