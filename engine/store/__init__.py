"""The database: every SQL statement, the ORM models, migrations and recovery."""
