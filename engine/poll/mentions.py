"""One pass of a github_poll schedule in mode ``mentions`` (see docs/triggers.md).

Legs in order - the pulls listing, the issue-comments feed, the diff-comments feed
(comments on diff lines, ``/pulls/comments``) - one conditional request each (plus
pages). The first leg that fails ends the pass: it is the pass's poll error, and its
watermark (and that of every later leg) stays. Each item is classified by
:mod:`engine.triggers` and every decision logged; an accepted item is claimed by its
dedupe key (a re-offer costs nothing) and launched. Over ``max_fires_per_poll`` an
accepted item is ``held``: its leg's watermark stops at its timestamp, so the next pass
offers it again. A trigger event whose argv cannot be rendered is recorded once as a
``refused`` run under its dedupe key (no retries).

The pass is a :class:`MentionsPass`: its state is attributes, each step a method; the
steps it shares with the other modes are in :mod:`engine.poll.steps`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from engine.errors import LiError
from engine.fields import same_fields
from engine.github import GitHubError, PullListing, PullRequest
from engine.poll.config import MentionsConfig
from engine.poll.decisions import record_decisions
from engine.poll.plan import PollEvent, event_context
from engine.poll.steps import Pass, PassReport, error_outcome, log, page_limit
from engine.store.models import RunStatus
from engine.store.pollstore import PollOutcome
from engine.store.store import Claim
from engine.triggers import (
    REASON_LOG_LEVELS,
    CommentItem,
    CommentKind,
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

FEEDS: tuple[CommentKind, ...] = ("issue", "diff")
"""The comment feeds a pass reads, in order."""


@dataclass
class Leg:
    """What one leg of a mentions pass saw: the newest timestamp, and the bound the
    watermark may not pass (an unread page, a held item). ``ok`` False: the leg failed
    or never ran, and its watermark stays."""

    ok: bool = False
    unchanged: bool = False
    seen: list[datetime] = field(default_factory=list)
    limit: datetime | None = None

    def hold_at(self, moment: datetime) -> None:
        """The watermark may not pass ``moment``."""
        self.limit = moment if self.limit is None else min(self.limit, moment)

    def watermark(self, current: datetime | None) -> datetime | None:
        """The leg's new watermark: forward-only, the newest seen, never past ``limit``."""
        newest = advance_watermark(current, self.seen)
        if newest is not None and self.limit is not None and self.limit < newest:
            newest = advance_watermark(current, [self.limit])
        return newest


def log_decision(
    schedule_name: str, decision: Decision, *, pr: int, comment_id: int | None, kind: str
) -> None:
    """Log one classification, accepted or not, at DEBUG (:data:`REASON_LOG_LEVELS`)
    with structured fields: ``trigger`` (the item's kind), ``reason``, ``pr``,
    ``comment_id``."""
    log.log(
        REASON_LOG_LEVELS[decision.reason],
        "%s: %s on #%s%s: %s",
        schedule_name,
        kind,
        pr,
        f" (comment {comment_id})" if comment_id is not None else "",
        decision.reason.value,
        extra={
            "trigger": kind,
            "reason": decision.reason.value,
            "pr": pr,
            "comment_id": comment_id,
        },
    )


def _payload_time(raw: object) -> datetime | None:
    """The aware ``updated_at`` of an unreadable feed item, when it has one."""
    stamp = raw.get("updated_at") if isinstance(raw, dict) else None
    if not isinstance(stamp, str):
        return None
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


