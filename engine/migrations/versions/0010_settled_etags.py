"""poll ETags are stored only when their pass settles

- Data only (issue 19). From this revision on, the ETags of a github_poll pass's listings
  (cache keys with ``;scope=schedule:``) are written in the transaction that settles the
  pass, so the engine no longer drops them at start. Entries written by an older engine
  may belong to a pass that died before it settled; they are deleted once here, which
  costs one full listing per schedule after the upgrade.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import engine.store.models  # noqa: F401

revision: str = "0010"
down_revision: str | None = "0009"


def upgrade() -> None:
    op.execute(sa.text("DELETE FROM http_cache WHERE key LIKE '%;scope=schedule:%'"))


def downgrade() -> None:
    # An older engine drops its poll ETags at every start: nothing to undo.
    pass
