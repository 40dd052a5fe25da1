"""The repos config of ``kdev pr-sweep --repos-config FILE`` (YAML, validated, unknown keys
refused).

::

    identity:                       # the author and committer of update-branch merges
      name: kdev-sweep
      email: kdev-sweep@example.invalid
    repositories:
      - repo: octo/widgets          # OWNER/NAME
        checkout: /srv/checkouts/widgets   # relative paths: from this file's folder
        remote: origin              # default origin
        notify: [{type: log}]       # optional; replaces KDEV_CONFIG's notify for this repo
    health:
      database_url: null            # the li database; null: LI_DATABASE_URL / li's default
      review_schedules: [review-prs]   # li schedules whose health the sweep reports

Errors are :class:`~wrapper.errors.ConfigError` (exit 2): ``repos_config_unreadable``
or ``invalid_repos_config``.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, ValidationError, field_validator

from wrapper.config import NotifyTarget, check_repo, read_yaml
from wrapper.config_base import Strict as _Strict
from wrapper.errors import ConfigError, KdevError


class Identity(_Strict):
    """Who the merge commits of update-branch are by (author and committer)."""

    name: str = Field(min_length=1, max_length=200)
    email: str = Field(min_length=3, max_length=320)

    @field_validator("name", "email")
    @classmethod
    def _one_line(cls, value: str) -> str:
        if any(c in value for c in "\0\n\r<>") or not value.strip():
            raise ValueError("must be one line without '<' or '>'")
        return value


class RepositoryEntry(_Strict):
    """One repository the sweep covers, and the checkout it works in."""

    repo: str
    checkout: str = Field(min_length=1)
    remote: str = "origin"
    notify: list[NotifyTarget] | None = None  # None: KDEV_CONFIG's notify targets

    @field_validator("repo")
    @classmethod
    def _valid_repo(cls, value: str) -> str:
        try:
            check_repo(value)
        except KdevError as exc:
            raise ValueError(exc.message) from None
        return value

    @field_validator("remote")
    @classmethod
    def _valid_remote(cls, value: str) -> str:
        if (
            not value
            or value.startswith("-")
            or "://" in value
            or any(c in value for c in "\0\n\r")
        ):
            raise ValueError("must be the name of a configured git remote")
        return value


class HealthSettings(_Strict):
    """Where the sweep reads the poller's health (the li database, read only)."""

    database_url: str | None = None
    # None (absent): every github_poll schedule of a configured repository; a list
    # overrides it, [] turns the check off (wrapper.sweep.healthscope).
    review_schedules: list[str] | None = None


class SweepConfig(_Strict):
    """The whole repos config."""

    identity: Identity
    repositories: list[RepositoryEntry] = Field(min_length=1)
    health: HealthSettings = Field(default_factory=HealthSettings)

    @field_validator("repositories")
    @classmethod
    def _unique(cls, value: list[RepositoryEntry]) -> list[RepositoryEntry]:
        names = [entry.repo.lower() for entry in value]
        if len(set(names)) != len(names):
            raise ValueError("a repository is listed twice")
        return value


def load_sweep_config(path: str | Path) -> SweepConfig:
    """Read and validate the repos config; relative checkouts are made absolute against
    the file's folder."""
    source = Path(path)
    data = read_yaml(source, "repos config", "repos_config_unreadable", "invalid_repos_config")
    if not isinstance(data, dict):
        raise ConfigError(
            f"repos config {source}: the top level must be a mapping", "invalid_repos_config"
        )
    try:
        config = SweepConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise ConfigError(
            f"repos config {source}: {where}: {first['msg']}", "invalid_repos_config"
        ) from None
    folder = source.resolve().parent
    entries = [
        entry.model_copy(update={"checkout": str(folder / Path(entry.checkout).expanduser())})
        for entry in config.repositories
    ]
    return config.model_copy(update={"repositories": entries})
