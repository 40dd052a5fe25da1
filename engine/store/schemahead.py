"""The newest schema revision, known without importing alembic (issue 25).

Opening the store compares the database's ``alembic_version`` row with this constant;
alembic itself (about a third of a second of imports) loads only when a migration runs.
tests/engine/test_migrations.py checks that it is the head of ``engine/migrations/``:
a new migration updates it in the same commit.
"""

from __future__ import annotations

HEAD_REVISION = "0011"
VERSION_TABLE = "alembic_version"
