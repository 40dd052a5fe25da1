"""The wrapper's error tree and outcome codes.

Why it is built this way: docs/decisions.md D6.

A *decision* is never an error: every :class:`Outcome` exits 0. Errors are for when
the wrapper itself broke, each with a distinct exit code (docs/exit-codes.md: one table
for li and kdev; 3-9 are li's, kdev's own failures are 10-19)::

    KdevError                 exit 1   unexpected failure inside kdev
    ├── ConfigError           exit 2   KDEV_CONFIG unreadable/invalid, bad arguments
    ├── FetchError            exit 10  git fetch of base or refs/pull/N/head failed
    ├── WorktreeError         exit 11  git worktree add/remove failed
    ├── ReviewerFailed        exit 12  reviewer exited non-zero or gave no VERDICT line
    ├── ReviewerTimedOut      exit 13  reviewer passed its deadline (process group killed)
    ├── ReviewerSpawnError    exit 14  reviewer could not start (missing binary, HTTP error)
    ├── LedgerError           exit 15  verdict/index/marker could not be written
    └── GitHubFailed          exit 17  PR metadata unreadable: github_auth (401/403/404),
                                       github_unavailable (5xx, timeout, network, rate
                                       limit), github_malformed (a body kdev cannot parse)

The message is one line; ``reason`` is the stable code shared by logs, JSON and docs.
"""

from __future__ import annotations

import enum
from typing import Any

from engine.errors import LiError


class Outcome(enum.StrEnum):
    """What ``kdev review-pr`` decided. Every outcome exits 0."""

    REVIEWED = "reviewed"  # a reviewer leg ran and a verdict file was written
    CARRIED_FORWARD = "carried_forward"  # a verdict for this patch-id existed; no leg
    SKIPPED_FORK = "skipped_fork"  # metadata says cross-repository, or the head repo is null
    SKIPPED_EMPTY_DIFF = "skipped_empty_diff"  # base...head has no changes
    SKIPPED_ALL_EXCLUDED = "skipped_all_excluded"  # every changed path is excluded (D87)
    DEFERRED_BUDGET = "deferred_budget"  # over a budget; a deferred:budget marker was written
    SKIPPED_STALE_HEAD = "skipped_stale_head"  # the PR moved on, or --head-sha cannot be had
    SKIPPED_SELF_COMMENT = "skipped_self_comment"  # --comment-id is a comment kdev posted
    DESCRIBED = "described"  # kdev describe-pr posted a description comment


class KdevError(LiError):
    """Base of every error kdev raises on purpose (message, reason, exit code).

    ``notified`` is set once a FAILURE notice for it was sent, so a run that ends with it
    sends exactly one (wrapper.review.review.review_pr sends it where no step did)."""

    exit_code = 1
    notified: bool = False

    def __init_subclass__(cls, exit_code: int | None = None, **kwargs: Any) -> None:
        """``class X(KdevError, exit_code=N)``: a kind of failure and its exit code."""
        super().__init_subclass__(**kwargs)
        if exit_code is not None:
            cls.exit_code = exit_code


class ConfigError(KdevError, exit_code=2): ...


class FetchError(KdevError, exit_code=10): ...


class WorktreeError(KdevError, exit_code=11): ...


class ReviewerFailed(KdevError, exit_code=12): ...


class ReviewerTimedOut(KdevError, exit_code=13): ...


class ReviewerSpawnError(KdevError, exit_code=14): ...


class LedgerError(KdevError, exit_code=15): ...


class GitHubFailed(KdevError, exit_code=17): ...
