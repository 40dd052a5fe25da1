"""(c) the health section: review schedules that are stale, blind or overdue, missing
schedules, and a repository whose daily budget is spent while it has un-reviewed heads."""

from __future__ import annotations

from collections.abc import Sequence

from wrapper.notify import Notification
from wrapper.sweep.context import SweepContext
from wrapper.sweep.decide import BUDGET_WINDOW, repo_budget_spent, schedule_problems
from wrapper.sweep.healthscope import (
    default_review_schedules,
    poll_schedules_by_repo,
    read_schedule_health,
)
from wrapper.sweep.report import HealthProblem, RepoReport


def default_schedules(ctx: SweepContext) -> tuple[list[str], list[HealthProblem]]:
    """The default health scope (wrapper.sweep.healthscope), and a line per unwatched repo."""
    by_repo = poll_schedules_by_repo(ctx.config.health.database_url, ctx.environ)
    repos = [entry.repo for entry in ctx.config.repositories]
    names, unwatched = default_review_schedules(repos, by_repo)
    return names, [
        HealthProblem(
            "schedule_missing", repo, "no github_poll schedule watches it; reviews never fire"
        )
        for repo in unwatched
    ]


def _unreadable(exc: Exception) -> HealthProblem:
    reason = getattr(exc, "reason", type(exc).__name__)
    return HealthProblem("health_unreadable", "li", f"{exc} [{reason}]")


def schedule_section(ctx: SweepContext) -> list[HealthProblem]:
    """The review schedules' lines; an unreadable li database is a line, not a crash."""
    problems: list[HealthProblem] = []
    names = ctx.config.health.review_schedules
    if names is None:  # the default: every github_poll schedule of a configured repo
        try:
            names, problems = default_schedules(ctx)
        except Exception as exc:  # the section says so; the sweep itself goes on
            problems.append(_unreadable(exc))
    if names:
        reader = ctx.schedule_health or read_schedule_health(
            ctx.config.health.database_url, ctx.environ
        )
        try:
            problems += schedule_problems(names, reader(names))
        except Exception as exc:  # the section says so; the sweep itself goes on
            problems.append(_unreadable(exc))
    return problems


def budget_section(ctx: SweepContext, repos: Sequence[RepoReport]) -> list[HealthProblem]:
    """A line per repository whose daily budget is spent while heads wait for review."""
    problems: list[HealthProblem] = []
    now = ctx.clock()
    for repo in repos:
        if repo.error is not None or not repo.unreviewed:
            continue
        legs = ctx.ledger.legs_since(repo.repo, now - BUDGET_WINDOW)
        if repo_budget_spent(ctx.kdev.budgets, legs, now):
            prs = ", ".join(f"#{n}" for n in repo.unreviewed)
            problems.append(
                HealthProblem(
                    "budget_exhausted",
                    repo.repo,
                    f"daily_legs_per_repo spent ({len(legs)}/"
                    f"{ctx.kdev.budgets.daily_legs_per_repo}) with un-reviewed heads: {prs}",
                )
            )
    return problems


def collect_health(ctx: SweepContext, repos: Sequence[RepoReport]) -> list[HealthProblem]:
    """The health section: review schedules, spent budgets with un-reviewed heads."""
    return schedule_section(ctx) + budget_section(ctx, repos)


def health_notification(problems: Sequence[HealthProblem]) -> Notification:
    """``PR sweep: pipeline health``: one line per problem."""
    return Notification(
        subject="PR sweep: pipeline health",
        body="\n".join(f"{p.code}: {p.subject}: {p.message}" for p in problems),
        fields={"outcome": "health", "count": len(problems)},
    )
