"""mention triggers"""

from __future__ import annotations

import sqlalchemy as sa

import engine.store.models  # noqa: F401
from engine.migrations import ops

revision: str = "0004"
down_revision: str | None = "0003"


upgrade, downgrade = ops.reversible(
    ops.table(
        "trigger_keys",
        ops.serial_id(),
        sa.Column("schedule_id", sa.Integer(), nullable=False),
        sa.Column("dedupe_key", sa.String(length=300), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=True),
        sa.Column("created_at", engine.store.models.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["schedule_runs.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["schedule_id"], ["schedules.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("schedule_id", "dedupe_key", name="uq_trigger_keys_schedule_key"),
    ),
    ops.alter(
        "poll_states",
        sa.Column("pr_watermark", engine.store.models.UTCDateTime(timezone=True), nullable=True),
        sa.Column(
            "comments_watermark", engine.store.models.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column("open_prs", sa.JSON(), nullable=True),
    ),
)
