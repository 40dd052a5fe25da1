"""kdev.yaml ``money_budgets``: caps on what reviews cost, in USD (issue 31, D106), beside
the leg budgets (``budgets``, D9).

Each cap is optional (unset: no cap) and a ``Decimal``, so a cap is exactly what the
file says:

- ``per_repo_per_day_usd``: every leg of one repository in one UTC day;
- ``per_pr_per_day_usd``: the legs of one PR in one UTC day;
- ``monthly_total_usd``: every leg of every repository in one calendar month (UTC).

A round starts only when the spend already recorded in the window (``usage.jsonl``) plus
the round's estimate fits every cap (:mod:`wrapper.review.money_budget`).
``output_tokens_per_leg`` is the output allowance each leg's estimate adds at the
model's output price; ``unknown_leg_usd`` is what a leg of unknown cost counts (unset:
a window holding one cannot be decided, and the round is deferred). Kept apart from
:mod:`wrapper.config`, which holds only the field line.
"""

from __future__ import annotations

from decimal import Decimal

from pydantic import BaseModel, ConfigDict, Field, StrictInt

# Why 8,192: a reviewer's answer is a verdict and findings, rarely past 2,000 tokens, but
# a reasoning model bills its hidden reasoning as output too (D106).
DEFAULT_OUTPUT_TOKENS_PER_LEG = 8192


class MoneyBudgets(BaseModel):
    """``money_budgets`` of kdev.yaml (every cap unset: no money budget at all)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    per_repo_per_day_usd: Decimal | None = Field(None, ge=0, allow_inf_nan=False)
    per_pr_per_day_usd: Decimal | None = Field(None, ge=0, allow_inf_nan=False)
    monthly_total_usd: Decimal | None = Field(None, ge=0, allow_inf_nan=False)
    output_tokens_per_leg: StrictInt = Field(DEFAULT_OUTPUT_TOKENS_PER_LEG, ge=0)
    unknown_leg_usd: Decimal | None = Field(None, ge=0, allow_inf_nan=False)

    @property
    def any_cap(self) -> bool:
        """Whether any money budget is set."""
        caps = (self.per_repo_per_day_usd, self.per_pr_per_day_usd, self.monthly_total_usd)
        return any(cap is not None for cap in caps)
