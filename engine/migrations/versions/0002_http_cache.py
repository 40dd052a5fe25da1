"""http cache for conditional GitHub requests"""

from __future__ import annotations

import sqlalchemy as sa

import engine.store.models  # noqa: F401  (types used by the columns)
from engine.migrations import ops

revision: str = "0002"
down_revision: str | None = "0001"


upgrade, downgrade = ops.reversible(
    ops.table(
        "http_cache",
        sa.Column("key", sa.String(length=500), nullable=False),
        sa.Column("etag", sa.String(length=200), nullable=False),
        sa.Column("body", sa.JSON(), nullable=False),
        sa.Column("link_next", sa.Text(), nullable=True),
        sa.Column("fetched_at", engine.store.models.UTCDateTime(timezone=True), nullable=False),
        sa.Column("status", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("key"),
    ),
)
