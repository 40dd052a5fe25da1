"""The ETag cache in the ``http_cache`` table (split from engine.github.client, issue 19).

It is the only part of the GitHub client that needs the database; keeping it here (loaded
lazily by ``engine.github``) lets the wrapper import the client without importing SQLAlchemy.
"""

from __future__ import annotations

from sqlalchemy import Engine, delete, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from engine.github.types import CachedResponse
from engine.store.db import translate_db_error
from engine.store.models import HttpCacheEntry


class SqlEtagCache:
    """An :class:`EtagCache` in the ``http_cache`` table, so ETags outlive the process."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def get(self, key: str) -> CachedResponse | None:
        try:
            with Session(self.engine) as session:
                row = session.get(HttpCacheEntry, key)
                if row is None:
                    return None
                return CachedResponse(row.etag, row.body, row.link_next, row.fetched_at, row.status)
        except SQLAlchemyError as exc:
            raise translate_db_error(exc, self.engine) from None

    def put(self, key: str, entry: CachedResponse) -> None:
        values = {
            "key": key,
            "etag": entry.etag,
            "body": entry.body,
            "link_next": entry.link_next,
            "fetched_at": entry.fetched_at,
            "status": entry.status,
        }
        try:
            # An upsert, so two processes refreshing one key never trip over each other.
            if self.engine.dialect.name in ("postgresql", "sqlite"):
                dialect = postgresql if self.engine.dialect.name == "postgresql" else sqlite
                insert = dialect.insert(HttpCacheEntry).values(**values)
                statement = insert.on_conflict_do_update(
                    index_elements=[HttpCacheEntry.key],
                    set_={name: insert.excluded[name] for name in values if name != "key"},
                )
                with self.engine.begin() as connection:
                    connection.execute(statement)
            else:
                with Session(self.engine) as session, session.begin():
                    session.merge(HttpCacheEntry(**values))
        except SQLAlchemyError as exc:
            raise translate_db_error(exc, self.engine) from None

    def drop(self, prefix: str) -> int:
        statement = delete(HttpCacheEntry).where(
            HttpCacheEntry.key.startswith(prefix, autoescape=True)
        )
        try:
            with self.engine.begin() as connection:
                return connection.execute(statement).rowcount
        except SQLAlchemyError as exc:
            raise translate_db_error(exc, self.engine) from None

    def keys(self) -> list[str]:
        """Every cached key (for operators and tests)."""
        statement = select(HttpCacheEntry.key).order_by(HttpCacheEntry.key)
        try:
            with Session(self.engine) as session:
                return list(session.scalars(statement))
        except SQLAlchemyError as exc:
            raise translate_db_error(exc, self.engine) from None
