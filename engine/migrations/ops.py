"""Reversible schema steps the revisions in ``versions/`` are written with.

A revision lists its steps once; ``reversible`` runs them forward for the upgrade and
undoes them in reverse order for the downgrade, so no revision spells its downgrade out
as a mirror of its upgrade. ``table`` creates (and drops) a table with its indexes and
seed rows, ``alter`` adds (and drops) columns and indexes of an existing table, ``Step``
is a step with its own pair of functions (a data fix, a constraint swap); ``serial_id``
is the surrogate key column. A revision's DDL must never change once released, so what
these helpers emit does not change either: a new need gets a new helper.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from alembic import op

Action = Callable[[], None]
#: an index: its name and its columns (a ``sqlalchemy.sql.elements.conv`` name is kept as is)
Index = tuple[str, Sequence[str]]


def _nothing() -> None:
    return None


@dataclass(frozen=True)
class Step:
    """One forward action and the action that undoes it."""

    up: Action
    down: Action = _nothing


def reversible(*steps: Step) -> tuple[Action, Action]:
    """The revision's ``upgrade`` (every step in order) and ``downgrade`` (every undo, reversed)."""

    def upgrade() -> None:
        for step in steps:
            step.up()

    def downgrade() -> None:
        for step in reversed(steps):
            step.down()

    return upgrade, downgrade


def serial_id() -> sa.Column[int]:
    """The surrogate key column of a table: ``id``, an auto-incremented integer (the table
    still names it in its ``PrimaryKeyConstraint``)."""
    return sa.Column("id", sa.Integer(), autoincrement=True, nullable=False)


def _create_indexes(table: str, indexes: Sequence[Index]) -> None:
    with op.batch_alter_table(table, schema=None) as batch_op:
        for name, columns in indexes:
            batch_op.create_index(name, list(columns), unique=False)


def _drop_indexes(batch_op: Any, indexes: Sequence[Index]) -> None:
    for name, _columns in reversed(indexes):
        batch_op.drop_index(name)


def table(
    name: str,
    *elements: Any,
    indexes: Sequence[Index] = (),
    rows: Sequence[Mapping[str, Any]] = (),
) -> Step:
    """Create the table ``name`` (then its ``indexes``, then its seed ``rows``); drop it."""

    def up() -> None:
        created = op.create_table(name, *elements)
        if indexes:
            _create_indexes(name, indexes)
        if rows:
            op.bulk_insert(created, list(rows))

    def down() -> None:
        if indexes:
            with op.batch_alter_table(name, schema=None) as batch_op:
                _drop_indexes(batch_op, indexes)
        op.drop_table(name)

    return Step(up, down)


def alter(name: str, *columns: sa.Column[Any], indexes: Sequence[Index] = ()) -> Step:
    """Add ``columns`` then ``indexes`` to the table ``name``; drop them in reverse order."""

    def up() -> None:
        with op.batch_alter_table(name, schema=None) as batch_op:
            for column in columns:
                batch_op.add_column(column)
            for index, index_columns in indexes:
                batch_op.create_index(index, list(index_columns), unique=False)

    def down() -> None:
        with op.batch_alter_table(name, schema=None) as batch_op:
            _drop_indexes(batch_op, indexes)
            for column in reversed(columns):
                batch_op.drop_column(column.name)

    return Step(up, down)
