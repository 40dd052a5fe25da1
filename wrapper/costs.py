"""``kdev costs``: what reviews spent, from the usage log (issue 31, D105).

:func:`gather` reads the repositories' usage logs (:mod:`wrapper.ledger.usagelog`) and
their outcome logs (the carried-forward heads: legs dedup did not run); :func:`summarize`
(pure) sums them by repository, PR, model and day (UTC). Sums are exact
:class:`~decimal.Decimal` and shown rounded to the cent. A leg of unknown cost counts as
a leg and its tokens count where known, but adds no money: ``legs_cost_unknown`` says how
many such legs a sum leaves out, so a total is never read as complete when it is not.

What dedup saved: each ``review-pr`` outcome ``carried_forward`` in the window is a leg
not run, valued at its repository's average known leg cost over its whole usage log (no
known cost: the saving is unknown, null).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from wrapper.ledger.ledger import Ledger
from wrapper.ledger.records import PR_DIR_RE, format_timestamp
from wrapper.ledger.usagelog import UsageRecord, read_usage
from wrapper.usage import cents

CARRIED = "carried_forward"


@dataclass
class Spend:
    """The sum of some legs."""

    legs: int = 0
    legs_cost_unknown: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cached: int = 0
    cost: Decimal = field(default_factory=Decimal)

    def add(self, record: UsageRecord) -> None:
        usage = record.usage
        self.legs += 1
        if usage.tokens is not None:
            self.tokens_in += usage.tokens.tokens_in
            self.tokens_out += usage.tokens.tokens_out
            self.cached += usage.tokens.cached or 0
        if usage.cost is None:
            self.legs_cost_unknown += 1
        else:
            self.cost += usage.cost

    def to_json(self) -> dict[str, Any]:
        return {
            "legs": self.legs,
            "legs_cost_unknown": self.legs_cost_unknown,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "cached": self.cached,
            "cost_usd": str(cents(self.cost)),
        }


@dataclass(frozen=True)
class Saving:
    """A repository's legs not run (carried forward) and what they would have cost."""

    repo: str
    legs_not_run: int
    average_leg_cost: Decimal | None

    def value(self) -> Decimal | None:
        """The legs not run at the average cost (None: no leg of known cost to average)."""
        average = self.average_leg_cost
        return None if average is None else average * self.legs_not_run

    def to_json(self) -> dict[str, Any]:
        average, value = self.average_leg_cost, self.value()
        return {
            "repo": self.repo,
            "legs_not_run": self.legs_not_run,
            "average_leg_cost_usd": None if average is None else str(cents(average)),
            "saved_usd": None if value is None else str(cents(value)),
        }


@dataclass
class CostReport:
    """``kdev costs``: the total, its breakdowns and the savings."""

    since: datetime | None
    total: Spend = field(default_factory=Spend)
    by_repo: dict[str, Spend] = field(default_factory=dict)
    by_pr: dict[tuple[str, int], Spend] = field(default_factory=dict)
    by_model: dict[str, Spend] = field(default_factory=dict)
    by_day: dict[str, Spend] = field(default_factory=dict)
    saved: list[Saving] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        values = [value for value in (s.value() for s in self.saved) if value is not None]
        return {
            "since": None if self.since is None else format_timestamp(self.since),
            "total": self.total.to_json(),
            "by_repo": [{"repo": k, **v.to_json()} for k, v in sorted(self.by_repo.items())],
            "by_pr": [
                {"repo": repo, "pr": pr, **v.to_json()}
                for (repo, pr), v in sorted(self.by_pr.items())
            ],
            "by_model": [{"model": k, **v.to_json()} for k, v in sorted(self.by_model.items())],
            "by_day": [{"day": k, **v.to_json()} for k, v in sorted(self.by_day.items())],
            "saved": [s.to_json() for s in self.saved],
            "saved_usd": str(cents(sum(values, Decimal()))),
        }


def average_costs(records: Iterable[UsageRecord]) -> dict[str, Decimal]:
    """repository -> the mean cost of its legs of known cost (repositories with none left out)."""
    sums: dict[str, tuple[Decimal, int]] = {}
    for record in records:
        if record.usage.cost is not None:
            total, count = sums.get(record.repo, (Decimal(), 0))
            sums[record.repo] = (total + record.usage.cost, count + 1)
    return {repo: total / count for repo, (total, count) in sums.items()}


def summarize(
    records: Iterable[UsageRecord],
    since: datetime | None,
    carried: Mapping[str, int],
    averages: Mapping[str, Decimal],
) -> CostReport:
    """The report of ``records`` (already within the window) and ``carried`` legs."""
    report = CostReport(since)
    for record in records:
        day = record.at.date().isoformat()
        for spend in (
            report.total,
            report.by_repo.setdefault(record.repo, Spend()),
            report.by_pr.setdefault((record.repo, record.pr), Spend()),
            report.by_model.setdefault(record.usage.model, Spend()),
            report.by_day.setdefault(day, Spend()),
        ):
            spend.add(record)
    report.saved = [
        Saving(repo, count, averages.get(repo)) for repo, count in sorted(carried.items()) if count
    ]
    return report


def carried_legs(ledger: Ledger, repo: str | None, since: datetime | None) -> dict[str, int]:
    """repository -> its ``review-pr`` outcomes ``carried_forward`` at or after ``since``."""
    from wrapper.ledger.outcomes import OutcomeLog  # imports the review workflow

    outcomes = OutcomeLog(ledger)
    counts: dict[str, int] = {}
    for name, directory in ledger.iter_repos(repo):
        counts[name] = 0
        for pr_dir in sorted(directory.iterdir()):
            found = PR_DIR_RE.match(pr_dir.name)
            if found is None or not pr_dir.is_dir():
                continue
            for entry in outcomes.read(name, int(found.group(1))):
                if entry.command == "review-pr" and entry.outcome == CARRIED:
                    if since is None or entry.at >= since:
                        counts[name] += 1
    return counts


def gather(ledger: Ledger, repo: str | None, since: datetime | None) -> CostReport:
    """``kdev costs`` of ``repo`` (None: every repository) since ``since`` (None: ever)."""
    every = list(read_usage(ledger, repo))
    window = [r for r in every if since is None or r.at >= since]
    return summarize(window, since, carried_legs(ledger, repo, since), average_costs(every))
