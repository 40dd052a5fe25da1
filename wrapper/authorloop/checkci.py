"""``kdev check-ci --repo R --pr N [--wait]``: have the PR's checks settled, and which failed.

One look reads the PR's head (``GET /repos/{o}/{r}/pulls/{n}``) and that head's check runs
(``GET .../commits/{head}/check-runs``, conditional: an unchanged answer is a free 304).
Each run falls in a bucket as ``kdev watch`` sorts it (:func:`check_bucket`): ``pass``,
``fail``, ``cancel``, ``skipping`` (settled) or ``pending``. The checks have settled when
the head has at least one run and every run is settled.

With ``--wait`` the look repeats, with the same interval rules as ``kdev watch``
(``--interval auto`` by PR size, never under 60 s), until the checks settle, the head
moves (the new head's checks are then the ones waited for), or ``--max-duration`` runs
out. The result names every failing or cancelled check with its log URL
(``details_url``, else ``html_url``).

Exit codes (docs/exit-codes.md): 0 settled and green; 18 settled with a failing or
cancelled check; 16 ``--max-duration`` reached with checks still pending (or none yet).
A fix loop calls it at most three times per round (docs/author-loop.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from engine.github import GitHubClient
from engine.jsonable import as_json
from wrapper.authorloop.watch import (
    DEFAULT_MAX_DURATION,
    EXIT_MAX_DURATION,
    MIN_INTERVAL,
    check_bucket,
    choose_interval,
)
from wrapper.jsonform import JsonForm, PrHead

EXIT_CHECKS_FAILED = 18
SETTLED = ("pass", "fail", "cancel", "skipping")
FAILING = ("fail", "cancel")


@dataclass(frozen=True)
class Check(JsonForm):
    """One check run of the head."""

    name: str
    bucket: str
    url: str | None


@dataclass(frozen=True)
class CiReport(PrHead):
    """What the checks of ``head_sha`` say; ``state`` is green, failing or pending."""

    state: str
    checks: tuple[Check, ...]
    looks: int

    @property
    def failing(self) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if c.bucket in FAILING)

    @property
    def exit_code(self) -> int:
        return {"green": 0, "failing": EXIT_CHECKS_FAILED}.get(self.state, EXIT_MAX_DURATION)

    def to_json(self) -> dict[str, Any]:
        return as_json(self) | {"failing": [c.to_json() for c in self.failing]}

    def lines(self) -> list[str]:
        """The human form: one summary line, then one line per failing check."""
        counts = {b: sum(c.bucket == b for c in self.checks) for b in (*SETTLED, "pending")}
        summary = ", ".join(f"{n} {b}" for b, n in counts.items() if n) or "no checks yet"
        head = f"{self.repo} #{self.pr} at {self.head_sha[:12]}: {self.state} ({summary})"
        return [head, *(f"  {c.bucket}: {c.name}  {c.url or '-'}" for c in self.failing)]


def state_of(checks: tuple[Check, ...]) -> str:
    """``pending`` until there is a check and every check settled; then ``failing`` when
    one failed or was cancelled, else ``green``. Pure."""
    if not checks or any(c.bucket not in SETTLED for c in checks):
        return "pending"
    return "failing" if any(c.bucket in FAILING for c in checks) else "green"


def _checks(runs: list[Any]) -> tuple[Check, ...]:
    latest: dict[str, dict[str, Any]] = {}
    for run in sorted((r for r in runs if isinstance(r, dict)), key=lambda r: r.get("id", 0)):
        latest[str(run.get("name") or "?")] = run  # a re-run replaces the earlier run
    return tuple(
        Check(
            name=name,
            bucket=check_bucket(run.get("status"), run.get("conclusion")),
            url=run.get("details_url") or run.get("html_url"),
        )
        for name, run in sorted(latest.items())
    )


class CiCheck:
    """Looks at ``repo`` #``pr``'s checks; ``clock`` and ``sleep`` are injectable."""

    def __init__(
        self,
        github: GitHubClient,
        repo: str,
        pr: int,
        *,
        interval: str = "auto",
        max_duration: float = DEFAULT_MAX_DURATION,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        choose_interval(interval, 0)  # refuse a bad option before the first request
        self.github, self.repo, self.pr = github, repo, pr
        self.interval, self.max_duration = interval, max_duration
        self.clock, self.sleep = clock, sleep

    def look(self) -> tuple[str, int, tuple[Check, ...]]:
        """One look: the head, the PR's changed lines and the head's checks."""
        base = f"repos/{self.repo}"
        read = self.github.get_rest
        pull = read(f"{base}/pulls/{self.pr}", cache_scope="kdev-check-ci").body
        head = str(pull["head"]["sha"])
        lines = int(pull.get("additions") or 0) + int(pull.get("deletions") or 0)
        runs = read(
            f"{base}/commits/{head}/check-runs",
            {"per_page": 100},
            cache_scope="kdev-check-ci",
            paginate=True,
            items_key="check_runs",
        ).body
        return head, lines, _checks(runs if isinstance(runs, list) else [])

    def run(self, *, wait: bool) -> CiReport:
        """One look, or with ``wait`` looks until settled or out of time."""
        deadline = self.clock() + timedelta(seconds=self.max_duration)
        looks = 0
        while True:
            head, lines, checks = self.look()
            looks += 1
            state = state_of(checks)
            now = self.clock()
            if not wait or state != "pending" or now >= deadline:
                return CiReport(self.repo, self.pr, head, state, checks, looks)
            pause = max(MIN_INTERVAL, choose_interval(self.interval, lines))
            self.sleep(min(pause, max(0.0, (deadline - now).total_seconds())))
