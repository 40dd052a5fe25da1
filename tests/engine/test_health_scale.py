"""Health reads a schedule's runs through an index, not by scanning all runs (issue 19).

``li schedule health`` (and the metrics sweep) ask, per schedule, for its newest runs and
for its runs in the 24 h window, both by ``schedule_name``. Without the indexes of
migration 0008 each question scanned the whole ``schedule_runs`` table: health cost
schedules x runs. The plans are checked on SQLite and PostgreSQL (with sequential scans
priced out on PostgreSQL, whose planner prefers them on tiny tables), and the answers
are checked against seeded runs.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine, text
from sqlalchemy.orm import Session
from sqlalchemy.sql import Select

from engine.health.assess import HEALTH_WINDOW
from engine.health.losses import coalesced_query, newest_query, window_query
from engine.health.status import schedule_health
from engine.store.models import RunStatus, ScheduleRun
from engine.store.store import Store, runs_query
from tests.factories import interval_spec

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def _plan(db: Engine, statement: Select[Any]) -> str:
    with db.connect() as connection:
        compiled = statement.compile(dialect=connection.dialect)
        params = compiled.construct_params()
        if db.dialect.name == "sqlite":
            values = tuple(
                params[key].isoformat(" ") if isinstance(params[key], datetime) else params[key]
                for key in compiled.positiontup or ()
            )
            rows = connection.exec_driver_sql("EXPLAIN QUERY PLAN " + compiled.string, values)
            return "\n".join(str(row[-1]) for row in rows)
        connection.execute(text("SET enable_seqscan = off"))
        rows = connection.exec_driver_sql("EXPLAIN " + compiled.string, params)
        return "\n".join(str(row[0]) for row in rows)


def test_the_newest_runs_of_a_schedule_are_read_through_the_name_index(db: Engine) -> None:
    for query in (runs_query("nightly", [], 5), newest_query("nightly")):
        plan = _plan(db, query)
        assert "ix_schedule_runs_name_id" in plan, plan
        assert "TEMP B-TREE" not in plan, plan  # no sort of the schedule's runs either


def test_the_window_runs_of_a_schedule_are_read_through_the_name_index(db: Engine) -> None:
    for query in (window_query, coalesced_query):
        plan = _plan(db, query("nightly", NOW - HEALTH_WINDOW))
        assert "ix_schedule_runs_name_started" in plan, plan


def test_health_counts_only_the_schedules_own_runs_in_the_window(db: Engine) -> None:
    store = Store(db, clock=lambda: NOW)
    for name in ("alpha", "beta"):
        store.add_schedule(interval_spec(name=name, every=60))
    with Session(db) as session, session.begin():
        for hours, name, status in [
            (30, "alpha", RunStatus.FAILED),  # outside the window
            (2, "alpha", RunStatus.FAILED),
            (1, "alpha", RunStatus.SUCCEEDED),
            (0.5, "alpha", RunStatus.SUCCEEDED),  # an operator note, newest
            (1, "beta", RunStatus.CANCELLED),
            (0.5, "beta", RunStatus.SUCCEEDED),  # a late fire that folded 3 slots
        ]:
            started = NOW - timedelta(hours=hours)
            session.add(
                ScheduleRun(
                    schedule_name=name,
                    status=status.value,
                    reason="cursor_set" if (name, hours) == ("alpha", 0.5) else None,
                    started_at=started,
                    finished_at=started + timedelta(seconds=1),
                    trigger_context={"coalesced": 3} if name == "beta" and hours < 1 else {},
                )
            )
    report = {item.name: item for item in schedule_health(store, now=NOW)}
    alpha, beta = report["alpha"].facts.losses, report["beta"].facts.losses
    assert alpha is not None and beta is not None
    assert (alpha.total, alpha.failed, alpha.cancelled) == (2, 1, 0)
    assert (beta.total, beta.failed, beta.cancelled, beta.coalesced) == (2, 0, 1, 3)
    assert alpha.coalesced == 0
    assert report["alpha"].facts.latest_run_status == RunStatus.SUCCEEDED.value
    assert report["alpha"].facts.latest_run_reason is None  # the note is skipped
