"""What every kdev verb shares: the root callback (logging, redaction, ``--config``),
error mapping to exit codes, opening the ledger, and the posting context of an
author-loop verb.

Every error prints one line ``error: <message> [<reason_code>]`` and exits with the code
of its class (docs/wrapper.md). Every decision of ``review-pr`` exits 0.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import typer

from engine.clikit import LogFormat, LogLevel, configure_logging, version_option
from engine.clikit import guarded as clikit_guarded
from engine.termsafe import echo
from wrapper import __version__
from wrapper.config import check_repo, load_config, resolve_reviews_dir
from wrapper.config_env import github_settings
from wrapper.credentials import harden_process, kdev_environ
from wrapper.errors import ConfigError, KdevError
from wrapper.leakscan import known_secrets
from wrapper.ledger.ledger import Ledger
from wrapper.logredact import REDACTOR
from wrapper.logredact import install as install_log_redaction

if TYPE_CHECKING:
    from engine.github import GitHubClient
    from wrapper.post import PostingContext

T = TypeVar("T")


class Result(Protocol):
    """One result of a posting verb: its ``--json`` form."""

    def to_json(self) -> dict[str, Any]: ...


R = TypeVar("R", bound=Result)


def open_github() -> GitHubClient:
    """The GitHub client of this process, from kdev's environment (``Settings``' GitHub
    fields, read by :func:`wrapper.config_env.github_settings`).

    The client (httpx) is imported here, when a command talks to GitHub, not when the
    command line is built (D35); engine.config (pydantic-settings) only when the
    environment needs its reader to decide (issue 19).
    """
    from engine.github import github_client

    # kdev exports no metrics (its outcomes go to the textfile, wrapper.metrics), so the
    # engine's rate-limit gauges, and prometheus_client, stay out of the process.
    return github_client(github_settings(kdev_environ()), record_rates=False)


def guarded(work: Callable[[], T]) -> T:
    """One line per error, a distinct exit code per class, never a traceback. An engine
    error (settings read through the engine) is a configuration error here."""
    return clikit_guarded(
        work, exit_code=lambda exc: exc.exit_code if isinstance(exc, KdevError) else 2
    )


def main(
    version: bool = version_option(f"kdev {__version__}"),
    config: Path | None = typer.Option(
        None, "--config", help="The kdev.yaml to use (default: $KDEV_CONFIG)."
    ),
    log_format: LogFormat = typer.Option(
        LogFormat.TEXT, "--log-format", help="text, or json: one object a line on stderr."
    ),
    log_level: LogLevel = typer.Option(
        LogLevel.INFO, "--log-level", help="debug also logs each HTTP request."
    ),
) -> None:
    """kdev: the review wrapper."""
    harden_process()
    global _config_path
    _config_path = str(config) if config is not None else None
    configure_logging(log_level.value, log_format.value)
    install_log_redaction()
    REDACTOR.add([kdev_environ().get("GITHUB_TOKEN", "")])


# ``kdev --config PATH``; None: the KDEV_CONFIG variable (load_config's default).
_config_path: str | None = None


def config_path() -> str | None:
    """The kdev.yaml path: ``--config`` first, then ``KDEV_CONFIG``."""
    return _config_path if _config_path is not None else os.environ.get("KDEV_CONFIG")


def open_ledger(reviews_dir: str | None) -> tuple[Any, Ledger]:
    config = load_config(config_path())
    REDACTOR.add(known_secrets(config, kdev_environ()))
    directory = resolve_reviews_dir(config, reviews_dir)
    return config, Ledger(directory)


@contextmanager
def posting_context(repo: str, pr: int, reviews_dir: str | None) -> Iterator[PostingContext]:
    """The :class:`wrapper.post.PostingContext` of one author-loop verb on ``repo``
    #``pr``: the repository checked, then the config and ledger opened, kdev's
    environment, and the GitHub client (closed on leaving)."""
    from wrapper.post import PostingContext

    check_repo(repo)
    config, ledger = open_ledger(reviews_dir)
    with open_github() as client:
        yield PostingContext(client, ledger, config, kdev_environ(), repo, pr)


def posting_verb(
    repo: str,
    pr: int,
    reviews_dir: str | None,
    as_json: bool,
    key: str,
    run: Callable[[PostingContext], Sequence[R]],
    line: Callable[[R], str],
) -> None:
    """An author-loop verb that acts on ``repo`` #``pr``: ``run`` on its
    :func:`posting_context`, then ``{"repo", "pr", key: [results]}`` with ``--json``, or
    one ``line`` a result."""

    def work() -> None:
        with posting_context(repo, pr, reviews_dir) as ctx:
            done = run(ctx)
        if as_json:
            typer.echo(json.dumps({"repo": repo, "pr": pr, key: [d.to_json() for d in done]}))
            return
        for item in done:
            echo(line(item))

    guarded(work)


def one_of(option: T | None, argument: T | None, flag: str) -> T:
    """A value given as ``flag`` or positionally (not both, not neither)."""
    if option is not None and argument is not None and option != argument:
        raise ConfigError(f"{flag} and the positional value differ", "usage_error")
    value = option if option is not None else argument
    if value is None:
        raise ConfigError(f"{flag} is required", "usage_error")
    return value
