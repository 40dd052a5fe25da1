"""The decision table: what each github_poll pass decided for each event it saw.

Public read API (used by ``li schedule events`` and documented in docs/poller.md as
stable for other programs): :func:`list_decisions` and :func:`list_pr_runs`, plus the
``--json`` output of ``li schedule events`` / ``li schedule runs --pr``.

Decisions stored (generic: nothing here knows what the fired command does):

- ``fired`` with the run id;
- ``excluded:<filter>`` where filter is the configured filter that said no
  (``same_repo_only``, ``draft``, ``base``, ``state``); ``detail`` keeps the finer code
  (``not_same_repo``, ``head_repo_missing``, ``not_draft``, ``base_mismatch`` ...);
- ``held`` (over ``max_fires_per_poll``; fired first on a later pass);
- ``refused:<reason>`` (argv could not be rendered; retried on later passes);
- ``skipped_after_refusals`` (refused three times; ``detail`` is the reason).

``already_claimed`` is never stored: the event's first decision already is. A decision
repeated on later passes is stored once (a unique key), so an idle pass writes nothing.

Retention: every pass that records something prunes its schedule's rows older than
``LI_DECISIONS_KEEP_DAYS`` (default 31) and beyond the newest ``LI_DECISIONS_KEEP_ROWS``
(default 10000), two indexed deletes. ``0`` turns a bound off; both 0 is refused.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from engine.apitypes import Decision
from engine.errors import InvalidInput
from engine.fields import same_fields
from engine.store.core import count_boundary
from engine.store.models import PollDecision, ScheduleRun
from engine.store.store import Store
from engine.timefmt import iso_utc_or_none

if TYPE_CHECKING:  # the pass's own type; importing it would load the GitHub client
    from engine.poll.steps import EventDecision

DEFAULT_KEEP_DAYS = 31
DEFAULT_KEEP_ROWS = 10_000

# The configured filter behind each exclusion code of engine.poll.plan.exclusion_reason.
FILTER_OF_EXCLUSION: Mapping[str, str] = {
    "state": "state",
    "draft": "draft",
    "not_draft": "draft",
    "base_mismatch": "base",
    "not_same_repo": "same_repo_only",
    "head_repo_missing": "same_repo_only",
}


@dataclass(frozen=True)
class Retention:
    """How long decisions are kept per schedule; 0 turns a bound off."""

    keep_days: int = DEFAULT_KEEP_DAYS
    keep_rows: int = DEFAULT_KEEP_ROWS

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Retention:
        env = os.environ if environ is None else environ
        days = _non_negative(env, "LI_DECISIONS_KEEP_DAYS", DEFAULT_KEEP_DAYS)
        rows = _non_negative(env, "LI_DECISIONS_KEEP_ROWS", DEFAULT_KEEP_ROWS)
        if days == 0 and rows == 0:
            raise InvalidInput(
                "LI_DECISIONS_KEEP_DAYS and LI_DECISIONS_KEEP_ROWS are both 0: the decision "
                "table would grow without bound",
                "invalid_retention",
            )
        return cls(keep_days=days, keep_rows=rows)


def _non_negative(env: Mapping[str, str], name: str, default: int) -> int:
    text = env.get(name, "").strip()
    if not text:
        return default
    if not text.isdigit():
        raise InvalidInput(f"{name} must be a whole number >= 0, got {text!r}", "invalid_retention")
    return int(text)


# One stored decision is the public engine.api.Decision (one type, not two).
DecisionRow = Decision


def _iso(value: datetime | None) -> str | None:
    return iso_utc_or_none(value)


def stored_form(decision: str) -> tuple[str, str | None] | None:
    """``(decision, detail)`` as stored for a pass's decision string; None: not stored."""
    kind, _, reason = decision.partition(":")
    if kind == "fired" or kind == "held":
        return kind, None
    if kind == "excluded":
        return f"excluded:{FILTER_OF_EXCLUSION.get(reason, reason)}", reason or None
    if kind == "refused":
        return decision, None
    if kind == "skipped":
        return "skipped_after_refusals", reason or None
    return None  # already_claimed, would_fire (a preview): nothing new to keep


