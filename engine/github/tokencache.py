"""The installation token every process of one App installation shares (issue 30).

The engine and each command it fires are separate processes; an installation token is
good for an hour, and minting one per process would cost one ``access_tokens`` request
(and one JWT signature) per command fired. So the token lives in one file that every process of
the identity reads, and only a process that finds it missing or expiring mints, under an
exclusive lock, after reading the file again: N processes started together mint once.

The file (``GITHUB_APP_TOKEN_CACHE``, engine.github.appconfig):

- is JSON ``{"token", "expires_at", "installation_id"}``, mode 0600 in a 0700 directory,
  written atomically (a 0600 temporary file in the same directory, fsync, ``os.replace``),
  so a reader sees the old token or the new one, never half of one;
- is read only when it is a regular file owned by this uid with no group or other
  permission bits (anything else is treated as missing and replaced: a token another
  user could have planted is never used);
- is locked with ``flock`` on ``<file>.lock`` beside it while a process mints.

The token is handed to a child as this file's *name* (a variable holding a path, like
``GITHUB_TOKEN_FILE``), never as a value in argv or an environment.
"""

from __future__ import annotations

import fcntl
import json
import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol


class TokenSource(Protocol):
    """Where a session takes the token of each request when it is not fixed: a GitHub
    App's installation token (engine.github.appauth), refreshed before it expires;
    ``identity`` names it for its pacer and rate gauges, never with a token."""

    identity: str

    def token(self) -> str: ...

    def invalidate(self, token: str) -> None: ...


@dataclass(frozen=True)
class CachedToken:
    """An installation token and when GitHub said it expires (aware UTC)."""

    token: str
    expires_at: datetime
    installation_id: int

    def __repr__(self) -> str:  # never the token
        when = self.expires_at.isoformat()
        return f"CachedToken(expires_at={when}, installation={self.installation_id})"


class TokenCache:
    """The shared token file at ``path`` (see the module doc)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock_path = path.with_name(path.name + ".lock")

    def read(self) -> CachedToken | None:
        """The cached token, or None when the file is missing, unsafe or malformed."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            return None
        try:
            info = os.fstat(fd)
            private = not info.st_mode & (stat.S_IRWXG | stat.S_IRWXO)
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid() or not private:
                return None
            raw = os.read(fd, 65536)
        finally:
            os.close(fd)
        try:
            data = json.loads(raw)
            expires = datetime.fromisoformat(str(data["expires_at"]))
            token, installation = data["token"], data["installation_id"]
        except (ValueError, KeyError, TypeError):
            return None
        if not isinstance(token, str) or not token or not isinstance(installation, int):
            return None
        if expires.tzinfo is None:
            return None
        return CachedToken(token, expires.astimezone(UTC), installation)

    def write(self, cached: CachedToken) -> None:
        """Replace the file atomically with ``cached`` (mode 0600, directory 0700)."""
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        body = json.dumps(
            {
                "token": cached.token,
                "expires_at": cached.expires_at.isoformat(),
                "installation_id": cached.installation_id,
            }
        ).encode()
        fd, temporary = tempfile.mkstemp(prefix=".token-", dir=self.path.parent)  # 0600
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(body)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def clear(self, token: str) -> None:
        """Remove the file when it still holds ``token`` (one GitHub refused)."""
        found = self.read()
        if found is not None and found.token == token:
            self.path.unlink(missing_ok=True)

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the exclusive lock of this cache (blocks until it is free)."""
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock
