"""What a ``github_poll`` schedule hands the commands it fires (D74): the GitHub endpoint
the engine polled with, and the name of the file its token came from.

- ``GITHUB_API_URL``: always, the engine's own setting (from the variable, li's settings
  or the default ``https://api.github.com``), so a command talking to GitHub talks to
  the host that reported the event.
- ``GITHUB_TOKEN_FILE`` or ``CREDENTIALS_DIRECTORY``: the one the engine read its token
  from (engine.credentials), when neither token variable was set. These name a file;
  the command reads the token itself.

- With a GitHub App (engine.github.appconfig): its id, the name of its key file, its
  installation or repository, and ``GITHUB_APP_TOKEN_CACHE``, the shared token file the
  engine keeps (engine.github.tokencache): the command reads the engine's installation
  token from it and mints only when it has expired (issue 30).

A token *value* is never added: ``GITHUB_TOKEN`` / ``GH_TOKEN`` reach a command only when
the schedule or ``LI_ENV_PASSTHROUGH`` lists them. A listed name still wins over a
handed-over one (:func:`engine.run.runner.build_environment` applies it last).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from engine.config import Settings
from engine.credentials import (
    CREDENTIAL_NAME,
    CREDENTIALS_VARIABLE,
    TOKEN_FILE_VARIABLE,
    TOKEN_VARIABLES,
)
from engine.github.appconfig import app_environment

API_URL_VARIABLE = "GITHUB_API_URL"


def token_source_variable(environ: Mapping[str, str]) -> str | None:
    """The variable naming the file the token was read from (the order of
    :func:`engine.credentials.token_from_sources`); None for a token variable or none."""
    if any(environ.get(name) for name in TOKEN_VARIABLES):
        return None
    if environ.get(TOKEN_FILE_VARIABLE):
        return TOKEN_FILE_VARIABLE
    credentials = environ.get(CREDENTIALS_VARIABLE)
    if credentials and (Path(credentials) / CREDENTIAL_NAME).exists():
        return CREDENTIALS_VARIABLE
    return None


def github_environment(
    settings: Settings, environ: Mapping[str, str], repo: str | None = None
) -> dict[str, str]:
    """The variables a fired ``github_poll`` command gets without being listed. With many
    installations (D110) the command gets one: the event's ``repo``'s configured
    installation and its token file, else the repository itself (the command asks
    GitHub for its installation, its token file named after the repository)."""
    handed = {API_URL_VARIABLE: settings.github_api_url}
    app = settings.github_app
    if app is not None and app.many and repo:
        routed = app.routed(repo)
        one = app.for_installation(routed) if routed else app.for_repository(repo)
        if routed is None:
            safe = repo.replace("/", "_")
            one = replace(one, cache_path=app.cache_path / f"{app.app_id}-{safe}.json")
        handed.update(app_environment(one))
        return handed
    if app is not None:
        handed.update(app_environment(app))
        return handed
    source = token_source_variable(environ)
    if source is not None:
        handed[source] = environ[source]
    return handed
