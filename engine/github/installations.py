"""Many installations of one GitHub App in one engine (issue 30, D110).

An App installed on several accounts (or on several sets of repositories) has one
installation each, and GitHub limits each installation on its own: its primary budget
(5,000 requests an hour and more, docs/github-app.md) and its secondary limits (points a
minute, concurrent requests). :class:`InstallationRouter` maps a repository to its
installation and gives each installation its own client: its own installation token
(its own shared file, engine.github.tokencache), its own pacer and rate gauges (the
identity ``github-app:<app>:<installation>``). So one installation spending its budget
holds back only its own requests; engine.run.lanes gives each one its own poll threads.

A repository maps to the installation the configuration routes it to
(``GITHUB_APP_INSTALLATIONS``: its own entry, then its owner's), else to the one GitHub
names (``GET /repos/{owner}/{repo}/installation``, asked once per repository and kept).
A repository no installation covers is ``app_not_installed`` (a one-line error, and a
health cause that pages, engine.health.assess); the refusal is kept for
:data:`REFUSAL_KEPT` so that a schedule's every poll does not ask again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

import httpx

from engine.github.appauth import AppNotInstalled, AppTokenSource
from engine.github.appconfig import AppConfig
from engine.github.client import GitHubClient
from engine.github.pacing import RequestPacer, pacer_for, utcnow
from engine.github.types import EtagCache, GitHubError, GitHubSettings

REFUSAL_KEPT = timedelta(minutes=5)

PacerFactory = Callable[[str], RequestPacer]


@dataclass(frozen=True)
class Route:
    """A repository's installation and the client that speaks for it."""

    installation_id: int
    client: GitHubClient


class InstallationRouter:
    """Repositories to installations, one client (token, pacer) per installation.

    ``transport`` replaces the network of every installation's client (not of the
    App's own calls: an ``httpx.Client`` closes its transport as it is left, and the
    token source leaves one for each mint);
    ``pacer`` makes an installation's pacer from its identity (default: the process-wide
    :func:`~engine.github.pacing.pacer_for` at the settings' rate; a test passes pacers
    on its own clock); ``clock`` dates tokens and kept refusals."""

    def __init__(
        self,
        config: AppConfig,
        settings: GitHubSettings,
        *,
        cache: EtagCache | None = None,
        transport: httpx.BaseTransport | None = None,
        pacer: PacerFactory | None = None,
        clock: Callable[[], datetime] = utcnow,
        record_rates: bool = True,
    ) -> None:
        if not config.many:
            raise ValueError("InstallationRouter needs GITHUB_APP_INSTALLATIONS")
        self.config = config
        self._settings = settings
        self._cache = cache
        self._transport = transport
        rate = settings.github_requests_per_minute
        self._pacer = pacer or (lambda identity: pacer_for(identity, rate))
        self._clock = clock
        self._record_rates = record_rates
        self._lock = threading.Lock()
        self._found: dict[str, int] = {}
        self._refused: dict[str, tuple[GitHubError, datetime]] = {}
        self._clients: dict[int, GitHubClient] = {}
        self.discovered = 0  # repositories GitHub was asked about

    def installation_of(self, repo: str) -> int:
        """``repo``'s installation: configured, kept, or asked of GitHub (see module doc)."""
        routed = self.config.routed(repo)
        if routed is not None:
            return routed
        key = repo.lower()
        with self._lock:
            if key in self._found:
                return self._found[key]
            refused = self._refused.get(key)
            if refused is not None and refused[1] > self._clock():
                raise refused[0]
        source = AppTokenSource(
            self.config.for_repository(repo),
            self._settings,
            clock=self._clock,
        )
        try:
            self.discovered += 1
            found = source.discover()
        except AppNotInstalled as exc:
            refusal = AppNotInstalled(
                f"the repository {repo} is outside every installation of the App "
                f"{self.config.app_id}: {exc.message}",
                status=exc.status,
            )
            with self._lock:
                self._refused[key] = (refusal, self._clock() + REFUSAL_KEPT)
            raise refusal from None
        with self._lock:
            self._found[key] = found
        return found

    def route(self, repo: str) -> Route:
        """``repo``'s installation and its client (made on first use)."""
        installation = self.installation_of(repo)
        with self._lock:
            client = self._clients.get(installation)
            if client is None:
                source = AppTokenSource(
                    self.config.for_installation(installation),
                    self._settings,
                    clock=self._clock,
                )
                client = self._clients[installation] = GitHubClient(
                    self._settings,
                    cache=self._cache,
                    pacer=self._pacer(source.identity),
                    token_source=source,
                    transport=self._transport,
                    clock=self._clock,
                    connect_timeout=min(10.0, self._settings.github_timeout_seconds or 30.0),
                    read_timeout=self._settings.github_timeout_seconds or 30.0,
                    record_rates=self._record_rates,
                )
            return Route(installation, client)

    def clients(self) -> dict[int, GitHubClient]:
        """The installations' clients made so far."""
        with self._lock:
            return dict(self._clients)

    def close(self) -> None:
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            client.close()
