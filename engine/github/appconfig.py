"""A GitHub App as the GitHub identity (issue 30): what the configuration names.

Read from the mapping ``Settings.from_env`` passes (never ``os.environ`` itself, D33):

- ``GITHUB_APP_ID``: the App's id (digits) or its client id (``Iv...``), the JWT's ``iss``;
- ``GITHUB_APP_PRIVATE_KEY_FILE``: the PEM private key GitHub generated for the App (a
  file, read when a token is minted: the key is never in a variable, argv or a log);
- ``GITHUB_APP_INSTALLATION_ID``: the installation (digits), or
  ``GITHUB_APP_REPOSITORY`` (``OWNER/NAME``): the installation is the one GitHub names
  for that repository (``GET /repos/{owner}/{repo}/installation``); with both, the
  repository must be in that installation;
- ``GITHUB_APP_TOKEN_CACHE``: the shared file of the installation token
  (engine.github.tokencache); default ``<user cache dir>/li/github-app/<app>-<target>.json``;
- ``GITHUB_APP_INSTALLATIONS`` (issue 30, D110): many installations for one engine, in
  place of the one installation or repository: ``discover`` (each repository's
  installation is the one GitHub names for it) or a comma list of ``OWNER=ID`` and
  ``OWNER/NAME=ID`` (a repository's own entry wins over its owner's; one in neither
  is discovered). ``GITHUB_APP_TOKEN_CACHE`` is then a directory, one file per
  installation in it.

Every value is checked here, one line and ``invalid_app_config`` for a bad one. A token
variable beside an App is refused (``ambiguous_github_auth``): the operator says which
identity posts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from engine.errors import ConfigError

APP_ID_VARIABLE = "GITHUB_APP_ID"
APP_KEY_VARIABLE = "GITHUB_APP_PRIVATE_KEY_FILE"
APP_INSTALLATION_VARIABLE = "GITHUB_APP_INSTALLATION_ID"
APP_REPOSITORY_VARIABLE = "GITHUB_APP_REPOSITORY"
APP_CACHE_VARIABLE = "GITHUB_APP_TOKEN_CACHE"
APP_INSTALLATIONS_VARIABLE = "GITHUB_APP_INSTALLATIONS"
APP_VARIABLES = (
    APP_ID_VARIABLE,
    APP_KEY_VARIABLE,
    APP_INSTALLATION_VARIABLE,
    APP_REPOSITORY_VARIABLE,
    APP_CACHE_VARIABLE,
    APP_INSTALLATIONS_VARIABLE,
)
DISCOVER = "discover"
# The reason codes of an App's refusals (engine.github.appauth's error classes), which
# engine.health.assess pages on (its APP_AUTH_ADVICE; a test checks they agree).
APP_AUTH_REASONS = frozenset(
    {"app_key_rejected", "app_clock_skew", "app_installation_suspended", "app_not_installed"}
    | {"app_key_unreadable"}
)
_APP_ID = re.compile(r"[1-9][0-9]{0,11}|Iv[0-9A-Za-z.]{2,40}")
_INSTALLATION = re.compile(r"[1-9][0-9]{0,15}")
_REPOSITORY = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}")
_OWNER = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,38}")


@dataclass(frozen=True)
class AppConfig:
    """One App installation as the identity of a process."""

    app_id: str
    key_file: Path
    installation_id: int | None
    repository: str | None
    cache_path: Path
    # Many installations (GITHUB_APP_INSTALLATIONS): the configured routes, lowercased
    # ``owner`` or ``owner/name`` -> installation; ``cache_path`` is then a directory.
    routes: tuple[tuple[str, int], ...] | None = None

    @property
    def many(self) -> bool:
        """Whether this App serves many installations (engine.github.installations)."""
        return self.routes is not None

    def for_installation(self, installation_id: int) -> AppConfig:
        """One installation of a many-installation App, its token file in the directory."""
        name = f"{self.app_id}-{installation_id}.json"
        return AppConfig(self.app_id, self.key_file, installation_id, None, self.cache_path / name)

    def for_repository(self, repository: str) -> AppConfig:
        """The App as the identity that asks GitHub for ``repository``'s installation."""
        return AppConfig(self.app_id, self.key_file, None, repository, self.cache_path / "-")

    def routed(self, repository: str) -> int | None:
        """The configured installation of ``repository`` (its own entry, then its
        owner's), None when neither is configured."""
        wanted = repository.lower()
        table = dict(self.routes or ())
        return table.get(wanted, table.get(wanted.split("/", 1)[0]))

    @property
    def identity(self) -> str:
        """The stable name of this identity (its pacer and rate gauges): the App and its
        installation or repository, never a token."""
        target = self.installation_id if self.installation_id is not None else self.repository
        return f"github-app:{self.app_id}:{target}"


def _invalid(message: str) -> ConfigError:
    return ConfigError(message, "invalid_app_config")


