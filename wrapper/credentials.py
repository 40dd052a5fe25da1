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

The token is then handed around in memory only (:func:`kdev_environ`: a dict that the
workflow reads ``GITHUB_TOKEN`` from, for the API client and the secret canary).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping
from pathlib import Path

from wrapper.errors import ConfigError
from wrapper.review.sandbox import set_non_dumpable

TOKEN_VARIABLES = ("GITHUB_TOKEN", "GH_TOKEN")
TOKEN_FILE_VARIABLE = "GITHUB_TOKEN_FILE"
CREDENTIAL_NAME = "github_token"


def _read_token_file(path: Path, what: str) -> str:
    try:
        token = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise ConfigError(
            f"{what} {path} is unreadable: {detail}", "token_file_unreadable"
        ) from None
    if not token:
        raise ConfigError(f"{what} {path} is empty", "token_file_unreadable")
    return token


def take_github_token(environ: MutableMapping[str, str]) -> str | None:
    """The GitHub token from the sources in the module doc (first wins), with every
    token variable removed from ``environ``; None when no source has one."""
    token: str | None = None
    for name in TOKEN_VARIABLES:
        if environ.get(name):
            token = environ[name]
            break
    file_name = environ.get(TOKEN_FILE_VARIABLE)
    if token is None and file_name:
        token = _read_token_file(Path(file_name), TOKEN_FILE_VARIABLE)
    credentials = environ.get("CREDENTIALS_DIRECTORY")
    if token is None and credentials:
        path = Path(credentials) / CREDENTIAL_NAME
        if path.exists():
            token = _read_token_file(path, "systemd credential")
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
