"""kdev's own hardening at start: non-dumpable, and the GitHub token out of its environment.

:func:`harden_process` runs first in every kdev command:

1. ``prctl(PR_SET_DUMPABLE, 0)``: no core dumps, and ``/proc/<kdev>/environ``, ``mem``,
   ``cmdline``-adjacent files and ptrace are closed to every other process of the same
   uid (a reviewer in the fallback sandbox among them).
2. The token is read into memory from the first source that has one, and every token
   variable is removed from ``os.environ``, so no child (git, a notification command,
   the reviewer) inherits it:

   - ``GITHUB_TOKEN``, else ``GH_TOKEN`` (the variables);
   - ``GITHUB_TOKEN_FILE``: a file holding the token (surrounding whitespace dropped);
   - ``$CREDENTIALS_DIRECTORY/github_token``: a systemd credential
     (``LoadCredential=github_token:/path`` in the unit).

   An unreadable or empty ``GITHUB_TOKEN_FILE`` is ConfigError ``token_file_unreadable``.

The non-dumpable call and the token's sources are li's (``engine.credentials``, D66):
one implementation for both programs. The token is then handed around in memory only
(:func:`kdev_environ`: a dict that the workflow reads ``GITHUB_TOKEN`` from, for the API
client and the secret canary).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping

from engine.credentials import (
    TOKEN_FILE_VARIABLE,
    TOKEN_VARIABLES,
    set_non_dumpable,
    token_from_sources,
)
from engine.errors import ConfigError as EngineConfigError
from wrapper.errors import ConfigError

__all__ = ["harden_process", "kdev_environ", "set_non_dumpable", "take_github_token"]


def take_github_token(environ: MutableMapping[str, str]) -> str | None:
    """The GitHub token from the sources in the module doc (first wins), with every
    token variable removed from ``environ``; None when no source has one."""
    try:
        token = token_from_sources(environ)
    except EngineConfigError as exc:
        raise ConfigError(exc.message, exc.reason) from None
    for name in (*TOKEN_VARIABLES, TOKEN_FILE_VARIABLE):
        environ.pop(name, None)
    return token


_token: str | None = None


def harden_process() -> None:
    """At the start of a command: non-dumpable, and the token taken out of
    ``os.environ`` (kept in memory for :func:`kdev_environ`)."""
    global _token
    set_non_dumpable()
    taken = take_github_token(os.environ)
    if taken is not None:  # a second command in one process finds the variables gone
        _token = taken


def kdev_environ(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """A copy of ``environ`` (default: ``os.environ``) with the token taken at start as
    ``GITHUB_TOKEN``: what the workflow, ``Settings`` and the canary read."""
    env = dict(os.environ if environ is None else environ)
    if _token is not None:
        env["GITHUB_TOKEN"] = _token
    return env
