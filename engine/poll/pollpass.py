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

A ``mentions`` schedule runs :func:`_mentions_pass` instead: trigger events (``mention``,
``pr_opened``) classified by :mod:`engine.triggers`, claimed by dedupe key, with
forward-only watermarks instead of the cursor. A trigger event whose argv cannot be
rendered is recorded once as a ``refused`` run under its dedupe key (no retries).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from engine.config import Settings
from engine.errors import LiError
from engine.github import GitHubClient, GitHubError, PullRequest
from engine.health.assess import capped_counter_next
from engine.poll.config import GithubPollConfig, validate_poll_config
from engine.poll.decisions import record_decisions
from engine.poll.plan import (
    DEFAULT_MERGED_PAGE_LIMIT,
    DEFAULT_OPEN_PAGE_LIMIT,
    MAX_REFUSALS,
    PollEvent,
    event_context,
    iso,
    new_events,
    plan_pass,
    scan_reached_cursor,
)
from engine.schedules.argv import render_argv
from engine.store.models import RunStatus
from engine.store.pollstore import PollOutcome, PollStore, PollTicket
from engine.store.store import Claim
from engine.triggers import (
    FALLBACK_VERB,
    REASON_LOG_LEVELS,
    CommentItem,
    Decision,
    PayloadError,
    PullItem,
    Reason,
    TriggerState,
    advance_watermark,
    classify_comment,
    classify_pull,
    comment_from_payload,
    pr_opened_dedupe_key,
)

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
    # Launches the callback confirmed (the process was spawned), and claims it handed
    # back unlaunched (the engine is stopping: the pass is interrupted).
    confirmed: int = 0
    handed_back: int = 0
    retried: int = 0  # new attempts of re-offered events (engine.store.attempts)


# ``launch(claim)`` answers True when the process was spawned (a confirmed launch),
# False when the claim was handed back unlaunched (the engine is stopping), anything
# else when it was queued (confirmed later by the run's exit code).
Launcher = Callable[[Claim], object]


