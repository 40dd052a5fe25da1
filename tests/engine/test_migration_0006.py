"""Migration 0006: run rows from before it get their pull request number back-filled."""

from __future__ import annotations

import json

from sqlalchemy import text

from engine.store import db as dbmod


def test_upgrading_fills_pr_number_from_the_trigger_context(db_url: str) -> None:
    engine = dbmod.make_engine(db_url)
    try:
        dbmod.upgrade(engine, "0005")
        insert = text(
            "INSERT INTO schedule_runs (schedule_name, trigger_context, status, started_at,"
            " stdout_tail, stderr_tail, attempt) VALUES ('w', :context, 'succeeded',"
            " '2026-11-30 10:00:00', '', '', 1)"
        )
        with engine.begin() as connection:
            for context in ({"pr_number": 7, "repo": "o/r"}, {"fired_at": "x"}, {"pr_number": "8"}):
                connection.execute(insert, {"context": json.dumps(context)})
        dbmod.upgrade(engine)
        with engine.connect() as connection:
            rows = connection.execute(text("SELECT pr_number FROM schedule_runs ORDER BY id"))
            assert [row[0] for row in rows] == [7, None, None]
        dbmod.downgrade(engine, "0005")
        assert dbmod.current_revision(engine) == "0005"
    finally:
        engine.dispose()
