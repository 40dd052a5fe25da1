"""GitHub Apps in the simulator: Apps with their keys, installations, JWTs, installation tokens.

GitHub's rules, as its documentation states them:

- An App authenticates with a JWT signed **RS256** by one of its private keys; its claims
  are ``iat``, ``exp`` and ``iss`` (the App's id or client id). GitHub advises ``iat``
  60 seconds in the past against clock drift, and ``exp`` no more than 10 minutes ahead
  (docs.github.com: apps/creating-github-apps/authenticating-with-a-github-app/
  generating-a-json-web-token-jwt-for-a-github-app). The JWT is verified here, with
  PyJWT and ``cryptography``, against every public key the App has registered, on the
  simulator's clock. The answers are GitHub's 401s (messages as GitHub sends them, e.g.
  octokit/auth-app.js#698, sigmavirus24/github3.py#1050): a bad signature (a wrong or
  deleted key) "A JSON web token could not be decoded"; an ``iat`` more than
  :data:`IAT_SKEW` seconds ahead "'Issued at' claim ('iat') must be an Integer
  representing the time that the assertion was issued"; an expired ``exp`` "'Expiration
  time' claim ('exp') must be a numeric value representing the future time at which the
  assertion expires"; an ``exp`` more than 10 minutes ahead "'Expiration time' claim
  ('exp') is too far in the future".
- ``POST /app/installations/{id}/access_tokens`` (201, the OpenAPI description's
  ``installation-token``) gives a ``ghs_`` token that lasts **one hour** and reaches the
  installation's repositories (or those the body names; one it cannot reach is 422 "There
  is at least one repository that does not exist or is not accessible to the parent
  installation."). A suspended installation is 403 "This installation has been
  suspended" (octokit/octokit.rb#1307). An expired token gets 401.
- The rate limit is the installation's (docs: rate-limits-for-the-rest-api, "primary
  rate limit for GitHub App installations"): every token of one installation draws on
  the same buckets, so minting a new token resets nothing.
- What an installation token does is done by ``<app-slug>[bot]``, a user of type
  ``Bot`` whose id is neither the App's nor the installation's.

A request with an installation token to a repository outside its installation is 404,
as GitHub hides what a token cannot see (docs: "404 for a private resource").
"""

from __future__ import annotations

import itertools
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ghsim.core import Author, GhsimError, SimCore, token_digest
from ghsim.model import RateBucket, TokenInfo, User

IAT_SKEW = 60  # seconds an iat may be ahead of the simulator's clock
JWT_MAX_LIFETIME = 600  # exp at most this far ahead (GitHub: 10 minutes)
TOKEN_LIFETIME = timedelta(hours=1)

JWT_UNDECODABLE = "A JSON web token could not be decoded"
IAT_INVALID = (
    "'Issued at' claim ('iat') must be an Integer representing the time that the assertion "
    "was issued"
)
EXP_PASSED = (
    "'Expiration time' claim ('exp') must be a numeric value representing the future time "
    "at which the assertion expires"
)
EXP_TOO_FAR = "'Expiration time' claim ('exp') is too far in the future"
SUSPENDED = "This installation has been suspended"
NOT_ACCESSIBLE = (
    "There is at least one repository that does not exist or is not accessible to the "
    "parent installation."
)
DEFAULT_PERMISSIONS = {
    "contents": "read",
    "metadata": "read",
    "pull_requests": "write",
    "issues": "write",
    "statuses": "write",
    "checks": "write",
}


