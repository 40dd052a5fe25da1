"""``kdev pr-sweep``: run the sweep (wrapper.sweep.sweep) and print its report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from engine.termsafe import echo
from wrapper.cli.common import guarded, open_github, open_ledger
from wrapper.credentials import kdev_environ

if TYPE_CHECKING:
    from wrapper.sweep.report import SweepReport


def pr_sweep_cmd(
    repos_config: Path = typer.Option(..., "--repos-config", help="The repos config (YAML)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Decide and report; change nothing."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    retry_deferred: bool = typer.Option(
        True, "--retry-deferred/--no-retry-deferred", help="Review reopened deferrals."
    ),
    reviews_dir: str | None = typer.Option(None, "--reviews-dir", help="Ledger directory."),
) -> None:
    """Update clean branches, send the approval digest, report the poller's health."""

    def work() -> None:
        # Imported here: the sweep reads health from the engine's database, and the
        # other commands (review-pr's carry-forward above all) must not pay for importing
        # SQLAlchemy (issue 19, docs/decisions.md).
        from wrapper.sweep.config import load_sweep_config
        from wrapper.sweep.sweep import SweepContext, run_sweep

        config, ledger = open_ledger(reviews_dir)
        sweep_config = load_sweep_config(repos_config)
        with open_github() as client:
            ctx = SweepContext(
                config=sweep_config,
                kdev=config,
                ledger=ledger,
                github=client,
                environ=kdev_environ(),
                dry_run=dry_run,
                retry_deferred=retry_deferred,
            )
            report = run_sweep(ctx)
        if as_json:
            typer.echo(json.dumps(report.to_json()))
        else:
            for line in sweep_summary(report):
                echo(line)

    guarded(work)


def sweep_summary(report: SweepReport) -> list[str]:
    """The human summary of a sweep, one line per fact."""
    lines = ["pr-sweep (dry run)" if report.dry_run else "pr-sweep"]
    for repo in report.repos:
        if repo.error is not None:
            lines.append(f"{repo.repo}: error: {repo.error} [{repo.reason}]")
            continue
        lines.append(f"{repo.repo}: {len(repo.updates)} update(s), {len(repo.digest)} waiting")
        for update in repo.updates:
            new = f" -> {update.new_head[:12]}" if update.new_head else ""
            detail = f" ({update.detail})" if update.detail else ""
            lines.append(f"  #{update.pr} {update.outcome.value}{new}{detail}")
        for deferred in repo.deferred:
            retried = f", retried: {deferred.retried}" if deferred.retried else ""
            lines.append(
                f"  #{deferred.pr} deferred:{deferred.budget} {deferred.head_sha[:12]}{retried}"
            )
    sent = "sent" if report.digest_sent else "not sent"
    lines.append(f"approval digest: {len(report.digest)} PR(s), {sent}")
    for row in report.digest:
        lines.append(f"  {row.repo} #{row.pr} {row.head_sha[:12]} {row.verdict_line}")
    if report.health:
        lines.append("health:")
        lines.extend(f"  {p.code}: {p.subject}: {p.message}" for p in report.health)
    return lines
