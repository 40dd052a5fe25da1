"""indexes for health by schedule name

- ``ix_schedule_runs_name_id`` (schedule_name, id) and ``ix_schedule_runs_name_started``
  (schedule_name, started_at) (issue 19): ``li schedule health``, the metrics sweep and
  ``li runs --schedule`` select a schedule's runs by name (the newest few, and those in
  the 24 h window). Without them every schedule scanned the whole ``schedule_runs`` table,
  so health cost schedules x runs.
"""

from __future__ import annotations

import engine.store.models  # noqa: F401
from engine.migrations import ops

revision: str = "0008"
down_revision: str | None = "0007"


upgrade, downgrade = ops.reversible(
    ops.alter(
        "schedule_runs",
        indexes=[
            ("ix_schedule_runs_name_id", ["schedule_name", "id"]),
            ("ix_schedule_runs_name_started", ["schedule_name", "started_at"]),
        ],
    ),
)
