"""A GitHub App's installation token, minted from a JWT and shared (issue 30).

:class:`AppTokenSource` is what a :class:`~engine.github.session.GitHubSession` asks for
the token of each request when an App is configured (engine.github.appconfig). It keeps
the token in memory and in the shared file (engine.github.tokencache) and mints a new one
only when neither holds one valid for :data:`REFRESH_BEFORE` more: a JWT (RS256, PyJWT
with ``cryptography``; ``iat`` 60 seconds back against clock drift and ``exp`` 9 minutes
ahead, within GitHub's 10) exchanged at ``POST /app/installations/{id}/access_tokens``
(201; the token lasts an hour). The installation is the configured one, or the one
``GET /repos/{owner}/{repo}/installation`` names.

GitHub's refusals become one error each, with a reason code (and a health cause that
pages, engine.health.assess):

===============================  ============================================================
``app_key_rejected``             401 "A JSON web token could not be decoded": the key is
                                 wrong or was deleted (revoked) on GitHub, or the App id
``app_clock_skew``               401 naming the ``iat`` or ``exp`` claim: this host's clock
                                 is off GitHub's by more than the JWT allows
``app_installation_suspended``   403 "This installation has been suspended"
``app_not_installed``            404 for the installation, or the repository outside it
``app_key_unreadable``           the private key file cannot be read or is no RSA key
===============================  ============================================================

The private key is read from its file when a JWT is signed and dropped after; neither it
nor a token is logged, put in an error message or handed to a child.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import httpx

from engine import __version__
from engine.github.appconfig import APP_AUTH_REASONS, AppConfig
from engine.github.bounded import Bounds, OutOfBounds, send_bounded
from engine.github.pacing import utcnow
from engine.github.parse import said_message
from engine.github.tokencache import CachedToken, TokenCache
from engine.github.types import (
    GitHubErrorKind,
    GitHubMalformedPayload,
    GitHubNetworkError,
    GitHubServerError,
    GitHubSettings,
)

logger = logging.getLogger("engine.github.appauth")

REFRESH_BEFORE = timedelta(minutes=5)
JWT_BACKDATE = 60  # seconds: GitHub's advice against clock drift
JWT_LIFETIME = 540  # seconds after now: within GitHub's 10 minutes, with room for drift
API_VERSION = "2022-11-28"


__all__ = ["APP_AUTH_REASONS", "AppTokenSource", "mint_jwt", "read_private_key"]


class AppKeyRejected(GitHubErrorKind, reason="app_key_rejected"):
    """GitHub refused the App's JWT signature (a wrong or revoked key, a wrong App id)."""


class AppClockSkew(GitHubErrorKind, reason="app_clock_skew"):
    """GitHub refused the JWT's times: this host's clock is off."""


class AppInstallationSuspended(GitHubErrorKind, reason="app_installation_suspended"):
    """The installation is suspended."""


class AppNotInstalled(GitHubErrorKind, reason="app_not_installed"):
    """The installation does not exist for this App, or does not cover the repository."""


class AppKeyUnreadable(GitHubErrorKind, reason="app_key_unreadable"):
    """The private key file cannot be read or signs nothing (a GitHubError, so that a
    poll records it as its failure like GitHub's refusals)."""


def read_private_key(config: AppConfig) -> str:
    """The PEM in the key file; ``app_key_unreadable`` (one line, never its content)."""
    try:
        text = config.key_file.read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as exc:
        detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise AppKeyUnreadable(
            f"the App private key {config.key_file} is unreadable: {detail}"
        ) from None
    if "PRIVATE KEY-----" not in text:
        raise AppKeyUnreadable(f"the App private key {config.key_file} holds no PEM private key")
    return text


def mint_jwt(app_id: str, private_key: str, now: datetime) -> str:
    """The App's JWT at ``now``: RS256, ``iat`` 60 s back, ``exp`` 9 minutes ahead."""
    import jwt

    epoch = int(now.timestamp())
    claims = {"iat": epoch - JWT_BACKDATE, "exp": epoch + JWT_LIFETIME, "iss": app_id}
    try:
        return jwt.encode(claims, private_key, algorithm="RS256")
    except (ValueError, TypeError, jwt.PyJWTError) as exc:
        raise AppKeyUnreadable(
            f"the App private key cannot sign a JWT: {type(exc).__name__}"
        ) from None


