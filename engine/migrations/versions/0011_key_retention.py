"""retention of trigger keys and schedule removals

- ``poll_states.trigger_keys_horizon`` (issue 19): the retention's forward-only horizon
  of a schedule's trigger keys. An item (a comment, a pull request) created before it is
  never fired again, so a key of such an item may be pruned (engine.store.keyretention).
  NULL (every existing schedule): nothing pruned yet, every item may fire.
- ``trigger_keys.created_at`` gets an index: the retention selects keys by age.
- ``schedule_removals.removed_at``: when the schedule was removed, so a removal every
  engine has long synced can be pruned. Existing rows are stamped with the upgrade time.
"""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

import engine.store.models  # noqa: F401
from engine.migrations import ops

revision: str = "0011"
down_revision: str | None = "0010"


def _stamp_the_removals() -> None:
    with op.batch_alter_table("schedule_removals", schema=None) as batch_op:
        batch_op.add_column(sa.Column("removed_at", sa.DateTime(timezone=True), nullable=True))
    now = datetime.now(UTC)
    if op.get_bind().dialect.name == "sqlite":
        now = now.replace(tzinfo=None)  # engine.store.models.UTCDateTime stores naive UTC
    op.execute(
        sa.text("UPDATE schedule_removals SET removed_at = :now").bindparams(
            sa.bindparam("now", now, type_=sa.DateTime(timezone=True))
        )
    )
    with op.batch_alter_table("schedule_removals", schema=None) as batch_op:
        batch_op.alter_column(
            "removed_at", existing_type=sa.DateTime(timezone=True), nullable=False
        )


def _drop_the_removal_stamps() -> None:
    with op.batch_alter_table("schedule_removals", schema=None) as batch_op:
        batch_op.drop_column("removed_at")


upgrade, downgrade = ops.reversible(
    ops.alter(
        "poll_states",
        sa.Column("trigger_keys_horizon", sa.DateTime(timezone=True), nullable=True),
    ),
    ops.alter("trigger_keys", indexes=[("ix_trigger_keys_created", ["created_at"])]),
    ops.Step(_stamp_the_removals, _drop_the_removal_stamps),
)
