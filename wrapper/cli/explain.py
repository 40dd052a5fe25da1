"""``kdev explain``: why a PR was (not) reviewed (wrapper.explain)."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import typer

from engine.errors import LiError
from engine.termsafe import echo
from wrapper.cli.common import guarded, open_github, open_ledger
from wrapper.cli.options import JsonObject, LedgerDir, Repo
from wrapper.config import check_repo

if TYPE_CHECKING:
    from engine.api import LiReader


def explain_cmd(
    repo: Repo,
    pr: int = typer.Option(..., "--pr", min=1, help="Pull request number."),
    reviews_dir: LedgerDir = None,
    as_json: JsonObject = False,
) -> None:
    """Why a PR was (not) reviewed: engine decisions, kdev outcomes, ledger, current head."""

    def work() -> None:
        # engine.api and the explain module are imported only by this command (D35).
        from engine.api import open_readonly
        from wrapper.explain import explain, render
        from wrapper.ledger.outcomes import OutcomeLog, keep_from_env

        check_repo(repo)
        _, ledger = open_ledger(reviews_dir)
        reader: LiReader | None = None
        problem = None
        try:
            reader = open_readonly(None, os.environ)
        except LiError as exc:
            problem = f"li: {exc.message} [{exc.reason}]"
        try:
            with open_github() as client:
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
            echo(line)

    guarded(work)
