"""One github_poll pass with its I/O: fetch -> plan (pure) -> claim -> launch -> settle.

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
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from engine.argv import render_argv
from engine.config import Settings
from engine.errors import LiError
from engine.github import GitHubClient, GitHubError
from engine.health import capped_counter_next
from engine.models import RunStatus
from engine.pollconfig import GithubPollConfig, validate_poll_config
from engine.poller import (
    DEFAULT_MERGED_PAGE_LIMIT,
    DEFAULT_OPEN_PAGE_LIMIT,
    MAX_REFUSALS,
    PollEvent,
    iso,
    new_events,
    plan_pass,
    scan_reached_cursor,
)
from engine.pollstore import PollOutcome, PollStore, PollTicket
from engine.store import Claim

log = logging.getLogger(__name__)


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


def page_limit(config: GithubPollConfig) -> int:
    """Pages a scan may read: ``page_limit`` or the mode's default (3 open, 5 merged)."""
    if config.page_limit is not None:
        return config.page_limit
    return DEFAULT_MERGED_PAGE_LIMIT if config.event == "pr_merged" else DEFAULT_OPEN_PAGE_LIMIT


def _error_outcome(exc: GitHubError, now: datetime) -> PollOutcome:
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


def poll_once(
    pstore: PollStore,
    settings: Settings,
    client: GitHubClient,
    ticket: PollTicket,
    owner: str,
    *,
    launch: Callable[[Claim], object] | None = None,
    dry_run: bool = False,
) -> PassReport:
    """Run one pass for ``ticket`` (see the module doc). Never raises for GitHub errors:
    they are recorded as the pass's health facts. ``launch`` receives each claimed fire."""
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

    merged = config.event == "pr_merged"
    try:
        listing = client.list_pulls(
            config.repo,
            state="closed" if merged else "open",
            max_pages=page_limit(config),
            conditional=not merged and not dry_run,
            stop_before=ticket.cursor_at,
            cache_scope=f"schedule:{ticket.schedule_id}",
        )
    except GitHubError as exc:
        report.polled, report.status = True, exc.reason
        log.warning("poll of %s (%s) failed: %s", ticket.schedule_name, config.repo, exc)
        if not dry_run:
            pstore.settle_poll(ticket, _error_outcome(exc, now), owner)
        return report

    report.polled = True
    cursor = ticket.cursor_at
    held = [PollEvent.from_json(item) for item in ticket.held_batch]
    # A 304 hands back the last complete listing: nothing changed on GitHub, but events
    # a previous pass left behind (refused, held, unclaimed after a crash) are offered
    # again from it. Claims make the re-offers free.
    reached = listing.unchanged or scan_reached_cursor(listing.pulls, listing.complete, cursor)
    fresh = new_events(listing.pulls, repo=config.repo, config=config, cursor=cursor)
    pulls_for_held = listing.pulls
    if listing.unchanged:
        report.status = "not_modified"
    report.scan_complete = reached
    plan = plan_pass(
        held=held, fresh=fresh, pulls_for_held=pulls_for_held, config=config, scan_complete=reached
    )
    held_keys = {event.key for event in held}
    # An incomplete scan never moves the cursor: unread events may lie behind it.
    cursor_may_move = plan.released
    blocked = False
    cursor_to: datetime | None = None
    refusals = dict(ticket.refusals)
    new_held: list[PollEvent] = []
    excluded = fired = 0
    fired_from_held = False

    def handled(event: PollEvent) -> None:
        nonlocal cursor_to
        if cursor_may_move and not blocked:
            cursor_to = event.at

    for event in plan.work:
        if event.exclusion is not None:
            excluded += 1
            handled(event)
            report.decisions.append(EventDecision(event, f"excluded:{event.exclusion}"))
            continue
        if pstore.is_claimed(ticket.schedule_id, event.pr_number, event.at):
            handled(event)
            report.decisions.append(EventDecision(event, "already_claimed"))
            continue
        if fired >= config.max_fires_per_poll:
            new_held.append(event)
            blocked = True
            report.decisions.append(EventDecision(event, "held"))
            continue
        context = {**event.context, "schedule_name": ticket.schedule_name, "fired_at": iso(now)}
        try:
            argv = render_argv(ticket.command, ticket.args, context, settings.command_allowlist)
        except LiError as exc:
            count = refusals.get(event.key, 0) + 1
            if dry_run:
                report.decisions.append(EventDecision(event, f"refused:{exc.reason}"))
                blocked = True
                continue
            if count >= MAX_REFUSALS:
                refusals.pop(event.key, None)
                handled(event)
                pstore.claim_event(
                    ticket,
                    pr_number=event.pr_number,
                    occurred_at=event.at,
                    context=context,
                    argv=None,
                    owner=owner,
                    cursor_to=cursor_to,
                    status=RunStatus.REFUSED,
                    reason=exc.reason,
                )
                report.decisions.append(EventDecision(event, f"skipped:{exc.reason}"))
            else:
                refusals[event.key] = count
                blocked = True
                report.decisions.append(EventDecision(event, f"refused:{exc.reason}"))
            continue
        if dry_run:
            fired += 1
            report.decisions.append(EventDecision(event, "would_fire", argv=argv))
            continue
        move_to = event.at if cursor_may_move and not blocked else None
        claim = pstore.claim_event(
            ticket,
            pr_number=event.pr_number,
            occurred_at=event.at,
            context=context,
            argv=argv,
            owner=owner,
            cursor_to=move_to,
        )
        if move_to is not None:
            cursor_to = move_to
        if claim is None:
            report.decisions.append(EventDecision(event, "already_claimed"))
            continue
        fired += 1
        fired_from_held = fired_from_held or event.key in held_keys
        refusals.pop(event.key, None)
        report.launched.append(claim)
        report.decisions.append(EventDecision(event, "fired", argv=argv, run_id=claim.run_id))
        if launch is not None:
            launch(claim)

    report.held = len(new_held)
    if dry_run:
        return report
    fresh_ok = not listing.unchanged
    counter = capped_counter_next(
        ticket.capped_counter,
        fresh_ok_poll=fresh_ok,
        scan_complete=reached,
        confirmed_launch=fired > 0,
        held_batch=bool(new_held),
        held_batch_matching_launch=fired_from_held,
        error=False,
        polled=True,
        interrupted=False,
    )
    pstore.settle_poll(
        ticket,
        PollOutcome(
            polled=True,
            http_status=304 if listing.unchanged else 200,
            not_modified=listing.unchanged,
            cursor_to=cursor_to,
            held_batch=[event.to_json() for event in new_held],
            refusals=refusals,
            capped_counter=counter,
            events_seen=0 if listing.unchanged else len(fresh),
            excluded=excluded,
            held=len(new_held),
        ),
        owner,
    )
    return report
