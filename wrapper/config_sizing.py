"""``size_policy`` in KDEV_CONFIG: how many prompt tokens a reviewer's leg may take and
how many chunks a round may have (issue 28; docs/reviewers.md "Size policy"; D89).

``max_prompt_tokens`` holds for every reviewer; ``models.<model>`` wins for that model.
Unset, a reviewer's limit is its model family's default
(:func:`wrapper.review.sizing.limit_for`). Kept apart from :mod:`wrapper.config` (which
imports it) so neither grows past its cap; it never imports that module back.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, StrictInt, field_validator

from wrapper.review.sizing import Limit, limit_for

# Below this a leg has no room for the PR's context and a hunk.
MIN_PROMPT_TOKENS = 1_000


class SizePolicy(BaseModel):
    """``size_policy``: the prompt limit (global and per model) and the chunk maximum."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    max_prompt_tokens: StrictInt | None = Field(None, ge=MIN_PROMPT_TOKENS)
    models: dict[str, StrictInt] = Field(default_factory=dict)
    # Above this many chunks the round is deferred as diff_too_large (issue 28).
    max_chunks: StrictInt = Field(8, ge=1, le=100)

    def limit(self, model: str) -> Limit:
        """The limit of a reviewer on ``model`` under this policy."""
        for name, tokens in self.models.items():
            if name.strip().lower() == model.strip().lower():
                return Limit(tokens, f"size_policy.models.{name}")
        return limit_for(model, self.max_prompt_tokens)

    @field_validator("models")
    @classmethod
    def _models(cls, value: dict[str, int]) -> dict[str, int]:
        for name, tokens in value.items():
            if tokens < MIN_PROMPT_TOKENS:
                raise ValueError(f"models.{name}: {tokens} is below {MIN_PROMPT_TOKENS} tokens")
        return value
