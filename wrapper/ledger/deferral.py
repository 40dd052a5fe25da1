"""When a deferral reopens (issue 10 item 8): every deferral carries a time, so
``kdev pr-sweep`` retries it and none becomes a silent drop.

- A daily budget (``daily_legs_per_repo``, ``daily_rounds_per_pr``) reopens when enough
  legs have left the trailing 24 h window (:func:`wrapper.review.budget.decide_budget`); a
  limit of 0 is re-checked every 24 h (the configuration may have changed), so it is
  retried, deferred again and notified again once a day rather than dropped.
- The concurrency cap (``max_concurrent_legs_per_repo``) reopens when the running legs
  end. A leg ends at the latest when its reviewer's timeout passes, so the deferral
  reopens ``timeout_seconds`` after it was written (at least :data:`MIN_CAP_WAIT`).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from wrapper.config import KdevConfig

MIN_CAP_WAIT = timedelta(seconds=60)
NO_REVIEWER_CAP_WAIT = timedelta(minutes=10)


def cap_reopens_at(config: KdevConfig, now: datetime) -> datetime:
    """When a deferral for the concurrency cap, written at ``now``, reopens."""
    reviewer = config.reviewer
    wait = NO_REVIEWER_CAP_WAIT if reviewer is None else timedelta(seconds=reviewer.timeout_seconds)
    return now + max(wait, MIN_CAP_WAIT)