def record_decisions(
    store: Store,
    schedule_id: int,
    decisions: Iterable[EventDecision],
    retention: Retention | None = None,
) -> int:
    """Store a pass's new decisions and prune; returns how many rows were inserted.

    Costs nothing when the pass decided nothing worth keeping (an idle pass); otherwise
    one transaction: one multi-row insert-or-ignore and the two pruning deletes."""
    rows: dict[tuple[int, datetime, str, str], dict[str, Any]] = {}
    for item in decisions:
        form = stored_form(item.decision)
        if form is None:
            continue
        event = item.event
        key = (event.pr_number, event.at, event.head_sha, form[0])
        rows.setdefault(
            key,
            {
                "schedule_id": schedule_id,
                "pr_number": event.pr_number,
                "occurred_at": event.at,
                "head_sha": event.head_sha,
                "decision": form[0],
                "detail": form[1][:200] if form[1] else None,
                "run_id": item.run_id,
            },
        )
    if not rows:
        return 0
    policy = retention or Retention.from_env()

    def work(session: Session) -> int:
        now = store.clock()
        values = [{**row, "decided_at": now} for row in rows.values()]
        # Insert-or-ignore on the unique key: a decision already stored (an event held
        # again, a boundary event excluded again) keeps its first time, costs no select.
        dialect = session.get_bind().dialect.name
        insert = pg_insert if dialect == "postgresql" else sqlite_insert
        statement = insert(PollDecision).on_conflict_do_nothing(
            index_elements=["schedule_id", "pr_number", "occurred_at", "head_sha", "decision"]
        )
        inserted = session.connection().execute(statement, values).rowcount
        prune(session, schedule_id, policy, now)
        return max(0, int(inserted or 0))

    result: int = store.in_transaction(work)
    return result


def prune(session: Session, schedule_id: int, policy: Retention, now: datetime) -> None:
    """Delete one schedule's decisions beyond the retention bounds (indexed)."""
    if policy.keep_days:
        session.execute(
            delete(PollDecision).where(
                PollDecision.schedule_id == schedule_id,
                PollDecision.decided_at < now - timedelta(days=policy.keep_days),
            )
        )
    if policy.keep_rows:
        scope = PollDecision.schedule_id == schedule_id
        boundary = count_boundary(session, PollDecision.id, scope, policy.keep_rows)
        if boundary is not None:
            session.execute(
                delete(PollDecision).where(
                    PollDecision.schedule_id == schedule_id, PollDecision.id <= boundary
                )
            )


def list_decisions(
    store: Store,
    name: str,
    *,
    pr: int | None = None,
    since: datetime | None = None,
    limit: int = 1000,
) -> list[DecisionRow]:
    """A schedule's stored decisions, oldest first (public read API)."""
    row = store.get_schedule(name)

    def work(session: Session) -> list[DecisionRow]:
        query = select(PollDecision).where(PollDecision.schedule_id == row.id)
        if pr is not None:
            query = query.where(PollDecision.pr_number == pr)
        if since is not None:
            query = query.where(PollDecision.decided_at >= since)
        found = session.scalars(query.order_by(PollDecision.id.desc()).limit(limit)).all()
        return [same_fields(DecisionRow, d, schedule=row.name) for d in reversed(found)]

    result: list[DecisionRow] = store.in_transaction(work)
    return result


def list_pr_runs(
    store: Store, name: str | None, pr: int, statuses: Sequence[str] = (), limit: int = 20
) -> list[ScheduleRun]:
    """Runs whose fire was for pull request ``pr``, newest first (public read API)."""

    def work(session: Session) -> list[ScheduleRun]:
        query = select(ScheduleRun).where(ScheduleRun.pr_number == pr)
        if name is not None:
            query = query.where(ScheduleRun.schedule_name == name)
        if statuses:
            query = query.where(ScheduleRun.status.in_(list(statuses)))
        return list(session.scalars(query.order_by(ScheduleRun.id.desc()).limit(limit)))

    result: list[ScheduleRun] = store.in_transaction(work)
    return result


__all__ = [
    "DecisionRow",
    "Retention",
    "list_decisions",
    "list_pr_runs",
    "prune",
    "record_decisions",
    "stored_form",
]
