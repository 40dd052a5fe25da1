"""The GitHub client's settings for kdev, without pydantic-settings when it is not needed.

``engine.config.Settings.from_env`` is the one reader of the ``LI_*`` and ``GITHUB_*``
variables. Importing it costs pydantic-settings (and through it asyncio): about a tenth
of ``kdev review-pr``'s carry-forward, which reads seven of its fields (issue 19; the
three bounds of one answer since issue 24). :func:`github_settings` gives the same
values without that import when it can prove that ``Settings.from_env`` would accept the
environment and read them the same way:

- every variable ``Settings`` reads (each field's variable and, as pydantic-settings
  also accepts them, the field names themselves) is absent, empty (which counts as unset)
  or in a plain form whose meaning is not in doubt: digits for a whole number, digits
  with an optional decimal fraction for seconds, valid names for ``LI_ENV_PASSTHROUGH``,
  any text for the strings; each within its field's bounds; and a token variable is
  set, or neither ``GITHUB_TOKEN_FILE`` nor ``CREDENTIALS_DIRECTORY`` (which name a
  file that ``Settings`` reads the token from);
- then the values are read as ``Settings`` reads them: ``GITHUB_API_URL`` without a
  trailing ``/``, ``GITHUB_TOKEN`` before ``GH_TOKEN``, a zero ``LI_GITHUB_TIMEOUT``
  meaning 30, the defaults otherwise (engine.github.limits holds those of the bounds).

Anything else - a field name used as a variable, a sign, a space, an exponent, an
out-of-range number, a bad name, text that is not valid Unicode - goes to
``Settings.from_env`` itself, so every error (and every odd but accepted form) is
exactly the one ``Settings`` gives. The test of plainness is li's own
(:func:`engine.plainenv.plain_environment`, which li's fast ``schedule list`` asks too);
tests/wrapper/test_config_env.py checks both readers against each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from engine.github import GitHubSettings, limits
from engine.plainenv import plain_environment

# engine.config's DEFAULT_GITHUB_API_URL (the test checks they agree).
DEFAULT_GITHUB_API_URL = "https://api.github.com"


@dataclass(frozen=True)
class GitHubEnv:
    """The fields of ``Settings`` the GitHub client reads (a :class:`GitHubSettings`)."""

    github_api_url: str
    github_token: str | None
    github_timeout_seconds: float
    github_requests_per_minute: int
    github_max_body_bytes: int = limits.DEFAULT_MAX_BODY_BYTES
    github_deadline_seconds: float = limits.DEFAULT_DEADLINE_SECONDS
    github_max_redirects: int = limits.DEFAULT_MAX_REDIRECTS


def github_settings(environ: Mapping[str, str]) -> GitHubSettings:
    """The GitHub client's settings from ``environ``, as ``Settings.from_env`` reads them
    (and with its ``ConfigError`` for a malformed value)."""
    fast = read_plain(environ)
    if fast is not None:
        return fast
    from engine.config import Settings

    return Settings.from_env(environ)


def read_plain(environ: Mapping[str, str]) -> GitHubEnv | None:
    """The GitHub fields when every variable ``Settings`` reads is plainly valid; else None."""
    env = plain_environment(environ)
    if env is None:
        return None
    timeout = float(env.get("LI_GITHUB_TIMEOUT", "0")) or 30.0
    return GitHubEnv(
        github_api_url=env.get("GITHUB_API_URL", DEFAULT_GITHUB_API_URL).rstrip("/"),
        github_token=env.get("GITHUB_TOKEN", env.get("GH_TOKEN")),
        github_timeout_seconds=timeout,
        github_requests_per_minute=int(env.get("LI_GITHUB_RATE", limits.DEFAULT_POINTS_PER_MINUTE)),
        github_max_body_bytes=int(
            env.get("LI_GITHUB_MAX_BODY_BYTES", limits.DEFAULT_MAX_BODY_BYTES)
        ),
        github_deadline_seconds=float(
            env.get("LI_GITHUB_DEADLINE", limits.DEFAULT_DEADLINE_SECONDS)
        ),
        github_max_redirects=int(env.get("LI_GITHUB_MAX_REDIRECTS", limits.DEFAULT_MAX_REDIRECTS)),
    )
