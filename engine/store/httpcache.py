"""Writes to the ``http_cache`` table (the ETag cache), shared by the cache itself
(engine.github.etag) and the poll settle (engine.store.pollstore), which stores a pass's
ETags in the transaction that records what the pass did with its listings (issue 19).
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from engine.github.types import CachedResponse
from engine.store.models import HttpCacheEntry


def put_entries(session: Session, entries: Iterable[tuple[str, CachedResponse]]) -> None:
    """Upsert ``(key, entry)`` pairs in ``session``'s open transaction (the caller commits).

    An upsert, so two processes refreshing one key never trip over each other; on a
    dialect without ``ON CONFLICT`` a session merge does the same.
    """
    for key, entry in entries:
        values = {
            "key": key,
            "etag": entry.etag,
            "body": entry.body,
            "link_next": entry.link_next,
            "fetched_at": entry.fetched_at,
            "status": entry.status,
        }
        name = session.get_bind().dialect.name
        if name in ("postgresql", "sqlite"):
            dialect = postgresql if name == "postgresql" else sqlite
            insert = dialect.insert(HttpCacheEntry).values(**values)
            session.execute(
                insert.on_conflict_do_update(
                    index_elements=[HttpCacheEntry.key],
                    set_={column: insert.excluded[column] for column in values if column != "key"},
                )
            )
        else:
            session.merge(HttpCacheEntry(**values))
