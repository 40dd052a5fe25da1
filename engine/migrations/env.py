"""Alembic environment: uses the Engine handed over by engine.store.db (or the configured URL)."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Engine

from engine.store.db import make_engine
from engine.store.models import Base

config = context.config
target_metadata = Base.metadata


def run_migrations_online() -> None:
    engine = config.attributes.get("engine")
    if not isinstance(engine, Engine):
        engine = make_engine(config.get_main_option("sqlalchemy.url") or "")
    with engine.connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=target_metadata,
            render_as_batch=connection.dialect.name == "sqlite",
            compare_type=True,
        )
        with context.begin_transaction():
            context.run_migrations()


if context.is_offline_mode():
    raise SystemExit("offline migrations are not supported; use `li db upgrade`")
run_migrations_online()
