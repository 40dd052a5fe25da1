"""kdev.yaml ``prices``: what each model's tokens cost, per million, in USD (issue 31,
docs/reviewers.md "Usage and cost", D104), and the ``usage`` formats a command reviewer's
output may be read in (:mod:`wrapper.usage_shapes`).

``prices.<model>``: ``input`` and ``output`` per million tokens, ``cached`` (optional)
per million prompt tokens read from a cache (unset: the ``input`` price). Decimal, so a
price is exactly what the file says; kdev never looks a price up on the network. Kept
apart from :mod:`wrapper.config` (which holds only the field lines); imports nothing of
kdev's but the usage formats.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# The formats wrapper.usage_shapes reads (its FORMATS).
UsageFormat = Literal["none", "claude-json", "codex-jsonl", "gemini-json"]


class ModelPrice(BaseModel):
    """``prices.<model>``: USD per million tokens."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    input: Decimal = Field(ge=0, allow_inf_nan=False)
    output: Decimal = Field(ge=0, allow_inf_nan=False)
    cached: Decimal | None = Field(None, ge=0, allow_inf_nan=False)
