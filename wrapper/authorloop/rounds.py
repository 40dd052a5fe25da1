"""One review round of a pull request as the author's loop sees it: a reviewed head, its
verdict and the heads carried forward from it. Shared by ``kdev pr-status``
(:mod:`wrapper.authorloop.pr_status`, which reads rounds from the ledger) and the pure
stopping rules of ``kdev loop-status`` (:mod:`wrapper.authorloop.loopstatus`)."""

from __future__ import annotations

from dataclasses import dataclass

from wrapper.jsonform import JsonForm


@dataclass(frozen=True)
class Round(JsonForm):
    head_sha: str
    patch_id: str
    verdict: str
    reviewed_at: str
    severe_findings: bool
    carried_heads: list[str]