def _launch(launch: Launcher | None, claim: Claim, report: PassReport) -> None:
    if launch is None:
        return
    answer = launch(claim)
    if answer is True:
        report.confirmed += 1
    elif answer is False:
        report.handed_back += 1


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

    if not dry_run:
        # Events whose earlier attempt was lost or never launched go first.
        for retry in pstore.claim_retries(ticket, owner):
            report.launched.append(retry)
            report.retried += 1
            _launch(launch, retry, report)
    if config.event == "mentions":
        return _mentions_pass(
            pstore, settings, client, ticket, owner, config, report, launch=launch, dry_run=dry_run
        )
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
    # An incomplete scan never moves the cursor: unread events may lie behind it. Nor
    # does a 304: the stored first page may not hold every event the last complete scan
    # saw, and one left behind there must not be passed; the next 200 moves it.
    cursor_may_move = plan.released and not listing.unchanged
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
        if pstore.is_claimed(ticket.schedule_id, event.pr_number, event.at, event.head_sha):
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
                    head_sha=event.head_sha,
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
            head_sha=event.head_sha,
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
        _launch(launch, claim, report)

    report.held = len(new_held)
    if dry_run:
        return report
    if keep_decisions:
        record_decisions(pstore.store, ticket.schedule_id, report.decisions)
    fresh_ok = not listing.unchanged
    counter = capped_counter_next(
        ticket.capped_counter,
        fresh_ok_poll=fresh_ok,
        scan_complete=reached,
        # A claim is not a launch: only a confirmed one counts (a launch callback that
        # saw the spawn; otherwise the run's exit code confirms it later, see
        # engine.store.attempts.confirm_launch). A pass whose claims were handed back
        # unlaunched is interrupted: the counter stays unless a launch was confirmed.
        confirmed_launch=report.confirmed > 0,
        held_batch=bool(new_held),
        held_batch_matching_launch=fired_from_held,
        error=False,
        polled=True,
        interrupted=report.handed_back > 0,
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


# == event "mentions": trigger events from the pulls leg and the two comment feeds ======


@dataclass
class _Leg:
    """What one leg of a mentions pass saw: the newest timestamp, and the bound the
    watermark may not pass (an unread page, a held item). ``ok`` False: the leg failed
    or never ran, and its watermark stays."""

    ok: bool = False
    unchanged: bool = False
    seen: list[datetime] = field(default_factory=list)
    limit: datetime | None = None

    def hold_at(self, moment: datetime) -> None:
        self.limit = moment if self.limit is None else min(self.limit, moment)

    def watermark(self, current: datetime | None) -> datetime | None:
        """The leg's new watermark: forward-only, the newest seen, never past ``limit``."""
        newest = advance_watermark(current, self.seen)
        if newest is not None and self.limit is not None and self.limit < newest:
            newest = advance_watermark(current, [self.limit])
        return newest


def _log_decision(
    schedule_name: str, decision: Decision, *, pr: int, comment_id: int | None, kind: str
) -> None:
    log.log(
        REASON_LOG_LEVELS[decision.reason],
        "%s: %s on #%s%s: %s",
        schedule_name,
        kind,
        pr,
        f" (comment {comment_id})" if comment_id is not None else "",
        decision.reason.value,
        extra={"reason": decision.reason.value, "pr": pr, "comment_id": comment_id},
    )


def _mentions_pass(
    pstore: PollStore,
    settings: Settings,
    client: GitHubClient,
    ticket: PollTicket,
    owner: str,
    config: GithubPollConfig,
    report: PassReport,
    *,
    launch: Launcher | None,
    dry_run: bool,
) -> PassReport:
    """One pass of a ``mentions`` schedule (see docs/triggers.md).

    Legs in order - the pulls listing, the issue-comments feed, the review-comments
    feed - one conditional request each (plus pages). The first leg that fails ends the
    pass: it is the pass's poll error, and its watermark (and that of every later leg)
    stays. Each item is classified by :mod:`engine.triggers` and every decision logged;
    an accepted item is claimed by its dedupe key (a re-offer costs nothing) and
    launched. Over ``max_fires_per_poll`` an accepted item is ``held``: its leg's
    watermark stops at its timestamp, so the next pass offers it again.
    """
    now = pstore.store.clock()
    mentions = config.mentions
    assert mentions is not None
    scope = f"schedule:{ticket.schedule_id}"
    # A new schedule starts from the moment it was added (the seeded cursor), like the
    # pull-request events; backfill (no cursor) classifies everything there is.
    pr_mark = ticket.pr_watermark if ticket.pr_watermark is not None else ticket.cursor_at
    comments_mark = (
        ticket.comments_watermark if ticket.comments_watermark is not None else ticket.cursor_at
    )
    pulls_leg, feed_legs = _Leg(), {"issue": _Leg(), "review": _Leg()}
    error: GitHubError | None = None
    fired = rejected = seen_items = 0
    open_prs_to: list[int] | None = None
    open_prs = ticket.open_prs
    by_number: dict[int, PullRequest] = {}

    def fire(
        leg: _Leg,
        decision: Decision,
        at: datetime,
        pr_number: int,
        context: dict[str, Any],
        once_per_prefix: str | None = None,
    ) -> None:
        nonlocal fired
        assert decision.dedupe_key is not None
        context = {**context, "schedule_name": ticket.schedule_name, "fired_at": iso(now)}
        event = PollEvent(pr_number=pr_number, at=at, context=context)
        if fired >= config.max_fires_per_poll:
            leg.hold_at(at)
            report.decisions.append(EventDecision(event, "held"))
            report.held += 1
            return
        try:
            argv = render_argv(ticket.command, ticket.args, context, settings.command_allowlist)
        except LiError as exc:
            # Recorded once as a refused run under its dedupe key: no retry loop.
            report.decisions.append(EventDecision(event, f"refused:{exc.reason}"))
            if not dry_run:
                pstore.claim_trigger(
                    ticket,
                    dedupe_key=decision.dedupe_key,
                    context=context,
                    argv=None,
                    owner=owner,
                    status=RunStatus.REFUSED,
                    reason=exc.reason,
                    once_per_prefix=once_per_prefix,
                )
            return
        if dry_run:
            fired += 1
            report.decisions.append(EventDecision(event, "would_fire", argv=argv))
            return
        claim = pstore.claim_trigger(
            ticket,
            dedupe_key=decision.dedupe_key,
            context=context,
            argv=argv,
            owner=owner,
            once_per_prefix=once_per_prefix,
        )
        if claim is None:
            report.decisions.append(EventDecision(event, "already_claimed"))
            return
        fired += 1
        report.launched.append(claim)
        report.decisions.append(EventDecision(event, "fired", argv=argv, run_id=claim.run_id))
        _launch(launch, claim, report)

    def state() -> TriggerState:
        return TriggerState(
            pr_watermark=pr_mark,
            comments_watermark=comments_mark,
            open_prs=open_prs,
            handle=mentions.handle,
            allowlist=frozenset(mentions.allowlist),
        )

    # -- the pulls leg: open-PR set, PR variables, pr_opened --------------------------
    try:
        listing = client.list_pulls(
            config.repo,
            state="open",
            max_pages=page_limit(config),
            conditional=not dry_run,
            cache_scope=scope,
        )
    except GitHubError as exc:
        error = exc
    else:
        pulls_leg.ok, pulls_leg.unchanged = True, listing.unchanged
        by_number = {pr.number: pr for pr in listing.pulls}
        if listing.unchanged:
            pass  # a 304: the persisted open-PR set still holds
        elif listing.complete:
            open_prs_to = sorted(by_number)
            open_prs = frozenset(open_prs_to)
        else:
            # More open PRs than the pages read: the set would wrongly miss the rest.
            open_prs = None
            if listing.pulls:
                pulls_leg.hold_at(min(pr.updated_at for pr in listing.pulls))
        if open_prs is None:
            log.info(
                "%s: the open-PR set of %s is unknown; comments are not filtered by it",
                ticket.schedule_name,
                config.repo,
            )
        pulls_leg.seen = [pr.created_at for pr in listing.pulls]
        if mentions.pr_opened:
            for pr in sorted(listing.pulls, key=lambda p: (p.created_at, p.number)):
                item = PullItem(
                    number=pr.number,
                    state=pr.state,
                    draft=pr.draft,
                    user_login=pr.user_login,
                    user_id=pr.user_id,
                    user_type=pr.user_type,
                    created_at=pr.created_at,
                    head_sha=pr.head_sha,
                )
                decision = classify_pull(item, config.repo, state())
                _log_decision(
                    ticket.schedule_name, decision, pr=pr.number, comment_id=None, kind="pull"
                )
                if decision.reason is not Reason.NOT_FRESH:
                    seen_items += 1
                if not decision.accept:
                    rejected += decision.reason is not Reason.NOT_FRESH
                    continue
                context = {
                    **event_context(pr, config.repo, config),
                    "event": str(decision.event),
                    "verb": FALLBACK_VERB,
                }
                # The key names the head SHA; a pull opens once, whatever is pushed.
                opened = pr_opened_dedupe_key(config.repo, pr.number, "")
                fire(pulls_leg, decision, pr.created_at, pr.number, context, opened)

    # -- the comment feeds: mention --------------------------------------------------
    for kind in ("issue", "review"):
        if error is not None:
            break
        leg = feed_legs[kind]
        try:
            feed = client.list_comment_feed(
                config.repo,
                kind,
                comments_mark,
                cache_scope=f"{scope}:{kind}-comments",
                conditional=not dry_run,
            )
        except GitHubError as exc:
            error = exc
            break
        leg.ok, leg.unchanged = True, feed.unchanged
        comments: list[CommentItem] = []
        for raw in feed.items:
            try:
                comments.append(comment_from_payload(raw, "issue" if kind == "issue" else "review"))
            except PayloadError as exc:
                log.warning(
                    "%s: skipped a %s comment of %s: %s [%s]",
                    ticket.schedule_name,
                    kind,
                    config.repo,
                    exc,
                    exc.reason,
                    extra={"reason": exc.reason, "comment_id": exc.item_id},
                )
                stamp = raw.get("updated_at") if isinstance(raw, dict) else None
                if isinstance(stamp, str):
                    try:
                        moment = datetime.fromisoformat(stamp)
                    except ValueError:
                        continue
                    if moment.tzinfo is not None:
                        leg.seen.append(moment)
        if not feed.complete and feed.items:
            # The newest comments are on pages not read yet: stop at the newest read.
            read = [c.updated_at for c in comments] or leg.seen
            if read:
                leg.hold_at(max(read))
        for comment in sorted(comments, key=lambda c: (c.updated_at, c.id)):
            leg.seen.append(comment.updated_at)
            decision = classify_comment(comment, config.repo, state())
            _log_decision(
                ticket.schedule_name,
                decision,
                pr=comment.pr_number,
                comment_id=comment.id,
                kind=f"{kind} comment",
            )
            if decision.reason is not Reason.NOT_FRESH:
                seen_items += 1
            if not decision.accept:
                rejected += decision.reason is not Reason.NOT_FRESH
                continue
            pr_facts = by_number.get(comment.pr_number)
            context = (
                event_context(pr_facts, config.repo, config)
                if pr_facts is not None
                else {"repo": config.repo, "pr_number": comment.pr_number}
            )
            context.update(
                event=str(decision.event),
                comment_id=comment.id,
                comment_author=comment.user_login,
                comment_author_id=comment.user_id,
                verb=decision.verb or FALLBACK_VERB,
            )
            fire(leg, decision, comment.updated_at, comment.pr_number, context)

    report.polled = True
    legs = [pulls_leg, *feed_legs.values()]
    if error is not None:
        report.status = error.reason
        log.warning("poll of %s (%s) failed: %s", ticket.schedule_name, config.repo, error)
    elif all(leg.unchanged for leg in legs):
        report.status = "not_modified"
    if dry_run:
        return report
    record_decisions(pstore.store, ticket.schedule_id, report.decisions)
    # One comments watermark for both feeds: it moves only when both were read.
    comments_ok = all(leg.ok for leg in feed_legs.values())
    comments_to = None
    if comments_ok:
        merged = _Leg(ok=True, seen=[t for leg in feed_legs.values() for t in leg.seen])
        for leg in feed_legs.values():
            if leg.limit is not None:
                merged.hold_at(leg.limit)
        comments_to = merged.watermark(comments_mark)
    outcome = (
        _error_outcome(error, now)
        if error is not None
        else PollOutcome(
            polled=True,
            http_status=304 if report.status == "not_modified" else 200,
            not_modified=report.status == "not_modified",
        )
    )
    outcome.pr_watermark_to = pulls_leg.watermark(pr_mark) if pulls_leg.ok else None
    outcome.comments_watermark_to = comments_to
    outcome.open_prs = open_prs_to
    outcome.events_seen = seen_items
    outcome.excluded = rejected
    outcome.held = report.held
    pstore.settle_poll(ticket, outcome, owner)
    return report
