"""``--force`` and an omitted ``--head-sha`` (issue 10 item 5).

``--force`` forgets a diff's verdict and reviews it again, but only after everything
that can fail has been checked: a reviewer is configured, the PR's metadata is readable,
the head is current, the head is fetched and its patch-id computed, the budgets allow a
leg and a concurrency slot is free. The verdict is deleted under the PR lock, right
before the leg. ``--force`` with a ``--head-sha`` that is no longer the PR's head is an
error (``ConfigError stale_head``) that deletes nothing. Without ``--head-sha`` the run
reviews the PR's current head, which is how a person types it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from engine.github import PullRequest
from wrapper.config import KdevConfig
from wrapper.errors import ConfigError
from wrapper.ledger.ledger import check_sha

if TYPE_CHECKING:
    from wrapper.review.context import ReviewRequest


def check_force_ready(config: KdevConfig) -> None:
    """``--force`` first: a run that would end in ``no_reviewer`` deletes nothing."""
    if config.reviewer is None:
        raise ConfigError("no reviewer configured in KDEV_CONFIG", "no_reviewer")


def resolve_head(req: ReviewRequest, pr: PullRequest) -> ReviewRequest:
    """``req`` with ``head_sha`` set: the given one (validated), else the PR's current
    head; and ``author``, when not given, the PR's (it routes the notices,
    :func:`wrapper.notify.route`). ``--force`` with a stale head raises ``ConfigError
    stale_head``."""
    if req.author is None and pr.user_login:
        req = replace(req, author=pr.user_login)
    if not req.head_sha:
        return replace(req, head_sha=pr.head_sha)
    check_sha(req.head_sha, "--head-sha")
    if req.force and req.head_sha != pr.head_sha:
        raise ConfigError(
            f"--force: {req.head_sha} is not the current head of {req.repo} #{req.pr} "
            f"({pr.head_sha}); nothing was deleted",
            "stale_head",
        )
    return req
