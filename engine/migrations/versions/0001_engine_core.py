"""schedules, runs, engine instances"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.sql.elements import conv

import engine.store.models  # noqa: F401  (types used by the columns)
from engine.migrations import ops

revision: str = "0001"
down_revision: str | None = None


upgrade, downgrade = ops.reversible(
    ops.table(
        "engine_instances",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("started_at", engine.store.models.UTCDateTime(timezone=True), nullable=False),
        sa.Column("heartbeat_at", engine.store.models.UTCDateTime(timezone=True), nullable=False),
        sa.Column("stopped_at", engine.store.models.UTCDateTime(timezone=True), nullable=True),
        sa.Column("last_errors", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    ),
    ops.table(
        "schedules",
        ops.serial_id(),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("trigger_type", sa.String(length=20), nullable=False),
        sa.Column("cron_expr", sa.String(length=200), nullable=True),
        sa.Column("timezone", sa.String(length=64), nullable=True),
        sa.Column("interval_seconds", sa.Integer(), nullable=True),
        sa.Column("trigger_config", sa.JSON(), nullable=False),
        sa.Column("command", sa.String(length=200), nullable=False),
        sa.Column("args", sa.JSON(), nullable=False),
        sa.Column("cwd", sa.Text(), nullable=True),
        sa.Column("timeout_seconds", sa.Integer(), nullable=False),
        sa.Column("max_runs", sa.Integer(), nullable=True),
        sa.Column("run_count", sa.Integer(), nullable=False),
        sa.Column("env_passthrough", sa.JSON(), nullable=False),
        sa.Column("overlap", sa.String(length=10), nullable=False),
        sa.Column("managed_by", sa.String(length=200), nullable=True),
        sa.Column("next_fire_at", engine.store.models.UTCDateTime(timezone=True), nullable=True),
        sa.Column("last_fire_at", engine.store.models.UTCDateTime(timezone=True), nullable=True),
        sa.Column("lease_owner", sa.String(length=64), nullable=True),
        sa.Column("lease_until", engine.store.models.UTCDateTime(timezone=True), nullable=True),
        sa.Column("created_at", engine.store.models.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", engine.store.models.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
        indexes=[(conv("ix_schedules_next_fire_at"), ["next_fire_at"])],
    ),
    ops.table(
        "schedule_runs",
        ops.serial_id(),
        sa.Column("schedule_id", sa.Integer(), nullable=True),
        sa.Column("schedule_name", sa.String(length=100), nullable=False),
        sa.Column("trigger_context", sa.JSON(), nullable=False),
        sa.Column("argv", sa.JSON(), nullable=True),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("reason", sa.String(length=64), nullable=True),
        sa.Column("exit_code", sa.Integer(), nullable=True),
        sa.Column("pid", sa.Integer(), nullable=True),
        sa.Column("engine_id", sa.String(length=64), nullable=True),
        sa.Column("started_at", engine.store.models.UTCDateTime(timezone=True), nullable=False),
        sa.Column("finished_at", engine.store.models.UTCDateTime(timezone=True), nullable=True),
        sa.Column("stdout_tail", sa.Text(), nullable=False),
        sa.Column("stderr_tail", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["schedule_id"], ["schedules.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
        indexes=[
            ("ix_schedule_runs_schedule_started", ["schedule_id", "started_at"]),
            ("ix_schedule_runs_status", ["status"]),
        ],
    ),
)
