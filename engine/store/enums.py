"""The closed sets of values the store writes and compares (like apscheduler's ``_enums``).

Each is a :class:`enum.StrEnum` whose values are exactly the strings stored in the
database and printed by ``li``, so a member compares equal to its string: code outside
the store may keep using the plain values. No SQLAlchemy here; pure modules may import
this one.
"""

from __future__ import annotations

import enum


class TriggerType(enum.StrEnum):
    """How a schedule decides when to fire."""

    CRON = "cron"  # a five-field cron expression in a timezone
    INTERVAL = "interval"  # every N seconds after the previous due time
    GITHUB_POLL = "github_poll"  # polls a repository's pull requests; fires per event


class OverlapPolicy(enum.StrEnum):
    """What happens when a schedule is due while its previous run is still running."""

    SKIP = "skip"  # the new fire is refused with reason ``overlap``
    ALLOW = "allow"  # runs side by side (still under the global concurrency cap)


class RunStatus(enum.StrEnum):
    """The outcome of one fire. Every fire ends in exactly one of these."""

    RUNNING = "running"  # the process was launched (or is being launched) and has not ended
    SUCCEEDED = "succeeded"  # the process exited 0
    FAILED = "failed"  # the process exited non-zero or was killed by a signal
    TIMED_OUT = "timed_out"  # the deadline passed; the process group was terminated
    REFUSED = "refused"  # never launched: a safety rule or a precondition said no
    CANCELLED = "cancelled"  # the engine stopped (or died) before the run could finish


TERMINAL_STATUSES = frozenset(s for s in RunStatus if s is not RunStatus.RUNNING)


class RunReason(enum.StrEnum):
    """The reason codes the store itself writes on a run row (``schedule_runs.reason``).

    Other reasons (a refusal's code, a runner's exit reason) come in from the caller.
    """

    OVERLAP = "overlap"  # refused: the previous run of a ``skip`` schedule still runs
    CURSOR_SET = "cursor_set"  # an operator moved a github_poll cursor (a note, not a fire)
    ENGINE_LOST = "engine_lost"  # cancelled: launched, then its engine died
    ABANDONED_BEFORE_LAUNCH = "abandoned_before_launch"  # cancelled: engine died pre-launch
    ENGINE_SHUTDOWN = "engine_shutdown"  # cancelled: handed back by a stopping engine


# Never launched (or handed back by a stop): always offered again (engine.store.attempts).
UNLAUNCHED_REASONS = frozenset({RunReason.ABANDONED_BEFORE_LAUNCH, RunReason.ENGINE_SHUTDOWN})
