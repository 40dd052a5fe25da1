"""``kdev verdicts`` and ``kdev verdict show``: read the ledger and its verdict files."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import typer

from engine.durations import parse_duration
from engine.errors import LiError
from engine.termsafe import echo
from wrapper.cli.common import guarded, one_of, open_ledger
from wrapper.config import check_repo
from wrapper.errors import ConfigError, KdevError
from wrapper.ledger.listing import Query, decode_cursor


def parse_since(text: str, now: datetime) -> datetime:
    """``--since``: a duration back from now (``90m``, ``2d``) or an ISO 8601 time with a
    zone (``2026-01-31T12:00:00Z``); else ConfigError ``invalid_since``."""
    try:
        return now - timedelta(seconds=parse_duration(text, what="--since"))
    except LiError:
        pass
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise ConfigError(
            f"--since {text!r} is neither a duration (90m, 2d) nor a time with a zone "
            "(2026-01-31T12:00:00Z)",
            "invalid_since",
        )
    return moment.astimezone(UTC)


def verdicts_cmd(
    repo: str | None = typer.Option(None, "--repo", help="OWNER/NAME."),
    pr: int | None = typer.Option(None, "--pr", help="Pull request number."),
    since: str | None = typer.Option(
        None, "--since", help="Rows from this time on: a duration back (2d) or an ISO time."
    ),
    limit: int | None = typer.Option(
        None, "--limit", help="At most N rows; the next page's --cursor goes to stderr."
    ),
    cursor: str | None = typer.Option(None, "--cursor", help="Continue after this page."),
    reviews_dir: str | None = typer.Option(None, "--reviews-dir", help="Ledger directory."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON list."),
) -> None:
    """The ledger: reviewed and carried heads, and pending deferrals."""

    def work() -> None:
        _, ledger = open_ledger(reviews_dir)
        if repo is not None:
            check_repo(repo)
        query = Query(
            repo=repo,
            pr=pr,
            since=None if since is None else parse_since(since, datetime.now(UTC)),
            limit=limit,
            after=None if cursor is None else decode_cursor(cursor),
        )
        page = ledger.page_ledger(query)
        if page.next_cursor is not None:
            echo(f"more: --cursor {page.next_cursor}", err=True)
        data = [row.to_json() for row in page.rows]
        if as_json:
            typer.echo(json.dumps(data, indent=2))
            return
        if not data:
            echo("no verdicts")
            return
        from engine.tables import print_table  # rich, only for a table

        headers = ["repo", "pr", "head_sha", "patch_id", "verdict", "reviewed_at", "kind"]
        cells = [[str(d.get(h) if d.get(h) is not None else "-") for h in headers] for d in data]
        for row in cells:
            row[2] = row[2][:12]
            row[3] = row[3][:12]
        print_table(headers, cells, typer.get_text_stream("stdout"))

    guarded(work)


def verdict_show(
    repo_arg: str | None = typer.Argument(None, metavar="[REPO]", help="Same as --repo."),
    pr_arg: int | None = typer.Argument(None, metavar="[PR]", help="Same as --pr."),
    repo_opt: str | None = typer.Option(None, "--repo", help="OWNER/NAME."),
    pr_opt: int | None = typer.Option(None, "--pr", help="Pull request number."),
    head: str | None = typer.Option(None, "--head", help="The verdict of this head."),
    reviews_dir: str | None = typer.Option(None, "--reviews-dir", help="Ledger directory."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Print one verdict file (of --head, else of the newest reviewed head)."""

    def work() -> None:
        repo = one_of(repo_opt, repo_arg, "--repo")
        pr = one_of(pr_opt, pr_arg, "--pr")
        _, ledger = open_ledger(reviews_dir)
        check_repo(repo)
        index = ledger.read_index(repo, pr)
        if head is not None:
            entry = index.get(head)
            if entry is None:
                raise KdevError(f"no verdict for head {head} of {repo} #{pr}", "verdict_not_found")
        elif index:
            entry = max(index.values(), key=lambda e: e.reviewed_at)
        else:
            raise KdevError(f"no verdict for {repo} #{pr}", "verdict_not_found")
        path = ledger.verdict_path(repo, pr, entry.patch_id)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            raise KdevError(f"verdict file {path} is missing", "verdict_not_found") from None
        if not as_json:
            echo(text, nl=False)
            return
        heads = sorted(sha for sha, e in index.items() if e is entry)
        shown = {
            "repo": repo,
            "pr": pr,
            "head_sha": head if head is not None else (heads[0] if heads else None),
            "patch_id": entry.patch_id,
            "verdict": entry.verdict,
            "reviewed_at": entry.reviewed_at.isoformat(),
            "carried_from": entry.carried_from,
            "path": str(path),
            "text": text,
        }
        typer.echo(json.dumps(shown))

    guarded(work)


verdict_app = typer.Typer(name="verdict", help="Read verdict files.", no_args_is_help=True)
verdict_app.command("show")(verdict_show)
