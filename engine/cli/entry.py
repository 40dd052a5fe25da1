"""The ``li`` console script: the process is made non-dumpable before anything else is
imported (D66), so a token in its environment is closed to other processes of its uid
from the first moment, not only once the command line's modules have loaded."""

from __future__ import annotations


def main() -> None:
    from engine.credentials import set_non_dumpable

    set_non_dumpable()
    from engine.cli.app import app

    app()
