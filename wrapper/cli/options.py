"""The options many kdev verbs share, each named once as a typer ``Annotated`` alias:
``--repo``, ``--pr``, ``--reviews-dir``, ``--json``, ``--node``, ``--interval``,
``--checkout`` and ``--comment-id``. A verb
declares ``repo: Repo`` instead of repeating the option's flag and help."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

Repo = Annotated[str, typer.Option("--repo", help="OWNER/NAME.")]
Pr = Annotated[int, typer.Option("--pr", help="Pull request number.")]
LedgerDir = Annotated[str | None, typer.Option("--reviews-dir", help="Ledger directory.")]
JsonObject = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]
JsonLine = Annotated[bool, typer.Option("--json", help="Print one JSON line.")]
ThreadNode = Annotated[str, typer.Option("--node", help="Node id of the thread's first comment.")]
Interval = Annotated[
    str, typer.Option("--interval", help="auto (by PR size) or a duration, e.g. 90s or 5m.")
]
Checkout = Annotated[Path | None, typer.Option("--checkout", help="Repository checkout.")]
AskingComment = Annotated[
    str | None,
    typer.Option("--comment-id", help="The comment that asked for this run (empty: none)."),
]
