"""retry policy per schedule

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30 23:00:00.000000

- ``schedules.retry_max_attempts`` / ``retry_backoff_seconds`` (issue 15): a failed run
  is tried again as a new attempt of the same fire (engine.run.actions.execute_claim).
  Existing schedules get 1 attempt (no retry), as before the upgrade.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import engine.store.models  # noqa: F401

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("schedules", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("retry_max_attempts", sa.Integer(), server_default="1", nullable=False)
        )
        batch_op.add_column(
            sa.Column("retry_backoff_seconds", sa.Integer(), server_default="30", nullable=False)
        )


def downgrade() -> None:
    with op.batch_alter_table("schedules", schema=None) as batch_op:
        batch_op.drop_column("retry_backoff_seconds")
        batch_op.drop_column("retry_max_attempts")
