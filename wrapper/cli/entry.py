"""The ``kdev`` console script: the process is made non-dumpable before anything else is
imported (D66); ``wrapper.credentials.harden_process`` then takes the token out of the
environment when the command starts."""

from __future__ import annotations


def main() -> object:
    """What the app returns (a verb's exit code): the console script exits with it."""
    from engine.credentials import set_non_dumpable

    set_non_dumpable()
    from wrapper.cli.app import app

    return app()
