"""durability: head SHA in poll claim keys, run attempts, retry queue

- ``poll_claims.head_sha`` joins the claim's unique key (issue 10 item 2): existing
  claims get ``""``, so an event claimed before the upgrade is still recognised as
  claimed by its (pr, time) only if it fires again with the empty SHA, i.e. never; its
  boundary second may fire once more after the upgrade (actions are idempotent).
- ``schedule_runs.attempt`` / ``fire_id``: one fire, several attempts (issue 11).
- ``poll_states.retry_events``: events re-offered after a lost or unlaunched run.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import engine.store.models  # noqa: F401
from engine.migrations import ops

revision: str = "0005"
down_revision: str | None = "0004"


def _key_the_claims_by_head_sha() -> None:
    with op.batch_alter_table("poll_claims", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("head_sha", sa.String(length=64), server_default="", nullable=False)
        )
        batch_op.drop_constraint("uq_poll_claims_event", type_="unique")
        batch_op.create_unique_constraint(
            "uq_poll_claims_event", ["schedule_id", "pr_number", "occurred_at", "head_sha"]
        )


def _key_the_claims_by_time_again() -> None:
    op.execute(
        "DELETE FROM poll_claims WHERE id NOT IN (SELECT MIN(id) FROM poll_claims "
        "GROUP BY schedule_id, pr_number, occurred_at)"
    )
    with op.batch_alter_table("poll_claims", schema=None) as batch_op:
        batch_op.drop_constraint("uq_poll_claims_event", type_="unique")
        batch_op.create_unique_constraint(
            "uq_poll_claims_event", ["schedule_id", "pr_number", "occurred_at"]
        )
        batch_op.drop_column("head_sha")


upgrade, downgrade = ops.reversible(
    ops.Step(_key_the_claims_by_head_sha, _key_the_claims_by_time_again),
    ops.alter(
        "schedule_runs",
        sa.Column("attempt", sa.Integer(), server_default="1", nullable=False),
        sa.Column("fire_id", sa.Integer(), nullable=True),
    ),
    ops.alter(
        "poll_states",
        sa.Column("retry_events", sa.JSON(), server_default=sa.text("'[]'"), nullable=False),
    ),
)
