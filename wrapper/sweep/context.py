"""What the sweep needs from outside, passed in (no globals), and its notifications."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from wrapper.notify import Notification, route, send

if TYPE_CHECKING:
    import httpx

    from engine.api import ScheduleHealthRow
    from engine.github.client import GitHubClient
    from wrapper.config import KdevConfig, NotifyTarget
    from wrapper.ledger.ledger import Ledger
    from wrapper.sweep.config import RepositoryEntry, SweepConfig


@dataclass
class SweepContext:
    """Everything the sweep needs from outside, passed in (no globals).

    ``schedule_health`` reads the health of the named li schedules (default:
    :func:`wrapper.sweep.healthscope.read_schedule_health` on the configured database);
    it may raise, which becomes a ``health_unreadable`` line.
    """

    config: SweepConfig
    kdev: KdevConfig
    ledger: Ledger
    github: GitHubClient
    environ: Mapping[str, str]
    dry_run: bool = False
    retry_deferred: bool = True
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))
    notify_transport: httpx.BaseTransport | None = None
    reviewer_transport: httpx.BaseTransport | None = None
    schedule_health: Callable[[Sequence[str]], list[ScheduleHealthRow]] | None = None


def targets_for(
    ctx: SweepContext, entry: RepositoryEntry, author: str | None = None
) -> list[NotifyTarget]:
    """Where a notice about ``entry``'s repository goes (:func:`wrapper.notify.route`): the
    entry's own ``notify``, else kdev.yaml's ``repositories.<repo>.notify_to``, else (for
    a notice about one PR, ``author`` given) its author's recipient, else ``notify``."""
    return route(ctx.kdev, entry.repo, author, schedule_targets=entry.notify)


def send_to(ctx: SweepContext, targets: Sequence[NotifyTarget], note: Notification) -> list[str]:
    """Send ``note`` to ``targets``; the problems, one line each (never raises)."""
    return send(targets, note, environ=ctx.environ, transport=ctx.notify_transport)
