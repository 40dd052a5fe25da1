"""A refusal returned as a value, not raised: a reason code, one line of detail, and the
one-line message every kdev error has (``WHAT: detail [reason]``). Pure.

The findings contract, the chunk planner and the chunk merge each answer "no" this way,
so their callers decide whether a refusal fails a leg, defers a round or is shown."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar


@dataclass(frozen=True)
class Refusal:
    """Why something was refused; a subclass names what (:attr:`WHAT`)."""

    WHAT: ClassVar[str] = "refused"

    reason: str
    detail: str

    @property
    def message(self) -> str:
        return f"{self.WHAT}: {self.detail} [{self.reason}]"
