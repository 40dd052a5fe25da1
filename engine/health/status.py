"""Health of schedules as the CLI shows it: store facts -> :func:`engine.health.assess.assess`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from engine.health.assess import (
    HEALTH_WINDOW,
    Health,
    LossCounts,
    PollHealthFacts,
    assess,
    health_json,
)
from engine.health.losses import newest_outcome, window_losses
from engine.jsonable import as_json
from engine.poll.config import validate_poll_config
from engine.poll.steps import page_limit
from engine.store.models import PollState, Schedule, TriggerType
from engine.store.pollstore import PollStore
from engine.store.store import Store
from engine.timefmt import iso_utc_or_none

COUNTERS = ("polls", "not_modified", "events_seen", "dispatched", "excluded", "held")


@dataclass(frozen=True)
class ScheduleHealth:
    """One schedule's derived health, with the facts it came from."""

    name: str
    health: Health
    facts: PollHealthFacts
    cursor_at: datetime | None

    def to_json(self) -> dict[str, Any]:
        """The ``li schedule health --json`` form."""
        facts = self.facts
        return {
            "name": self.name,
            **health_json(self.health),
            "cursor_at": _iso(self.cursor_at),
            "last_poll_at": _iso(facts.last_poll_at),
            "last_healthy_poll_at": _iso(facts.last_healthy_poll_at),
            "last_http_status": facts.last_http_status,
            "last_error_reason": facts.last_error_reason,
            "consecutive_auth_failures": facts.consecutive_auth_failures,
            "consecutive_errors": facts.consecutive_errors,
            "poller_consecutive_cap_no_dispatch": facts.consecutive_cap_no_dispatch,
            "counters": dict(facts.counters),
            "window": _losses_json(facts.losses),
        }


def _losses_json(losses: LossCounts | None) -> dict[str, int] | None:
    """The window's counts, every field of ``losses``: ``total`` first, named ``runs``."""
    if losses is None:
        return None
    counts = as_json(losses, rename={"total": "runs"})
    return {"runs": counts.pop("runs"), **counts}


def _iso(value: datetime | None) -> str | None:
    return iso_utc_or_none(value)


def facts_for(
    row: Schedule,
    state: PollState | None,
    latest_status: str | None,
    latest_reason: str | None,
    losses: LossCounts | None = None,
) -> PollHealthFacts:
    """Flatten a schedule row, its poll state and its newest run for :func:`assess`."""
    interval: int | None = row.interval_seconds
    limit = 0
    if row.trigger_type == TriggerType.GITHUB_POLL:
        try:
            config = validate_poll_config(row.trigger_config)
            interval, limit = config.poll_interval_seconds, page_limit(config)
        except Exception:  # an invalid stored config shows up as the poll's error
            interval, limit = 120, 0
    return PollHealthFacts(
        enabled=row.enabled,
        trigger_type=row.trigger_type,
        poll_interval_seconds=interval,
        page_limit=limit,
        last_poll_at=state.last_poll_at if state else None,
        last_healthy_poll_at=state.last_healthy_poll_at if state else None,
        last_http_status=state.last_http_status if state else None,
        last_error_reason=state.last_error_reason if state else None,
        rate_limit_reset_at=state.rate_limit_reset_at if state else None,
        consecutive_auth_failures=state.consecutive_auth_failures if state else 0,
        consecutive_errors=state.consecutive_errors if state else 0,
        consecutive_cap_no_dispatch=state.poller_consecutive_cap_no_dispatch if state else 0,
        latest_run_status=latest_status,
        latest_run_reason=latest_reason,
        counters={name: int(getattr(state, name)) for name in COUNTERS} if state else {},
        losses=losses,
    )


RunFacts = tuple[tuple[str | None, str | None], LossCounts]


def _runs_of(store: Store, names: list[str], since: datetime) -> dict[str, RunFacts]:
    """The newest outcome and the window's losses of each schedule, in one transaction."""

    def work(session: Session) -> dict[str, RunFacts]:
        return {
            name: (newest_outcome(session, name), window_losses(session, name, since))
            for name in names
        }

    result: dict[str, RunFacts] = store.in_transaction(work)
    return result


def schedule_health(
    store: Store, name: str | None = None, now: datetime | None = None
) -> list[ScheduleHealth]:
    """Health of one schedule (``name``) or of all, ordered by name."""
    rows = [store.get_schedule(name)] if name is not None else store.list_schedules()
    polls = PollStore(store)
    moment = now or store.clock()
    facts_by_name = _runs_of(store, [row.name for row in rows], moment - HEALTH_WINDOW)
    result = []
    for row in rows:
        state = polls.get_state(row.id) if row.trigger_type == TriggerType.GITHUB_POLL else None
        (status, reason), losses = facts_by_name[row.name]
        facts = facts_for(row, state, status, reason, losses)
        result.append(
            ScheduleHealth(
                row.name, assess(facts, moment), facts, state.cursor_at if state else None
            )
        )
    return result
