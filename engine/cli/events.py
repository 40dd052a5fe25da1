"""``li schedule events``: the decisions github_poll passes took per event.

Registered onto ``li schedule`` by :mod:`engine.cli.app`.
The ``--json`` form is a public interface (docs/cli.md): other programs (the wrapper's
``explain``) read the engine's side of a pull request through it, never its tables.
"""

from __future__ import annotations

from datetime import timedelta

import typer

from engine.cli.common import emit_json, github_schedule, guarded, iso, open_store, settings, table
from engine.durations import MAX_DURATION_SECONDS, parse_duration
from engine.poll.decisions import list_decisions
from engine.termsafe import echo


def schedule_events(
    name: str = typer.Argument(..., help="A github_poll schedule."),
    pr: int | None = typer.Option(None, "--pr", min=1, help="Only this pull request."),
    since: str | None = typer.Option(None, "--since", help="Only decisions this recent (2h, 7d)."),
    limit: int = typer.Option(1000, "--limit", min=1, max=100_000),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Each event a poll pass saw and what it decided: fired, excluded, held, refused."""

    def work() -> None:
        store = open_store(settings())
        github_schedule(store, name)
        start = None
        if since is not None:
            seconds = parse_duration(since, what="--since", maximum=MAX_DURATION_SECONDS)
            start = store.clock() - timedelta(seconds=seconds)
        rows = list_decisions(store, name, pr=pr, since=start, limit=limit)
        if as_json:
            emit_json([row.to_json() for row in rows])
            return
        if not rows:
            echo(f"{name}: no decisions recorded" + (f" for #{pr}" if pr else ""))
            return
        table(
            ["decided", "pr", "head", "event at", "decision", "detail", "run"],
            [
                [
                    iso(row.decided_at),
                    f"#{row.pr_number}",
                    row.head_sha[:12] or None,
                    iso(row.occurred_at),
                    row.decision,
                    row.detail,
                    row.run_id,
                ]
                for row in rows
            ],
        )

    guarded(work)