def default_cache_path(app_id: str, target: str) -> Path:
    import platformdirs

    safe = re.sub(r"[^A-Za-z0-9._-]", "_", f"{app_id}-{target}")
    return Path(platformdirs.user_cache_dir("li", appauthor=False)) / "github-app" / f"{safe}.json"


def app_config_from(environ: Mapping[str, str]) -> AppConfig | None:
    """The App the variables name (module doc); None when ``GITHUB_APP_ID`` is unset."""
    given = {name: environ[name] for name in APP_VARIABLES if environ.get(name)}
    if APP_ID_VARIABLE not in given:
        if given:
            raise _invalid(f"{', '.join(sorted(given))} set without {APP_ID_VARIABLE}")
        return None
    app_id = given[APP_ID_VARIABLE]
    if not _APP_ID.fullmatch(app_id):
        raise _invalid(f"{APP_ID_VARIABLE} is an App id (digits) or a client id (Iv...)")
    if APP_KEY_VARIABLE not in given:
        raise _invalid(f"{APP_ID_VARIABLE} is set without {APP_KEY_VARIABLE}")
    if APP_INSTALLATIONS_VARIABLE in given:
        return _many_config(given)
    installation = given.get(APP_INSTALLATION_VARIABLE)
    if installation is not None and not _INSTALLATION.fullmatch(installation):
        raise _invalid(f"{APP_INSTALLATION_VARIABLE} is digits, got {installation!r}")
    repository = given.get(APP_REPOSITORY_VARIABLE)
    if repository is not None and not _REPOSITORY.fullmatch(repository):
        raise _invalid(f"{APP_REPOSITORY_VARIABLE} is OWNER/NAME, got {repository!r}")
    if installation is None and repository is None:
        raise _invalid(
            f"an App needs {APP_INSTALLATION_VARIABLE} or {APP_REPOSITORY_VARIABLE} "
            "(whose installation is used)"
        )
    target = installation or str(repository)
    cache = given.get(APP_CACHE_VARIABLE)
    return AppConfig(
        app_id=app_id,
        key_file=Path(given[APP_KEY_VARIABLE]),
        installation_id=int(installation) if installation else None,
        repository=repository,
        cache_path=Path(cache) if cache else default_cache_path(app_id, target),
    )


def parse_routes(text: str) -> tuple[tuple[str, int], ...]:
    """``discover`` (no routes) or ``OWNER=ID,OWNER/NAME=ID,...``; ``invalid_app_config``."""
    if text.strip() == DISCOVER:
        return ()
    routes: dict[str, int] = {}
    for entry in (part.strip() for part in text.split(",")):
        target, _, number = entry.partition("=")
        target = target.strip()
        if not (_OWNER.fullmatch(target) or _REPOSITORY.fullmatch(target)):
            raise _invalid(
                f"{APP_INSTALLATIONS_VARIABLE}: {entry!r} is not OWNER=ID or OWNER/NAME=ID"
            )
        if not _INSTALLATION.fullmatch(number.strip()):
            raise _invalid(f"{APP_INSTALLATIONS_VARIABLE}: the installation of {target} is digits")
        if target.lower() in routes:
            raise _invalid(f"{APP_INSTALLATIONS_VARIABLE}: {target} is named twice")
        routes[target.lower()] = int(number)
    return tuple(routes.items())


def _many_config(given: Mapping[str, str]) -> AppConfig:
    both = [name for name in (APP_INSTALLATION_VARIABLE, APP_REPOSITORY_VARIABLE) if name in given]
    if both:
        raise _invalid(f"{APP_INSTALLATIONS_VARIABLE} replaces {both[0]}: set one of them")
    app_id = given[APP_ID_VARIABLE]
    cache = given.get(APP_CACHE_VARIABLE)
    return AppConfig(
        app_id=app_id,
        key_file=Path(given[APP_KEY_VARIABLE]),
        installation_id=None,
        repository=None,
        cache_path=Path(cache) if cache else default_cache_path(app_id, "many").with_suffix(""),
        routes=parse_routes(given[APP_INSTALLATIONS_VARIABLE]),
    )


def app_environment(config: AppConfig) -> dict[str, str]:
    """The variables that name ``config`` to a child process: ids and file names only
    (the key and the token stay in their files)."""
    handed = {
        APP_ID_VARIABLE: config.app_id,
        APP_KEY_VARIABLE: str(config.key_file),
        APP_CACHE_VARIABLE: str(config.cache_path),
    }
    if config.installation_id is not None:
        handed[APP_INSTALLATION_VARIABLE] = str(config.installation_id)
    if config.repository is not None:
        handed[APP_REPOSITORY_VARIABLE] = config.repository
    if config.routes is not None:
        listed = ",".join(f"{target}={number}" for target, number in config.routes)
        handed[APP_INSTALLATIONS_VARIABLE] = listed or DISCOVER
    return handed
