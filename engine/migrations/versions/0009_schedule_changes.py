"""schedule change counter for the incremental timer sync

- ``schedule_changes`` (one row, id 1): a counter bumped by every definitional schedule
  change (add, edit, enable/disable, remove, fire-now), not by fires (issue 19).
- ``schedules.version`` (indexed): the counter at the row's last such change.
- ``schedule_removals``: the counter value of each removal and the removed id.

An idle daemon sync reads the one counter row; a change reloads only the rows whose
version is newer than the one the daemon last saw (engine.store.changes).
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.sql.elements import conv

import engine.store.models  # noqa: F401
from engine.migrations import ops

revision: str = "0009"
down_revision: str | None = "0008"


upgrade, downgrade = ops.reversible(
    ops.table(
        "schedule_changes",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        rows=[{"id": 1, "version": 0}],
    ),
    ops.table(
        "schedule_removals",
        sa.Column("version", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("schedule_id", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("version"),
    ),
    ops.alter(
        "schedules",
        sa.Column("version", sa.BigInteger(), server_default="0", nullable=False),
        indexes=[(conv("ix_schedules_version"), ["version"])],
    ),
)
