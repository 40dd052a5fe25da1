"""The kdev command line. Subcommands arrive with the review-wrapper issue."""

from __future__ import annotations

import typer

from wrapper import __version__

app = typer.Typer(
    name="kdev",
    help="Review wrapper for the li engine: decides whether a PR review runs, and runs it.",
    no_args_is_help=True,
    add_completion=False,
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"kdev {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: bool = typer.Option(
        False,
        "--version",
        callback=_print_version,
        is_eager=True,
        help="Print the version and exit.",
    ),
) -> None:
    """kdev: the review wrapper."""
