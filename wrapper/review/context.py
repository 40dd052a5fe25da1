"""What ``kdev review-pr`` and ``describe-pr`` are given and what they decide: the
request, the context (everything from outside, passed in) and the report; and the one
way they send a notice."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, Unpack

import httpx

from engine.github import GitHubClient
from wrapper.config import KdevConfig, NotifyTarget
from wrapper.errors import Outcome
from wrapper.jsonform import JsonForm, PrHead
from wrapper.leakscan import known_secrets
from wrapper.ledger.ledger import Ledger
from wrapper.notify import Notification, route, send
from wrapper.post import PostingContext
from wrapper.review.sandbox import Sandbox
from wrapper.usage import UsageMeter

if TYPE_CHECKING:
    from wrapper.review.incremental import IncrementalRound

log = logging.getLogger("kdev.review")


@dataclass(frozen=True)
class ReviewRequest(PrHead):
    """What the engine fired: ``kdev review-pr --repo R --pr N --head-sha SHA ...``;
    ``head_sha`` "" (no --head-sha): the PR's current head, read in step 1."""

    checkout: Path
    pr_url: str | None = None
    author: str | None = None
    force: bool = False
    comment_id: int | None = None  # the comment that summoned this run (a mention)
    notify_to: str | None = None  # --notify-to: a recipient of KDEV_CONFIG (wins)

    def report(self, outcome: Outcome, **decided: Unpack[Decided]) -> ReviewReport:
        """The :class:`ReviewReport` of ``outcome`` for this request's repo, PR and head."""
        return ReviewReport(outcome, self.repo, self.pr, self.head_sha, **decided)


class Decided(TypedDict, total=False):
    """The rest of a :class:`ReviewReport`, by name (its fields hold the defaults)."""

    patch_id: str | None
    verdict: str | None
    artifact: str | None
    detail: str


@dataclass(frozen=True)
class ReviewReport(JsonForm):
    """The decision, printed as one JSON line with ``--json``."""

    outcome: Outcome
    repo: str
    pr: int
    head_sha: str
    patch_id: str | None = None
    verdict: str | None = None
    artifact: str | None = None
    detail: str = ""
    # What the merge gate (wrapper.review.merge_gate, D85) set on the head, when it is on.
    merge_gate: dict[str, str] | None = None


@dataclass
class ReviewContext:
    """Everything the workflow needs from outside, passed in (no globals)."""

    config: KdevConfig
    ledger: Ledger
    github: GitHubClient
    environ: Mapping[str, str]
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    reviewer_transport: httpx.BaseTransport | None = None
    notify_transport: httpx.BaseTransport | None = None
    # Where command reviewers run; None: resolved from the config by leg_worktree.
    sandbox: Sandbox | None = None
    # The schedule's own targets (a repos.yaml entry's notify when the sweep retries a
    # deferral); None: routed by wrapper.notify.route.
    schedule_notify: list[NotifyTarget] | None = None
    # The usage of this run's reviewer legs, recorded with the round (D103).
    meter: UsageMeter = field(default_factory=UsageMeter)
    # This round's part in the PR's findings history (D91); set in step 4 when it applies.
    incremental: IncrementalRound | None = None

    def posting(self, repo: str, pr: int) -> PostingContext:
        """What posting on ``repo`` #``pr`` takes, from this context."""
        return PostingContext(self.github, self.ledger, self.config, self.environ, repo, pr)


def targets_for(ctx: ReviewContext, req: ReviewRequest) -> list[NotifyTarget]:
    """Where ``req``'s notices go (:func:`wrapper.notify.route`): the schedule's recipient,
    else the PR author's, else the global targets."""
    return route(
        ctx.config,
        req.repo,
        req.author,
        notify_to=req.notify_to,
        schedule_targets=ctx.schedule_notify,
    )


def notify(ctx: ReviewContext, req: ReviewRequest, note: Notification) -> None:
    """Sends ``note`` to ``req``'s targets; a failed target is logged, never raised."""
    for problem in send(
        targets_for(ctx, req),
        note,
        environ=ctx.environ,
        transport=ctx.notify_transport,
        secrets=known_secrets(ctx.config, ctx.environ),
    ):
        log.warning("notification failed: %s", problem)
