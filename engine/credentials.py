"""Hardening at start and the GitHub token's sources, for li and the programs on its surface (D66).

- :func:`set_non_dumpable`: ``prctl(PR_SET_DUMPABLE, 0)``. No core dumps, and
  ``/proc/<pid>/environ``, ``mem``, ``maps``, ``auxv``, ``fd`` and ptrace are closed to
  every other process of the same uid (an untrusted child among
  them); only root (``CAP_SYS_PTRACE``) still reads them. ``li`` calls it at the start of
  every command (engine/cli/entry.py), the wrapper through ``wrapper.credentials``. It is reset by
  ``execve``: each child hardens itself.
- :func:`token_from_sources`: the GitHub token from the first source that has one:

  1. ``GITHUB_TOKEN``, else ``GH_TOKEN`` (the variables; an empty one counts as unset);
  2. ``GITHUB_TOKEN_FILE``: a file holding the token (surrounding whitespace dropped);
  3. ``$CREDENTIALS_DIRECTORY/github_token``: a systemd credential
     (``LoadCredential=github_token:/path`` in the unit); a credentials directory
     without that file is no source.

  An unreadable or empty file is ConfigError ``token_file_unreadable``, one line naming
  the file (never its content). The variables are the weaker way: ``/proc/<pid>/environ``
  shows the environment a process was started with for as long as it lives, so only a
  token that never was in it (a file, a credential) stays out of it.

Neither reads ``os.environ``: the caller passes the mapping (``Settings.from_env`` for li).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from engine.errors import ConfigError

TOKEN_VARIABLES = ("GITHUB_TOKEN", "GH_TOKEN")
TOKEN_FILE_VARIABLE = "GITHUB_TOKEN_FILE"
CREDENTIALS_VARIABLE = "CREDENTIALS_DIRECTORY"
CREDENTIAL_NAME = "github_token"
# Every variable that names a token source; what a schedule passes through to its command.
TOKEN_SOURCE_VARIABLES = (*TOKEN_VARIABLES, TOKEN_FILE_VARIABLE, CREDENTIALS_VARIABLE)

_PR_SET_DUMPABLE = 4


def set_non_dumpable() -> bool:
    """This process becomes non-dumpable (see the module doc). True on success."""
    import ctypes  # here, not at import: `li --version` never pays for it

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) == 0)
    except (OSError, AttributeError):  # no libc prctl: not Linux
        return False


def read_token_file(path: Path, what: str) -> str:
    """The token in ``path`` without surrounding whitespace; ``token_file_unreadable``
    when it cannot be read or holds nothing. ``what`` names the source in the error."""
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


def token_from_sources(environ: Mapping[str, str]) -> str | None:
    """The GitHub token from the sources in the module doc (first wins); None when no
    source has one."""
    for name in TOKEN_VARIABLES:
        if environ.get(name):
            return environ[name]
    file_name = environ.get(TOKEN_FILE_VARIABLE)
    if file_name:
        return read_token_file(Path(file_name), TOKEN_FILE_VARIABLE)
    credentials = environ.get(CREDENTIALS_VARIABLE)
    if credentials:
        path = Path(credentials) / CREDENTIAL_NAME
        if path.exists():
            return read_token_file(path, "systemd credential")
    return None
