"""poll decisions per event, pull request number on run rows

- ``poll_decisions``: what each github_poll pass decided for each event it saw
  (issue 13), bounded by retention (engine.poll.decisions).
- ``schedule_runs.pr_number`` (indexed with ``schedule_id``): the pull request of a
  github_poll fire; existing rows are filled from their trigger context.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import engine.store.models  # noqa: F401
from engine.migrations import ops

revision: str = "0006"
down_revision: str | None = "0005"


def _backfill_pr_numbers() -> None:
    """Fill ``pr_number`` of existing run rows from their trigger context."""
    bind = op.get_bind()
    runs = sa.table(
        "schedule_runs",
        sa.column("id", sa.Integer()),
        sa.column("trigger_context", sa.JSON()),
        sa.column("pr_number", sa.Integer()),
    )
    rows = bind.execute(sa.select(runs.c.id, runs.c.trigger_context)).all()
    updates = []
    for run_id, context in rows:
        number = context.get("pr_number") if isinstance(context, dict) else None
        if isinstance(number, int) and not isinstance(number, bool):
            updates.append({"rid": run_id, "pr": number})
    if updates:
        bind.execute(
            runs.update()
            .where(runs.c.id == sa.bindparam("rid"))
            .values(pr_number=sa.bindparam("pr")),
            updates,
        )


upgrade, downgrade = ops.reversible(
    ops.table(
        "poll_decisions",
        ops.serial_id(),
        sa.Column("schedule_id", sa.Integer(), nullable=False),
        sa.Column("pr_number", sa.Integer(), nullable=False),
        sa.Column("occurred_at", engine.store.models.UTCDateTime(), nullable=False),
        sa.Column("head_sha", sa.String(length=64), nullable=False),
        sa.Column("decision", sa.String(length=80), nullable=False),
        sa.Column("detail", sa.String(length=200), nullable=True),
        sa.Column("run_id", sa.Integer(), nullable=True),
        sa.Column("decided_at", engine.store.models.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["schedule_id"], ["schedules.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint(
            "schedule_id",
            "pr_number",
            "occurred_at",
            "head_sha",
            "decision",
            name="uq_poll_decisions_event",
        ),
        indexes=[
            ("ix_poll_decisions_schedule_pr", ["schedule_id", "pr_number"]),
            ("ix_poll_decisions_schedule_decided", ["schedule_id", "decided_at"]),
        ],
    ),
    ops.alter(
        "schedule_runs",
        sa.Column("pr_number", sa.Integer(), nullable=True),
        indexes=[("ix_schedule_runs_schedule_pr", ["schedule_id", "pr_number"])],
    ),
    ops.Step(_backfill_pr_numbers),
)
