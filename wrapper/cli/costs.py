"""``kdev costs``: what reviews spent, by repository, PR, model and day, and what dedup
saved (wrapper.costs, D105)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Annotated, Any

import typer

from engine.termsafe import echo
from wrapper.cli.common import guarded, open_ledger
from wrapper.cli.options import JsonObject, LedgerDir
from wrapper.config import check_repo

BREAKDOWNS = (("by_repo", "repo"), ("by_pr", "pr"), ("by_model", "model"), ("by_day", "day"))
COLUMNS = ("legs", "legs_cost_unknown", "tokens_in", "tokens_out", "cached", "cost_usd")


def costs_cmd(
    repo: Annotated[str | None, typer.Option("--repo", help="OWNER/NAME (default: all).")] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since", help="Legs from this time on: a duration back (7d) or an ISO time."
        ),
    ] = None,
    reviews_dir: LedgerDir = None,
    as_json: JsonObject = False,
) -> None:
    """What reviews cost: spend by repository, PR, model and day; what dedup saved."""

    def work() -> None:
        from wrapper.cli.verdicts import parse_since
        from wrapper.costs import gather

        if repo is not None:
            check_repo(repo)
        start = None if since is None else parse_since(since, datetime.now(UTC))
        _, ledger = open_ledger(reviews_dir)
        data = gather(ledger, repo, start).to_json()
        if as_json:
            typer.echo(json.dumps(data, indent=2))
            return
        for line in render(data):
            echo(line)

    guarded(work)


def _cells(row: dict[str, Any]) -> str:
    return (
        f"${row['cost_usd']}  {row['legs']} legs ({row['legs_cost_unknown']} of unknown cost), "
        f"{row['tokens_in']} in ({row['cached']} cached), {row['tokens_out']} out"
    )


def render(data: dict[str, Any]) -> list[str]:
    """The text form of a :class:`wrapper.costs.CostReport`'s JSON."""
    lines = [f"since {data['since'] or 'the first leg'}: {_cells(data['total'])}"]
    for key, label in BREAKDOWNS:
        if not data[key]:
            continue
        lines.append(f"{key.replace('_', ' ')}:")
        for row in data[key]:
            name = f"{row['repo']} #{row['pr']}" if label == "pr" else str(row[label])
            lines.append(f"  {name}  {_cells(row)}")
    for saving in data["saved"]:
        saved = saving["saved_usd"]
        worth = "unknown (no leg of known cost)" if saved is None else f"${saved}"
        lines.append(
            f"saved in {saving['repo']}: {saving['legs_not_run']} legs not run (carried "
            f"forward), {worth}"
        )
    return lines
