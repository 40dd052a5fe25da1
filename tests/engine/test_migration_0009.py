"""Migration 0009: the schedule change counter over a database that already has rows."""

from __future__ import annotations

from sqlalchemy import inspect, text

from engine.store import db as dbmod
from engine.store.store import Store


def test_upgrading_keeps_old_schedules_and_counts_changes_from_zero(db_url: str) -> None:
    engine = dbmod.make_engine(db_url)
    try:
        dbmod.upgrade(engine, "0008")
        with engine.begin() as connection:
            connection.execute(
                text(
                    "INSERT INTO schedules (name, enabled, trigger_type, interval_seconds,"
                    " trigger_config, command, args, timeout_seconds, run_count,"
                    " env_passthrough, overlap, created_at, updated_at) VALUES ('old', true,"
                    " 'interval', 60, '{}', 'true', '[]', 60, 0, '[]', 'skip',"
                    " '2026-11-30 10:00:00', '2026-11-30 10:00:00')"
                )
            )
        dbmod.upgrade(engine)
        store = Store(engine)
        assert store.schedule_version() == 0
        assert store.get_schedule("old").version == 0
        assert store.schedule_changes(0).changed == []
        store.set_enabled("old", False)
        changes = store.schedule_changes(0)
        assert changes.version == 1 and [t.next_fire_at for t in changes.changed] == [None]
        dbmod.downgrade(engine, "0008")
        tables = set(inspect(engine).get_table_names())
        assert "schedule_changes" not in tables and "schedule_removals" not in tables
        columns = {c["name"] for c in inspect(engine).get_columns("schedules")}
        assert "version" not in columns
        with engine.connect() as connection:
            assert connection.execute(text("SELECT name FROM schedules")).scalars().all() == ["old"]
    finally:
        engine.dispose()
