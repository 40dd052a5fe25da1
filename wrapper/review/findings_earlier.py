"""Version 2 of the findings contract: the reviewer's report on the earlier rounds'
findings (issue 28, incremental rounds; docs/decisions.md D91). Pure: no I/O.

An incremental round's prompt lists the earlier findings by id (``F1``, ``F2``, ...)
and asks for ``"kdev_findings": 2``, whose object has one more key, ``earlier``::

    "earlier": [{"id": "F1", "status": "fixed", "note": "the loop now ends"}]

``status`` is ``fixed`` (the head no longer has the problem), ``standing`` (it still
has it) or ``wrong`` (the finding was a mistake). Version 1 stays accepted (no
report: every earlier finding stands). A report that breaks the form (not an array, an
unknown key, a status outside the three, an id not of the form, an id reported twice,
over the caps) refuses the whole block, as every malformed part of the contract does
(D84); an id the round did not list is refused by the caller, which knows the ids.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

EARLIER_KEY = "earlier"
STATUSES = ("fixed", "standing", "wrong")
MAX_EARLIER = 200
MAX_NOTE = 1000
_ID = re.compile(r"^F[1-9][0-9]{0,5}$")
_KEYS = ("id", "status", "note")

# Reason codes (the whole block is refused).
EARLIER_MALFORMED = "findings_earlier_malformed"
EARLIER_REPEATED = "findings_earlier_repeated"
EARLIER_UNKNOWN_ID = "findings_earlier_unknown_id"


@dataclass(frozen=True)
class EarlierReport:
    """The reviewer's word on one earlier finding: its id, status and a short note."""

    id: str
    status: str  # "fixed" | "standing" | "wrong"
    note: str = ""


class EarlierError(ValueError):
    """A report that breaks the form: a reason code and one line of detail."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


EARLIER_SCHEMA: dict[str, Any] = {
    "type": "array",
    "items": {
        "type": "object",
        "additionalProperties": False,
        "required": list(_KEYS),
        "properties": {
            "id": {"type": "string"},
            "status": {"type": "string", "enum": list(STATUSES)},
            "note": {"type": ["string", "null"]},
        },
    },
}
"""The ``earlier`` array in OpenAI's strict subset (every key required, note nullable)."""

EARLIER_INSTRUCTION = f"""\
This round follows earlier reviews of this pull request. Answer with `"kdev_findings": 2`
and one more key, `{EARLIER_KEY}`: an array with one object per earlier finding listed
above, `{{"id": "F1", "status": "fixed", "note": "..."}}`, where `status` is `fixed` (the
head no longer has the problem), `standing` (it still has it) or `wrong` (the finding was
a mistake), and `note` says why in one sentence (or null). Do not repeat an earlier
finding in `findings`: report it here; `findings` holds only problems not listed above."""
"""What an incremental round's reviewer is asked, after the contract's instructions."""


def parse_earlier(value: Any) -> tuple[EarlierReport, ...]:
    """The ``earlier`` array read strictly; EarlierError on any break of the form."""
    if not isinstance(value, list):
        raise EarlierError(EARLIER_MALFORMED, f"{EARLIER_KEY} is not an array")
    if len(value) > MAX_EARLIER:
        raise EarlierError(EARLIER_MALFORMED, f"{EARLIER_KEY} has more than {MAX_EARLIER} items")
    reports: list[EarlierReport] = []
    seen: set[str] = set()
    for number, item in enumerate(value, 1):
        report = _report(item, f"{EARLIER_KEY} item {number}")
        if report.id in seen:
            raise EarlierError(EARLIER_REPEATED, f"{EARLIER_KEY} reports {report.id} twice")
        seen.add(report.id)
        reports.append(report)
    return tuple(reports)


def _report(item: Any, what: str) -> EarlierReport:
    if not isinstance(item, dict):
        raise EarlierError(EARLIER_MALFORMED, f"{what} is not an object")
    unknown = sorted(set(item) - set(_KEYS))
    if unknown:
        raise EarlierError(EARLIER_MALFORMED, f"{what} has unknown key {unknown[0][:24]!r}")
    ident, status, note = item.get("id"), item.get("status"), item.get("note")
    if not isinstance(ident, str) or not _ID.match(ident):
        raise EarlierError(EARLIER_MALFORMED, f"{what}: id is not of the form F<number>")
    if status not in STATUSES:
        raise EarlierError(EARLIER_MALFORMED, f"{what}: status is not fixed, standing or wrong")
    if note is not None and not isinstance(note, str):
        raise EarlierError(EARLIER_MALFORMED, f"{what}: note is not a string")
    if note is not None and len(note) > MAX_NOTE:
        raise EarlierError(EARLIER_MALFORMED, f"{what}: note is over {MAX_NOTE} characters")
    return EarlierReport(ident, str(status), (note or "").strip())


def check_known(reports: tuple[EarlierReport, ...], known: frozenset[str]) -> str | None:
    """One line naming the first report of an id the round did not list, or None."""
    for report in reports:
        if report.id not in known:
            return f"{EARLIER_KEY} reports {report.id}, which the round did not list"
    return None


def merge_earlier(legs: list[tuple[EarlierReport, ...]]) -> tuple[EarlierReport, ...]:
    """The reports of a round's chunk legs as one (D89's chunks, each shown every earlier
    finding): ``standing`` when any leg says so, else ``wrong`` when any does, else
    ``fixed``; a finding no leg reported is not reported (it stands)."""
    rank = {"standing": 0, "wrong": 1, "fixed": 2}
    merged: dict[str, EarlierReport] = {}
    for reports in legs:
        for report in reports:
            known = merged.get(report.id)
            if known is None or rank[report.status] < rank[known.status]:
                merged[report.id] = report
    return tuple(merged.values())
