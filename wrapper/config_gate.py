"""kdev.yaml ``merge_gate`` (issue 27, D85): the commit status kdev sets on every head it
decides, so branch protection can require it. Off unless ``enabled``; a repository of
``repositories`` may carry its own ``merge_gate`` block, which replaces the global one
for that repository (:func:`wrapper.review.merge_gate.gate_settings`).

Kept apart from :mod:`wrapper.config` (which holds only the field lines) so that module
stays within its size; this module imports nothing of kdev's.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, StrictBool, field_validator

DEFAULT_CONTEXT = "kdev/review"
MAX_CONTEXT_CHARS = 100


class MergeGateSettings(BaseModel):
    """``merge_gate``: ``enabled`` (default false) and the status ``context`` it sets."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    enabled: StrictBool = False
    context: str = DEFAULT_CONTEXT

    @field_validator("context")
    @classmethod
    def _context(cls, value: str) -> str:
        if not value or value != value.strip() or len(value) > MAX_CONTEXT_CHARS:
            raise ValueError(
                f"a status context is 1 to {MAX_CONTEXT_CHARS} characters without leading "
                "or trailing spaces"
            )
        if not value.isprintable():
            raise ValueError("a status context has no control characters")
        return value
