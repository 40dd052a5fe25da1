"""What every github_poll pass shares: its report, the launch callback and the steps
both modes take for one event (render argv, respect the fire cap, record a decision,
launch a claim, record a failed poll).

:mod:`engine.poll.pollpass` (modes ``pr_updated`` and ``pr_merged``) and
:mod:`engine.poll.mentions` (mode ``mentions``) each run one pass as a subclass of
:class:`Pass`: the pass's state is attributes of that object, each step a method.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from engine.config import Settings
from engine.github import CachedResponse, GitHubClient, GitHubError
from engine.poll.config import GithubPollConfig
from engine.poll.plan import (
    DEFAULT_MERGED_PAGE_LIMIT,
    DEFAULT_OPEN_PAGE_LIMIT,
    PollEvent,
    iso,
)
from engine.schedules.argv import render_argv
from engine.store.pollstore import PollOutcome, PollStore, PollTicket
from engine.store.store import Claim

# One logger for both modes: operators and docs/triggers.md name it.
log = logging.getLogger("engine.poll.pollpass")


@dataclass
class EventDecision:
    """What a pass did with one event (for preview, logs and tests)."""

    event: PollEvent
    decision: str
    argv: list[str] | None = None
    run_id: int | None = None


@dataclass
class PassReport:
    """The result of one pass."""

    schedule_name: str
    polled: bool = False
    status: str = "ok"  # ok | not_modified | <error reason code>
    scan_complete: bool = True
    decisions: list[EventDecision] = field(default_factory=list)
    launched: list[Claim] = field(default_factory=list)
    held: int = 0
    # Launches the callback confirmed (the process was spawned), and claims it handed
    # back unlaunched (the engine is stopping: the pass is interrupted).
    confirmed: int = 0
    handed_back: int = 0
    retried: int = 0  # new attempts of re-offered events (engine.store.attempts)


# ``launch(claim)`` answers True when the process was spawned (a confirmed launch),
# False when the claim was handed back unlaunched (the engine is stopping), anything
# else when it was queued (confirmed later by the run's exit code).
Launcher = Callable[[Claim], object]


def page_limit(config: GithubPollConfig) -> int:
    """Pages a scan may read: ``page_limit`` or the mode's default (3 open, 5 merged)."""
    if config.page_limit is not None:
        return config.page_limit
    return DEFAULT_MERGED_PAGE_LIMIT if config.event == "pr_merged" else DEFAULT_OPEN_PAGE_LIMIT


def error_outcome(exc: GitHubError, now: datetime) -> PollOutcome:
    """The settled facts of a pass that GitHub failed: the reason and any reset time."""
    reset = exc.reset_at
    if reset is None and exc.retry_after is not None:
        reset = now + timedelta(seconds=exc.retry_after)
    return PollOutcome(
        polled=True,
        http_status=exc.status,
        error_reason=exc.reason,
        error_message=exc.message,
        rate_limit_reset_at=reset,
    )


@dataclass
class Pass:
    """One pass in progress: its inputs, its report and the fires counted so far."""

    pstore: PollStore
    settings: Settings
    client: GitHubClient
    ticket: PollTicket
    owner: str
    config: GithubPollConfig
    report: PassReport
    launch: Launcher | None
    dry_run: bool
    now: datetime
    fired: int = 0
    # ETags of the listings read, stored when the pass settles (engine.store.pollstore).
    etags: list[tuple[str, CachedResponse]] = field(default_factory=list)

    @property
    def name(self) -> str:
        """The schedule's name (for logs)."""
        return self.ticket.schedule_name

    def decide(
        self,
        event: PollEvent,
        decision: str,
        argv: list[str] | None = None,
        run_id: int | None = None,
    ) -> None:
        """Record what the pass did with ``event``, and log it once at DEBUG with the
        decision as its reason code (``fired``, ``excluded:draft``, ``held`` ...)."""
        self.report.decisions.append(EventDecision(event, decision, argv=argv, run_id=run_id))
        log.debug(
            "%s: #%s at %s: %s",
            self.name,
            event.pr_number,
            iso(event.at),
            decision,
            extra={
                "decision": decision,
                "reason": decision,
                "pr": event.pr_number,
                "run_id": run_id,
            },
        )

    def fire_context(self, context: dict[str, Any]) -> dict[str, Any]:
        """``context`` plus the variables every fire has: ``schedule_name``, ``fired_at``."""
        return {**context, "schedule_name": self.ticket.schedule_name, "fired_at": iso(self.now)}

    def render(self, context: dict[str, Any]) -> list[str]:
        """The schedule's argv for ``context``; raises :class:`engine.errors.LiError`."""
        ticket = self.ticket
        return render_argv(ticket.command, ticket.args, context, self.settings.command_allowlist)

    def over_cap(self) -> bool:
        """True once this pass fired ``max_fires_per_poll`` events."""
        return self.fired >= self.config.max_fires_per_poll

    def would_fire(self, event: PollEvent, argv: list[str]) -> None:
        """A dry run's fire: counted against the cap, nothing claimed."""
        self.fired += 1
        self.decide(event, "would_fire", argv=argv)

    def launched(self, event: PollEvent, claim: Claim, argv: list[str]) -> None:
        """A claimed fire: counted, reported and handed to the launch callback."""
        self.fired += 1
        self.report.launched.append(claim)
        self.decide(event, "fired", argv=argv, run_id=claim.run_id)
        self.start(claim)

    def start(self, claim: Claim) -> None:
        """Hand ``claim`` to the launch callback and count its answer."""
        if self.launch is None:
            return
        answer = self.launch(claim)
        if answer is True:
            self.report.confirmed += 1
        elif answer is False:
            self.report.handed_back += 1

    def launch_retries(self) -> None:
        """Events whose earlier attempt was lost or never launched go first."""
        for retry in self.pstore.claim_retries(self.ticket, self.owner):
            self.report.launched.append(retry)
            self.report.retried += 1
            self.start(retry)

    def log_failure(self, exc: GitHubError) -> None:
        """The pass's poll failed: its status is the reason, logged once."""
        self.report.status = exc.reason
        log.warning("poll of %s (%s) failed: %s", self.name, self.config.repo, exc)

    def keep_etag(self, key: str, entry: CachedResponse) -> None:
        """The client's ETag sink: held until the pass settles."""
        self.etags.append((key, entry))

    def settle(self, outcome: PollOutcome) -> None:
        """Write the pass's outcome with its listings' ETags (and release its lease)."""
        outcome.etags = list(self.etags)
        self.pstore.settle_poll(self.ticket, outcome, self.owner)
