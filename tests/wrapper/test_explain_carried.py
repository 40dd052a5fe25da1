"""`kdev explain` tells a carried verdict by its own moment (D76's ``carried_at``): the
timeline places the carry when it happened, not when the carried-from head was reviewed,
and the verdict line says it was carried, from which head, which diff and when."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from wrapper.explain import EngineSide, _ledger_line, build_timeline
from wrapper.ledger.ledger import LedgerRow
from wrapper.ledger.records import RowKind

NOW = datetime(2026, 11, 30, 13, 0, tzinfo=UTC)
OLD = "1a2b3c4" + "0" * 33
NEW = "9f8e7d6" + "0" * 33


def carried(carried_at: datetime | None) -> LedgerRow:
    reviewed = NOW - timedelta(hours=5)
    return LedgerRow(
        repo="octo/widgets",
        pr=7,
        head_sha=NEW,
        patch_id="ab" * 20,
        verdict="APPROVE",
        reviewed_at=reviewed,
        kind=RowKind.CARRIED,
        carried_from=OLD,
        carried_at=carried_at,
    )


def test_the_timeline_places_a_carry_when_it_was_made() -> None:
    moment = NOW - timedelta(minutes=3)
    [line] = build_timeline(EngineSide((), (), (), ()), [], [carried(moment)], NOW)
    assert line.at == moment and "carried from 1a2b3c4" in line.text


def test_the_verdict_line_says_carried_from_where_which_diff_and_when() -> None:
    line = _ledger_line("head 9f8e7d6", carried(NOW - timedelta(minutes=3)), NOW)
    assert line == (
        "head 9f8e7d6: reviewed APPROVE carried forward 3m ago from 1a2b3c4 "
        "(the same diff, patch-id abababababab), reviewed 5h ago"
    )
    older = _ledger_line("head 9f8e7d6", carried(None), NOW)
    assert "carried forward (an older kdev: time unknown) from 1a2b3c4" in older