class AppAuthFailed(Exception):
    """A JWT GitHub would refuse: ``status`` and GitHub's ``message``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class App:
    id: int
    slug: str
    name: str
    client_id: str
    owner: User
    bot: User  # <slug>[bot], type Bot
    created_at: datetime
    public_keys: list[str] = field(default_factory=list)  # PEM
    jwt_info: TokenInfo | None = None  # the JWT's rate-limit bucket holder

    def as_dict(self) -> dict[str, Any]:
        """What an RPC caller gets back (no key material)."""
        return {"id": self.id, "slug": self.slug, "bot": self.bot.login}


@dataclass
class Installation:
    id: int
    app: App
    account: User
    repo_keys: frozenset[str] | None  # None: every repository of the account
    created_at: datetime
    suspended_at: datetime | None = None
    permissions: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_PERMISSIONS))
    # GitHub limits an installation, not each of its tokens: every token shares these.
    buckets: dict[str, RateBucket] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """What an RPC caller gets back."""
        return {"id": self.id, "app_id": self.app.id, "account": self.account.login}


class AppSim(SimCore):
    """GitHub Apps (one of the bases of :class:`ghsim.sim.GitHubSim`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._apps: dict[int, App] = {}
        self._installations: dict[int, Installation] = {}
        self._app_ids = itertools.count(900001)
        self._installation_ids = itertools.count(800001)
        self.token_lifetime = TOKEN_LIFETIME  # GitHub's hour; set_token_lifetime for a scenario

    # == scenario helpers ======================================================================

    def create_app(
        self, slug: str, public_key: str, *, owner: Author = None, app_id: int | None = None
    ) -> App:
        """Register an App ``slug`` with one public key (PEM); its bot is ``slug[bot]``.
        ``app_id``: a chosen id (a documented example's), else the next one."""
        with self.lock:
            app_id = next(self._app_ids) if app_id is None else app_id
            if app_id in self._apps:
                raise GhsimError(f"App {app_id} exists")
            bot = self.user(f"{slug}[bot]", type="Bot")
            app = App(
                app_id,
                slug,
                slug.replace("-", " ").title(),
                f"Iv23li{secrets.token_hex(5)}",
                self._author(owner, self.user("ghsim-user")),
                bot,
                self.now(),
                [public_key],
            )
            app.jwt_info = TokenInfo(f"app:{app_id}", bot)
            self._apps[app_id] = app
            return app

    def set_token_lifetime(self, seconds: float) -> None:
        """Installation tokens minted from now on last ``seconds`` (GitHub: one hour), so
        that a scenario on the real clock sees a token age out within a pass."""
        with self.lock:
            self.token_lifetime = timedelta(seconds=seconds)

    def add_app_key(self, app_id: int, public_key: str) -> None:
        with self.lock:
            self.app(app_id).public_keys.append(public_key)

    def revoke_app_key(self, app_id: int, public_key: str) -> None:
        """Delete a key: JWTs it signs are refused from now on."""
        with self.lock:
            keys = self.app(app_id).public_keys
            if public_key not in keys:
                raise GhsimError(f"App {app_id} has no such key")
            keys.remove(public_key)

    def install_app(
        self, app_id: int, account: Author, repositories: list[str] | None = None
    ) -> Installation:
        """Install an App on ``account``: on ``repositories`` (full names), or on all."""
        with self.lock:
            app = self.app(app_id)
            owner = self._author(account, self.user("ghsim-user"))
            keys = None if repositories is None else frozenset(r.lower() for r in repositories)
            found = Installation(next(self._installation_ids), app, owner, keys, self.now())
            self._installations[found.id] = found
            return found

    def suspend_installation(self, installation_id: int) -> None:
        with self.lock:
            self.installation(installation_id).suspended_at = self.now()

    def unsuspend_installation(self, installation_id: int) -> None:
        with self.lock:
            self.installation(installation_id).suspended_at = None

    def app(self, app_id: int) -> App:
        with self.lock:
            if app_id not in self._apps:
                raise GhsimError(f"unknown App {app_id}")
            return self._apps[app_id]

    def installation(self, installation_id: int) -> Installation:
        with self.lock:
            if installation_id not in self._installations:
                raise GhsimError(f"unknown installation {installation_id}")
            return self._installations[installation_id]

    # == what the routes use ===================================================================

    def installations_of(self, app: App) -> list[Installation]:
        return [i for i in self._installations.values() if i.app is app]

    def reaches(self, installation: Installation, full_name: str) -> bool:
        """Whether ``installation`` covers the repository ``full_name``."""
        key = full_name.lower()
        if installation.repo_keys is not None:
            return key in installation.repo_keys
        return key.split("/")[0] == installation.account.login.lower() and key in self._repos

    def verify_jwt(self, token: str) -> App:
        """The App whose key signed ``token``, with GitHub's checks (module doc), on the
        simulator clock; :class:`AppAuthFailed` otherwise."""
        import jwt

        try:
            claims = jwt.decode(token, options={"verify_signature": False})
            issuer = str(claims.get("iss", ""))
            app = self._issuer(issuer)
        except (jwt.PyJWTError, ValueError):
            raise AppAuthFailed(401, JWT_UNDECODABLE) from None
        if app is None or not self._signed_by(app, token):
            raise AppAuthFailed(401, JWT_UNDECODABLE)
        now = int(self.now().timestamp())
        iat, exp = claims.get("iat"), claims.get("exp")
        if not isinstance(iat, int) or iat > now + IAT_SKEW:
            raise AppAuthFailed(401, IAT_INVALID)
        if not isinstance(exp, int) or exp <= now:
            raise AppAuthFailed(401, EXP_PASSED)
        if exp > now + JWT_MAX_LIFETIME or exp - iat > JWT_MAX_LIFETIME + IAT_SKEW:
            raise AppAuthFailed(401, EXP_TOO_FAR)
        return app

    def _issuer(self, issuer: str) -> App | None:
        for app in self._apps.values():
            if issuer in (str(app.id), app.client_id):
                return app
        return None

    def _signed_by(self, app: App, token: str) -> bool:
        import jwt

        for key in app.public_keys:
            try:
                jwt.decode(
                    token,
                    key,
                    algorithms=["RS256"],
                    options={"verify_exp": False, "verify_iat": False, "verify_nbf": False},
                )
            except jwt.PyJWTError:
                continue
            return True
        return False

    def issue_installation_token(
        self, installation: Installation, repositories: list[str] | None = None
    ) -> tuple[str, TokenInfo]:
        """A new ``ghs_`` token of ``installation`` (optionally narrowed to
        ``repositories``, names within the account or full names); GitHub's refusals
        raise :class:`AppAuthFailed` (403 suspended, 422 out of reach)."""
        if installation.suspended_at is not None:
            raise AppAuthFailed(403, SUSPENDED)
        keys = installation.repo_keys  # None: the whole account, later repositories too
        if repositories is not None:
            owner = installation.account.login
            wanted = {(r if "/" in r else f"{owner}/{r}").lower() for r in repositories}
            if not all(self.reaches(installation, name) for name in wanted):
                raise AppAuthFailed(422, NOT_ACCESSIBLE)
            keys = frozenset(wanted)
        token = "ghs_" + secrets.token_urlsafe(27).replace("-", "A").replace("_", "B")[:36]
        info = TokenInfo(
            token_digest(token),
            installation.app.bot,
            buckets=installation.buckets,
            installation_id=installation.id,
            expires_at=self.now() + self.token_lifetime,
            repo_keys=keys,
        )
        self._tokens[info.digest] = info
        return token, info

    def token_refusal(self, info: TokenInfo, path: str) -> tuple[int, str] | None:
        """Why an installation token may not make this request (None: it may): expired
        or suspended is 401, a repository outside its reach 404."""
        if info.installation_id is None:
            return None
        installation = self._installations.get(info.installation_id)
        expired = info.expires_at is not None and self.now() >= info.expires_at
        if installation is None or expired or installation.suspended_at is not None:
            return 401, "Bad credentials"
        parts = path.split("/")
        if len(parts) >= 4 and parts[1] == "repos" and not self.token_reaches(info, parts[2:4]):
            return 404, "Not Found"
        return None

    def token_reaches(self, info: TokenInfo, owner_name: list[str]) -> bool:
        """Whether ``info`` (any token) may see the repository ``[owner, name]``: an
        installation token only its installation's (or its narrowed) repositories."""
        if info.installation_id is None:
            return True
        full_name = "/".join(owner_name).lower()
        if info.repo_keys is not None:
            return full_name in info.repo_keys
        installation = self._installations.get(info.installation_id)
        return installation is not None and self.reaches(installation, full_name)


def looks_like_jwt(token: str) -> bool:
    """Three dot-separated base64url parts: a JWT, never a token GitHub issues."""
    return token.count(".") == 2 and token.startswith("eyJ")


def jwt_route(path: str) -> bool:
    """Whether ``path`` is one of the routes an App calls with its JWT."""
    return (
        path == "/app"
        or path.startswith("/app/")
        or (path.startswith("/repos/") and path.endswith("/installation") and path.count("/") == 4)
    )


def installation_json(render: Any, inst: Installation) -> dict[str, Any]:
    """The OpenAPI ``installation`` object."""
    from ghsim.model import iso

    account = render.user(inst.account)
    org = inst.account.type == "Organization"
    return {
        "id": inst.id,
        "client_id": inst.app.client_id,
        "account": account,
        "repository_selection": "all" if inst.repo_keys is None else "selected",
        "access_tokens_url": f"{render.api}/app/installations/{inst.id}/access_tokens",
        "repositories_url": f"{render.api}/installation/repositories",
        "html_url": f"{render.html}/settings/installations/{inst.id}",
        "app_id": inst.app.id,
        "app_slug": inst.app.slug,
        "target_id": inst.account.id,
        "target_type": "Organization" if org else "User",
        "permissions": dict(inst.permissions),
        "events": ["pull_request", "issue_comment"],
        "created_at": iso(inst.created_at),
        "updated_at": iso(inst.created_at),
        "single_file_name": None,
        "has_multiple_single_files": False,
        "single_file_paths": [],
        "suspended_by": render.user(inst.account) if inst.suspended_at else None,
        "suspended_at": iso(inst.suspended_at),
    }


def app_json(render: Any, app: App) -> dict[str, Any]:
    """The OpenAPI ``integration`` object (``GET /app``)."""
    from ghsim.model import iso, node_id

    return {
        "id": app.id,
        "slug": app.slug,
        "node_id": node_id("Integration", app.id),
        "client_id": app.client_id,
        "owner": render.user(app.owner),
        "name": app.name,
        "description": None,
        "external_url": f"{render.html}/apps/{app.slug}",
        "html_url": f"{render.html}/apps/{app.slug}",
        "created_at": iso(app.created_at),
        "updated_at": iso(app.created_at),
        "permissions": dict(DEFAULT_PERMISSIONS),
        "events": ["pull_request", "issue_comment"],
    }
