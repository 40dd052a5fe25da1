"""The ETag cache in the ``http_cache`` table (split from engine.github.client, issue 19).

It is the only part of the GitHub client that needs the database; keeping it here (loaded
lazily by ``engine.github``) lets the wrapper import the client without importing SQLAlchemy.
"""

from __future__ import annotations

from sqlalchemy import Engine, delete, select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from engine.github.types import CachedResponse
from engine.store.db import translate_db_error
from engine.store.httpcache import put_entries
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
        try:
            with Session(self.engine) as session, session.begin():
                put_entries(session, [(key, entry)])
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
