"""Result types of :mod:`engine.api` that li's own modules build: they live below both,
so that the poll decisions (engine.poll.decisions) and the health assessment
(engine.health.assess) make the type the surface returns without importing the surface
that reads them (no cycle, docs/architecture.md "Walls").
:mod:`engine.api` re-exports each of them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from engine.jsonable import JsonForm


@dataclass(frozen=True)
class Decision(JsonForm):
    """One stored poll decision for an event (``li schedule events --json``)."""

    schedule: str
    pr_number: int
    head_sha: str
    occurred_at: datetime
    decision: str
    detail: str | None
    run_id: int | None
    decided_at: datetime


@dataclass(frozen=True)
class HealthCause:
    """Why a schedule is in its state: a stable ``code``, a sentence for a human and what
    to do (``li schedule health`` prints one per line; engine.health.assess finds them)."""

    code: str
    message: str
    advice: str | None = None
