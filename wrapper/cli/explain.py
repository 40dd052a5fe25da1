"""``kdev explain``: why a PR was (not) reviewed (wrapper.explain)."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime

import typer

from engine.api import LiReader, open_readonly
from engine.config import Settings
from engine.errors import LiError
from engine.github import github_client
from wrapper.cli.common import guarded, open_ledger
from wrapper.config import check_repo
from wrapper.credentials import kdev_environ
from wrapper.explain import explain, render
from wrapper.ledger.outcomes import OutcomeLog, keep_from_env


def explain_cmd(
    repo: str = typer.Option(..., "--repo", help="OWNER/NAME."),
    pr: int = typer.Option(..., "--pr", min=1, help="Pull request number."),
    reviews_dir: str | None = typer.Option(None, "--reviews-dir", help="Ledger directory."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Why a PR was (not) reviewed: engine decisions, kdev outcomes, ledger, current head."""

    def work() -> None:
        check_repo(repo)
        _, ledger = open_ledger(reviews_dir)
        reader: LiReader | None = None
        problem = None
        try:
            reader = open_readonly(None, os.environ)
        except LiError as exc:
            problem = f"li: {exc.message} [{exc.reason}]"
        try:
            with github_client(Settings.from_env(kdev_environ())) as client:
                result = explain(
                    repo,
                    pr,
                    ledger=ledger,
                    outcomes=OutcomeLog(ledger, keep_from_env()),
                    github=client,
                    engine=reader,
                    engine_problem=problem,
                    now=datetime.now(UTC),
                )
        finally:
            if reader is not None:
                reader.close()
        if as_json:
            typer.echo(json.dumps(result.to_json()))
            return
        for line in render(result):
            typer.echo(line)

    guarded(work)
