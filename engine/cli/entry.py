"""The ``li`` console script: the process is made non-dumpable before anything else is
imported (D66), so a token in its environment is closed to other processes of its uid
from the first moment, not only once the command line's modules have loaded."""

from __future__ import annotations


def main() -> object:
    """What the app returns (a verb's exit code): the console script exits with it."""
    from engine.credentials import set_non_dumpable

    set_non_dumpable()
    from engine.cli.app import app

    return app()