@dataclass
class MentionsPass(Pass):
    """One pass of a ``mentions`` schedule (see the module doc)."""

    error: GitHubError | None = None
    pulls_leg: Leg = field(default_factory=Leg)
    feed_legs: dict[str, Leg] = field(default_factory=lambda: {kind: Leg() for kind in FEEDS})
    rejected: int = 0
    seen_items: int = 0
    open_prs_to: list[int] | None = None
    by_number: dict[int, PullRequest] = field(default_factory=dict)
    pr_mark: datetime | None = field(init=False, default=None)
    comments_mark: datetime | None = field(init=False, default=None)
    open_prs: frozenset[int] | None = field(init=False, default=None)
    scope: str = field(init=False, default="")

    def __post_init__(self) -> None:
        ticket = self.ticket
        # A new schedule starts from the moment it was added (the seeded cursor), like
        # the pull-request events; backfill (no cursor) classifies everything there is.
        self.pr_mark = ticket.pr_watermark if ticket.pr_watermark is not None else ticket.cursor_at
        self.comments_mark = (
            ticket.comments_watermark if ticket.comments_watermark is not None else ticket.cursor_at
        )
        self.open_prs = ticket.open_prs
        self.scope = f"schedule:{ticket.schedule_id}"

    @property
    def mentions(self) -> MentionsConfig:
        """The schedule's ``mentions`` block (validated present for this mode)."""
        mentions = self.config.mentions
        assert mentions is not None
        return mentions

    def run(self) -> PassReport:
        """The pulls leg, then each comment feed until one fails; then settle."""
        self.read_pulls()
        for kind in FEEDS:
            if self.error is not None:
                break
            self.read_feed(kind)
        return self.finish()

    def state(self) -> TriggerState:
        """What the classifier knows besides the item, as of now in this pass."""
        mentions = self.mentions
        return TriggerState(
            pr_watermark=self.pr_mark,
            comments_watermark=self.comments_mark,
            open_prs=self.open_prs,
            handle=mentions.handle,
            allowlist=frozenset(mentions.allowlist),
            verbs=frozenset(mentions.verbs),
            default_verb=mentions.default_verb,
            seen_pulls=frozenset(self.by_number),
        )

    def counted(self, decision: Decision) -> bool:
        """Count a classified item (not_fresh is not counted); True when accepted."""
        if decision.reason is not Reason.NOT_FRESH:
            self.seen_items += 1
        if not decision.accept:
            self.rejected += decision.reason is not Reason.NOT_FRESH
        return decision.accept

    # -- the pulls leg: open-PR set, PR variables, pr_opened ------------------------------

    def read_pulls(self) -> None:
        """Read the open pulls; classify each as a ``pr_opened`` when that is on."""
        try:
            listing = self.client.list_pulls(
                self.config.repo,
                state="open",
                max_pages=page_limit(self.config),
                conditional=not self.dry_run,
                cache_scope=self.scope,
                etag_sink=self.keep_etag,
            )
        except GitHubError as exc:
            self.error = exc
            return
        self.take_listing(listing)
        if self.mentions.pr_opened:
            for pr in sorted(listing.pulls, key=lambda p: (p.created_at, p.number)):
                self.offer_pull(pr)

    def take_listing(self, listing: PullListing) -> None:
        """The open-PR set and the pull variables from a listing."""
        leg = self.pulls_leg
        leg.ok, leg.unchanged = True, listing.unchanged
        self.by_number = {pr.number: pr for pr in listing.pulls}
        if listing.unchanged:
            pass  # a 304: the persisted open-PR set still holds
        elif listing.complete:
            self.open_prs_to = sorted(self.by_number)
            self.open_prs = frozenset(self.open_prs_to)
        else:
            # More open PRs than the pages read: the set would wrongly miss the rest.
            self.open_prs = None
            if listing.pulls:
                leg.hold_at(min(pr.updated_at for pr in listing.pulls))
        if self.open_prs is None:
            log.info(
                "%s: the open-PR set of %s is unknown; comments are not filtered by it",
                self.name,
                self.config.repo,
            )
        leg.seen = [pr.created_at for pr in listing.pulls]

    def offer_pull(self, pr: PullRequest) -> None:
        """Classify one pull as a ``pr_opened`` and fire it when accepted."""
        item = same_fields(PullItem, pr)
        decision = classify_pull(item, self.config.repo, self.state())
        log_decision(self.name, decision, pr=pr.number, comment_id=None, kind="pull")
        if not self.counted(decision):
            return
        context = {**event_context(pr, self.config.repo, self.config), "event": str(decision.event)}
        if self.mentions.default_verb is not None:
            context["verb"] = self.mentions.default_verb
        # The key names the head SHA; a pull opens once, whatever is pushed.
        opened = pr_opened_dedupe_key(self.config.repo, pr.number, "")
        self.fire(
            self.pulls_leg, decision, pr.created_at, pr.number, context, opened, pr.created_at
        )

    # -- the comment feeds: mention -------------------------------------------------------

    def read_feed(self, kind: CommentKind) -> None:
        """Read one comment feed from the comments watermark and classify its items."""
        leg = self.feed_legs[kind]
        try:
            feed = self.client.list_comment_feed(
                self.config.repo,
                kind,
                self.comments_mark,
                cache_scope=f"{self.scope}:{kind}-comments",
                conditional=not self.dry_run,
                etag_sink=self.keep_etag,
            )
        except GitHubError as exc:
            self.error = exc
            return
        leg.ok, leg.unchanged = True, feed.unchanged
        comments = self.parse_feed(feed.items, kind, leg)
        if not feed.complete and feed.items:
            # The newest comments are on pages not read yet: stop at the newest read.
            read = [c.updated_at for c in comments] or leg.seen
            if read:
                leg.hold_at(max(read))
        for comment in sorted(comments, key=lambda c: (c.updated_at, c.id)):
            leg.seen.append(comment.updated_at)
            self.offer_comment(comment, kind, leg)

    def parse_feed(self, items: list[Any], kind: CommentKind, leg: Leg) -> list[CommentItem]:
        """The readable items of a feed; an unreadable one is skipped with a warning (its
        timestamp, when it has one, still counts as seen)."""
        comments: list[CommentItem] = []
        for raw in items:
            try:
                comments.append(comment_from_payload(raw, kind))
            except PayloadError as exc:
                log.warning(
                    "%s: skipped a %s comment of %s: %s [%s]",
                    self.name,
                    kind,
                    self.config.repo,
                    exc,
                    exc.reason,
                    extra={"reason": exc.reason, "comment_id": exc.item_id},
                )
                moment = _payload_time(raw)
                if moment is not None:
                    leg.seen.append(moment)
        return comments

    def offer_comment(self, comment: CommentItem, kind: CommentKind, leg: Leg) -> None:
        """Classify one comment as a ``mention`` and fire it when accepted."""
        decision = classify_comment(comment, self.config.repo, self.state())
        log_decision(
            self.name,
            decision,
            pr=comment.pr_number,
            comment_id=comment.id,
            kind=f"{kind} comment",
        )
        if not self.counted(decision):
            return
        pr_facts = self.by_number.get(comment.pr_number)
        context = (
            event_context(pr_facts, self.config.repo, self.config)
            if pr_facts is not None
            else {"repo": self.config.repo, "pr_number": comment.pr_number}
        )
        context.update(
            event=str(decision.event),
            comment_id=comment.id,
            comment_author=comment.user_login,
            comment_author_id=comment.user_id,
        )
        if decision.verb is not None:
            context["verb"] = decision.verb
        self.fire(
            leg, decision, comment.updated_at, comment.pr_number, context, None, comment.created_at
        )

    # -- one accepted item ----------------------------------------------------------------

    def fire(
        self,
        leg: Leg,
        decision: Decision,
        at: datetime,
        pr_number: int,
        context: dict[str, Any],
        once_per_prefix: str | None = None,
        created_at: datetime | None = None,
    ) -> None:
        """Hold, refuse or claim and launch one accepted item (``created_at``: when the
        item was created, checked against the key horizon; see engine.store.keyretention)."""
        dedupe_key = decision.dedupe_key
        assert dedupe_key is not None
        context = self.fire_context(context)
        event = PollEvent(pr_number=pr_number, at=at, context=context)

        def claim_key(argv: list[str] | None, refusal: str | None = None) -> Claim | None:
            """The item's key and run row: ``running`` with ``argv``, or ``refused``."""
            return self.pstore.claim_trigger(
                self.ticket,
                dedupe_key=dedupe_key,
                context=context,
                argv=argv,
                owner=self.owner,
                status=RunStatus.RUNNING if refusal is None else RunStatus.REFUSED,
                reason=refusal,
                once_per_prefix=once_per_prefix,
                created_at=created_at,
            )

        if self.over_cap():
            leg.hold_at(at)
            self.decide(event, "held")
            self.report.held += 1
            return
        try:
            argv = self.render(context)
        except LiError as exc:
            # Recorded once as a refused run under its dedupe key: no retry loop.
            self.decide(event, f"refused:{exc.reason}")
            if not self.dry_run:
                claim_key(None, exc.reason)
            return
        if self.dry_run:
            self.would_fire(event, argv)
            return
        claim = claim_key(argv)
        if claim is None:
            self.decide(event, "already_claimed")
            return
        self.launched(event, claim, argv)

    # -- settle ---------------------------------------------------------------------------

    def finish(self) -> PassReport:
        """The pass's status, decisions and watermarks, written (not in a dry run)."""
        report = self.report
        report.polled = True
        if self.error is not None:
            self.log_failure(self.error)
        elif all(leg.unchanged for leg in [self.pulls_leg, *self.feed_legs.values()]):
            report.status = "not_modified"
        if self.dry_run:
            return report
        record_decisions(self.pstore.store, self.ticket.schedule_id, report.decisions)
        outcome = (
            error_outcome(self.error, self.now)
            if self.error is not None
            else PollOutcome(
                polled=True,
                http_status=304 if report.status == "not_modified" else 200,
                not_modified=report.status == "not_modified",
            )
        )
        leg = self.pulls_leg
        outcome.pr_watermark_to = leg.watermark(self.pr_mark) if leg.ok else None
        outcome.comments_watermark_to = self.comments_watermark()
        outcome.open_prs = self.open_prs_to
        outcome.events_seen = self.seen_items
        outcome.excluded = self.rejected
        outcome.held = report.held
        self.settle(outcome)
        return report

    def comments_watermark(self) -> datetime | None:
        """One comments watermark for both feeds: it moves only when both were read."""
        legs = self.feed_legs.values()
        if not all(leg.ok for leg in legs):
            return None
        merged = Leg(ok=True, seen=[moment for leg in legs for moment in leg.seen])
        for leg in legs:
            if leg.limit is not None:
                merged.hold_at(leg.limit)
        return merged.watermark(self.comments_mark)
