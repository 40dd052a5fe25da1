"""One github_poll pass with its I/O: fetch -> plan (pure) -> claim -> launch -> settle.

The pass is a :class:`PullsPass` (its state as attributes, one method per step; the
steps both modes share are in :mod:`engine.poll.steps`).

Used by the daemon for due github_poll schedules and by ``li schedule preview``
(``dry_run``: nothing is claimed, launched or written, and the ETag cache is not used).

Decisions per event, in order (held batch first, then fresh events oldest first):

- ``excluded:<reason>``: a filter said no; the cursor moves past it.
- ``already_claimed``: a re-offered boundary event; costs nothing, cursor moves.
- ``fired``: claimed (claim + run row + cursor in one transaction) and launched.
- ``held``: over the per-pass fire cap; persisted, fired first on later passes. The
  cursor stops before the first held event.
- ``refused:<reason>``: argv could not be rendered; the cursor holds so the event is
  retried on the next passes; after 3 refusals it is recorded as a ``refused`` run and
  skipped (``skipped:<reason>``), and the cursor moves on.

A ``mentions`` schedule runs :mod:`engine.poll.mentions` instead: trigger events (``mention``,
``pr_opened``) classified by :mod:`engine.triggers`, claimed by dedupe key, with
forward-only watermarks instead of the cursor. A trigger event whose argv cannot be
rendered is recorded once as a ``refused`` run under its dedupe key (no retries).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from engine.config import Settings
from engine.errors import LiError
from engine.github import GitHubClient, GitHubError, PullListing
from engine.health.assess import capped_counter_next
from engine.poll.config import validate_poll_config
from engine.poll.decisions import record_decisions
from engine.poll.mentions import MentionsPass
from engine.poll.plan import (
    MAX_REFUSALS,
    PassPlan,
    PollEvent,
    new_events,
    plan_pass,
    scan_reached_cursor,
)
from engine.poll.steps import (
    EventDecision,
    Launcher,
    Pass,
    PassReport,
    error_outcome,
    page_limit,
)
from engine.store.models import RunStatus
from engine.store.pollstore import PollOutcome, PollStore, PollTicket
from engine.store.store import Claim

__all__ = ["EventDecision", "Launcher", "PassReport", "PullsPass", "page_limit", "poll_once"]


def poll_once(
    pstore: PollStore,
    settings: Settings,
    client: GitHubClient,
    ticket: PollTicket,
    owner: str,
    *,
    launch: Launcher | None = None,
    dry_run: bool = False,
    keep_decisions: bool = True,
) -> PassReport:
    """Run one pass for ``ticket`` (see the module doc). Never raises for GitHub errors:
    they are recorded as the pass's health facts. ``launch`` receives each claimed fire.
    ``keep_decisions`` False skips the decision table (engine.poll.decisions; bench only)."""
    now = pstore.store.clock()
    report = PassReport(schedule_name=ticket.schedule_name)
    try:
        config = validate_poll_config(ticket.trigger_config)
    except LiError as exc:
        report.status = exc.reason
        if not dry_run:
            pstore.settle_poll(
                ticket,
                PollOutcome(polled=True, error_reason=exc.reason, error_message=exc.message),
                owner,
            )
        return report
    mode = MentionsPass if config.event == "mentions" else PullsPass
    one = mode(pstore, settings, client, ticket, owner, config, report, launch, dry_run, now)
    if not dry_run:
        one.launch_retries()
    if isinstance(one, PullsPass):
        return one.run(keep_decisions=keep_decisions)
    return one.run()


@dataclass
class PullsPass(Pass):
    """One pass of a ``pr_updated`` or ``pr_merged`` schedule: the cursor, the held batch
    and the refusal counts move as its events are handled, oldest first."""

    fresh_count: int = 0
    scan_complete: bool = True
    # An incomplete scan never moves the cursor: unread events may lie behind it. Nor
    # does a 304: the stored first page may not hold every event the last complete scan
    # saw, and one left behind there must not be passed; the next 200 moves it.
    cursor_may_move: bool = False
    blocked: bool = False  # an event held or refused: the cursor stops before it
    cursor_to: datetime | None = None
    refusals: dict[str, int] = field(default_factory=dict)
    new_held: list[PollEvent] = field(default_factory=list)
    held_keys: set[str] = field(default_factory=set)
    excluded: int = 0
    fired_from_held: bool = False

    def run(self, *, keep_decisions: bool = True) -> PassReport:
        """Fetch, plan, handle each event, then settle (nothing is written in a dry run)."""
        listing = self.fetch()
        if listing is None:
            return self.report
        for event in self.plan(listing).work:
            self.handle(event)
        self.report.held = len(self.new_held)
        if self.dry_run:
            return self.report
        if keep_decisions:
            record_decisions(self.pstore.store, self.ticket.schedule_id, self.report.decisions)
        self.settle(self.outcome(listing))
        return self.report

    def fetch(self) -> PullListing | None:
        """The listing down to the cursor, or None when GitHub failed (recorded)."""
        config, merged = self.config, self.config.event == "pr_merged"
        try:
            listing = self.client.list_pulls(
                config.repo,
                state="closed" if merged else "open",
                max_pages=page_limit(config),
                conditional=not merged and not self.dry_run,
                stop_before=self.ticket.cursor_at,
                cache_scope=f"schedule:{self.ticket.schedule_id}",
                etag_sink=self.keep_etag,
            )
        except GitHubError as exc:
            self.report.polled = True
            self.log_failure(exc)
            if not self.dry_run:
                self.settle(error_outcome(exc, self.now))
            return None
        self.report.polled = True
        return listing

    def plan(self, listing: PullListing) -> PassPlan:
        """Held events first, then fresh ones (engine.poll.plan.plan_pass)."""
        cursor, config = self.ticket.cursor_at, self.config
        held = [PollEvent.from_json(item) for item in self.ticket.held_batch]
        # A 304 hands back the last complete listing: nothing changed on GitHub, but
        # events a previous pass left behind (refused, held, unclaimed after a crash) are
        # offered again from it. Claims make the re-offers free.
        reached = listing.unchanged or scan_reached_cursor(listing.pulls, listing.complete, cursor)
        fresh = new_events(listing.pulls, repo=config.repo, config=config, cursor=cursor)
        if listing.unchanged:
            self.report.status = "not_modified"
        self.report.scan_complete = self.scan_complete = reached
        self.fresh_count = len(fresh)
        plan = plan_pass(
            held=held,
            fresh=fresh,
            pulls_for_held=listing.pulls,
            config=config,
            scan_complete=reached,
        )
        self.held_keys = {event.key for event in held}
        self.cursor_may_move = plan.released and not listing.unchanged
        self.refusals = dict(self.ticket.refusals)
        return plan

    def handled(self, event: PollEvent) -> None:
        """``event`` needs nothing more: the cursor may pass it unless blocked."""
        if self.cursor_may_move and not self.blocked:
            self.cursor_to = event.at

    def handle(self, event: PollEvent) -> None:
        """Exclude, skip, hold, refuse or fire one event (the module doc's order)."""
        if event.exclusion is not None:
            self.excluded += 1
            self.handled(event)
            self.decide(event, f"excluded:{event.exclusion}")
            return
        ticket = self.ticket
        if self.pstore.is_claimed(ticket.schedule_id, event.pr_number, event.at, event.head_sha):
            self.handled(event)
            self.decide(event, "already_claimed")
            return
        if self.over_cap():
            self.new_held.append(event)
            self.blocked = True
            self.decide(event, "held")
            return
        context = self.fire_context(event.context)
        try:
            argv = self.render(context)
        except LiError as exc:
            self.refuse(event, context, exc)
            return
        if self.dry_run:
            self.would_fire(event, argv)
            return
        self.claim(event, context, argv)

    def refuse(self, event: PollEvent, context: dict[str, Any], exc: LiError) -> None:
        """An argv that cannot be rendered: held for retries, skipped after the last."""
        if self.dry_run:
            self.decide(event, f"refused:{exc.reason}")
            self.blocked = True
            return
        count = self.refusals.get(event.key, 0) + 1
        if count < MAX_REFUSALS:
            self.refusals[event.key] = count
            self.blocked = True
            self.decide(event, f"refused:{exc.reason}")
            return
        self.refusals.pop(event.key, None)
        self.handled(event)
        self.claim_run(event, context, None, self.cursor_to, refusal=exc.reason)
        self.decide(event, f"skipped:{exc.reason}")

    def claim_run(
        self,
        event: PollEvent,
        context: dict[str, Any],
        argv: list[str] | None,
        cursor_to: datetime | None,
        *,
        refusal: str | None = None,
    ) -> Claim | None:
        """Claim ``event`` with its run row: ``running`` with ``argv``, or final as
        ``refused`` with the reason code ``refusal``."""
        return self.pstore.claim_event(
            self.ticket,
            pr_number=event.pr_number,
            occurred_at=event.at,
            head_sha=event.head_sha,
            context=context,
            argv=argv,
            owner=self.owner,
            cursor_to=cursor_to,
            status=RunStatus.RUNNING if refusal is None else RunStatus.REFUSED,
            reason=refusal,
        )

    def claim(self, event: PollEvent, context: dict[str, Any], argv: list[str]) -> None:
        """Claim ``event`` (claim + run row + cursor, one transaction) and launch it."""
        move_to = event.at if self.cursor_may_move and not self.blocked else None
        claim = self.claim_run(event, context, argv, move_to)
        if move_to is not None:
            self.cursor_to = move_to
        if claim is None:
            self.decide(event, "already_claimed")
            return
        self.fired_from_held = self.fired_from_held or event.key in self.held_keys
        self.refusals.pop(event.key, None)
        self.launched(event, claim, argv)

    def outcome(self, listing: PullListing) -> PollOutcome:
        """What the pass learnt, with the capped counter's next value."""
        counter = capped_counter_next(
            self.ticket.capped_counter,
            fresh_ok_poll=not listing.unchanged,
            scan_complete=self.scan_complete,
            # A claim is not a launch: only a confirmed one counts (a launch callback
            # that saw the spawn; otherwise the run's exit code confirms it later, see
            # engine.store.attempts.confirm_launch). A pass whose claims were handed back
            # unlaunched is interrupted: the counter stays unless a launch was confirmed.
            confirmed_launch=self.report.confirmed > 0,
            held_batch=bool(self.new_held),
            held_batch_matching_launch=self.fired_from_held,
            error=False,
            polled=True,
            interrupted=self.report.handed_back > 0,
        )
        return PollOutcome(
            polled=True,
            http_status=304 if listing.unchanged else 200,
            not_modified=listing.unchanged,
            cursor_to=self.cursor_to,
            held_batch=[event.to_json() for event in self.new_held],
            refusals=self.refusals,
            capped_counter=counter,
            events_seen=0 if listing.unchanged else self.fresh_count,
            excluded=self.excluded,
            held=len(self.new_held),
        )
