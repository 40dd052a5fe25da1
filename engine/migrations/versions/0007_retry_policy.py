"""retry policy per schedule

- ``schedules.retry_max_attempts`` / ``retry_backoff_seconds`` (issue 15): a failed run
  is tried again as a new attempt of the same fire (engine.run.actions.execute_claim).
  Existing schedules get 1 attempt (no retry), as before the upgrade.
"""

from __future__ import annotations

import sqlalchemy as sa

import engine.store.models  # noqa: F401
from engine.migrations import ops

revision: str = "0007"
down_revision: str | None = "0006"


upgrade, downgrade = ops.reversible(
    ops.alter(
        "schedules",
        sa.Column("retry_max_attempts", sa.Integer(), server_default="1", nullable=False),
        sa.Column("retry_backoff_seconds", sa.Integer(), server_default="30", nullable=False),
    ),
)
