"""poll state and claims"""

from __future__ import annotations

import sqlalchemy as sa

import engine.store.models  # noqa: F401
from engine.migrations import ops

revision: str = "0003"
down_revision: str | None = "0002"


upgrade, downgrade = ops.reversible(
    ops.table(
        "poll_states",
        sa.Column("schedule_id", sa.Integer(), nullable=False),
        sa.Column("cursor_at", engine.store.models.UTCDateTime(timezone=True), nullable=True),
        sa.Column("held_batch", sa.JSON(), nullable=False),
        sa.Column("refusals", sa.JSON(), nullable=False),
        sa.Column("last_poll_at", engine.store.models.UTCDateTime(timezone=True), nullable=True),
        sa.Column(
            "last_healthy_poll_at", engine.store.models.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column("last_http_status", sa.Integer(), nullable=True),
        sa.Column("last_error_reason", sa.String(length=64), nullable=True),
        sa.Column("last_error_message", sa.Text(), nullable=True),
        sa.Column(
            "rate_limit_reset_at", engine.store.models.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column("consecutive_auth_failures", sa.Integer(), nullable=False),
        sa.Column("consecutive_errors", sa.Integer(), nullable=False),
        sa.Column("poller_consecutive_cap_no_dispatch", sa.Integer(), nullable=False),
        sa.Column("polls", sa.Integer(), nullable=False),
        sa.Column("not_modified", sa.Integer(), nullable=False),
        sa.Column("events_seen", sa.Integer(), nullable=False),
        sa.Column("dispatched", sa.Integer(), nullable=False),
        sa.Column("excluded", sa.Integer(), nullable=False),
        sa.Column("held", sa.Integer(), nullable=False),
        sa.Column("updated_at", engine.store.models.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["schedule_id"], ["schedules.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("schedule_id"),
    ),
    ops.table(
        "poll_claims",
        ops.serial_id(),
        sa.Column("schedule_id", sa.Integer(), nullable=False),
        sa.Column("pr_number", sa.Integer(), nullable=False),
        sa.Column("occurred_at", engine.store.models.UTCDateTime(timezone=True), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=True),
        sa.Column("created_at", engine.store.models.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["schedule_runs.id"], ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["schedule_id"], ["schedules.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("schedule_id", "pr_number", "occurred_at", name="uq_poll_claims_event"),
    ),
)