class AppTokenSource:
    """The installation token of one :class:`AppConfig`, shared through its cache file.

    ``transport`` replaces the network (tests pass ghsim's URL in the settings instead);
    ``clock`` is this host's clock (a test moves it to show refresh and skew)."""

    def __init__(
        self,
        config: AppConfig,
        settings: GitHubSettings,
        *,
        transport: httpx.BaseTransport | None = None,
        clock: Callable[[], datetime] = utcnow,
        refresh_before: timedelta = REFRESH_BEFORE,
    ) -> None:
        self.config = config
        self.identity = config.identity
        self.cache = TokenCache(config.cache_path)
        self._api = settings.github_api_url.rstrip("/")
        base = httpx.URL(self._api)
        self._origin = (base.scheme, base.host, base.port)
        self._bounds = Bounds.of(settings)
        self._timeout = settings.github_timeout_seconds or 30.0
        self._transport = transport
        self._clock = clock
        self._refresh_before = refresh_before
        self._lock = threading.Lock()
        self._current: CachedToken | None = None
        self.minted = 0  # tokens this process minted

    def __repr__(self) -> str:
        return f"<AppTokenSource {self.identity}>"

    def token(self) -> str:
        """A token valid for :data:`REFRESH_BEFORE` more: in memory, else from the shared
        file, else minted (under the file's lock, after reading it again)."""
        with self._lock:
            if self._fresh(self._current):
                assert self._current is not None
                return self._current.token
            cached = self.cache.read()
            if not self._fresh(cached):
                with self.cache.locked():
                    cached = self.cache.read()
                    if not self._fresh(cached):
                        cached = self._mint()
                        self.cache.write(cached)
            assert cached is not None
            self._current = cached
            return cached.token

    def invalidate(self, token: str) -> None:
        """GitHub refused ``token`` (401): forget it here and in the shared file."""
        with self._lock:
            if self._current is not None and self._current.token == token:
                self._current = None
            with self.cache.locked():
                self.cache.clear(token)

    def _fresh(self, cached: CachedToken | None) -> bool:
        return cached is not None and cached.expires_at - self._refresh_before > self._clock()

    # -- minting --------------------------------------------------------------------------

    def _app_http(self) -> httpx.Client:
        """A client that speaks as the App itself (a fresh JWT), for its own routes."""
        jwt_token = mint_jwt(self.config.app_id, read_private_key(self.config), self._clock())
        return httpx.Client(
            headers={
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": API_VERSION,
                "User-Agent": f"li/{__version__}",
                "Authorization": f"Bearer {jwt_token}",
            },
            timeout=self._timeout,
            transport=self._transport,
            follow_redirects=False,
        )

    def discover(self) -> int:
        """The installation GitHub names for the configured repository (one
        ``GET /repos/{owner}/{repo}/installation`` as the App); ``app_not_installed``
        when the App is installed on no installation that covers it."""
        with self._app_http() as http:
            return self._installation(http)

    def _mint(self) -> CachedToken:
        with self._app_http() as http:
            installation = self._installation(http)
            where = f"POST /app/installations/{installation}/access_tokens"
            answer = self._call(http, "POST", f"app/installations/{installation}/access_tokens")
            if answer.status_code != 201:
                raise self._refusal(answer, where, f"installation {installation}")
        payload = self._object(answer, where)
        token, expires = payload.get("token"), payload.get("expires_at")
        try:
            when = datetime.fromisoformat(str(expires).replace("Z", "+00:00"))
        except ValueError:
            when = None
        if not isinstance(token, str) or not token or when is None or when.tzinfo is None:
            raise GitHubMalformedPayload(f"{where}: no token and expires_at in the answer")
        self.minted += 1
        logger.info("minted an installation token for %s (expires %s)", self.identity, expires)
        return CachedToken(token, when, installation)

    def _installation(self, http: httpx.Client) -> int:
        """The configured installation, or the repository's; with both, they must agree."""
        repository = self.config.repository
        if repository is None:
            assert self.config.installation_id is not None
            return self.config.installation_id
        where = f"GET /repos/{repository}/installation"
        answer = self._call(http, "GET", f"repos/{repository}/installation")
        if answer.status_code != 200:
            raise self._refusal(answer, where, f"repository {repository}")
        found = self._object(answer, where).get("id")
        if not isinstance(found, int):
            raise GitHubMalformedPayload(f"{where}: the answer has no installation id")
        wanted = self.config.installation_id
        if wanted is not None and wanted != found:
            raise AppNotInstalled(
                f"the repository {repository} is outside the App's installation {wanted} "
                f"(it is in installation {found})",
                status=200,
            )
        return found

    def _call(self, http: httpx.Client, method: str, path: str) -> httpx.Response:
        url = f"{self._api}/{path}"
        try:
            return send_bounded(
                http,
                method,
                url,
                headers=None,
                json_body={} if method == "POST" else None,
                bounds=self._bounds,
                origin=self._origin,
            )
        except httpx.HTTPError as exc:
            raise GitHubNetworkError(
                f"cannot reach {self._api} for {method} /{path}: {type(exc).__name__}"
            ) from None
        except OutOfBounds as exc:
            raise exc.kind(f"{method} /{path}: {exc.message}") from None

    def _refusal(self, answer: httpx.Response, where: str, what: str) -> GitHubErrorKind:
        status = answer.status_code
        message = _message(answer)
        said = f"GitHub answered {status} for {where}: {message}"
        if status == 401 and "claim" in message:
            return AppClockSkew(f"{said} (this host's clock is off GitHub's)", status=status)
        if status == 401:
            return AppKeyRejected(
                f"{said} (the App's private key or id is wrong, or the key was revoked)",
                status=status,
            )
        if status == 403 and "suspended" in message.lower():
            return AppInstallationSuspended(said, status=status)
        if status in (404, 422):
            return AppNotInstalled(
                f"{said} (the App is not installed on the {what})", status=status
            )
        kind = GitHubServerError if status >= 500 else GitHubMalformedPayload
        return kind(said, status=status)

    def _object(self, answer: httpx.Response, where: str) -> dict[str, Any]:
        try:
            payload = answer.json()
        except ValueError:
            payload = None
        if not isinstance(payload, dict):
            raise GitHubMalformedPayload(f"{where}: the answer is not a JSON object")
        return payload


def _message(answer: httpx.Response) -> str:
    text = said_message(answer)
    if text is None:
        text = answer.reason_phrase
    return " ".join(text.split())[:300]
