"""``incremental`` in KDEV_CONFIG: how a round after a reviewed diff is run (issue 28,
docs/decisions.md D92).

``mode`` is ``full`` (the default: the whole current diff, with what changed since the
reviewed diff and the earlier findings' states), ``delta`` (only what changed and the
changed files' sections of the current diff; the verdict is *derived*: the earlier
rounds' standing findings plus the delta's) or ``off`` (every round as if it were the
first; findings are still never posted twice). Incremental rounds need ``review_post``
(the findings contract is what carries the report on earlier findings). The top-level
block holds for every repository; ``repositories.<OWNER/NAME>.incremental`` wins for
that one. ``kdev review-pr --force`` runs a full round whatever the mode.

Kept apart from :mod:`wrapper.config` (which imports it) so neither grows past its cap.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

IncrementalMode = Literal["off", "full", "delta"]


class IncrementalSettings(BaseModel):
    """``incremental``: ``mode`` full (default), delta or off."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    mode: IncrementalMode = "full"
