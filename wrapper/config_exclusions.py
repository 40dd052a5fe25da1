"""kdev.yaml ``exclusions`` and the repository's ``.kdev/exclusions.yaml`` (issue 28, D87):
the overrides of :mod:`wrapper.review.exclusions`' default rules.

Three layers, in order: the top level's ``exclusions``, then the repository's own file
:data:`REPO_FILE` read from the **base** tree only (a PR never changes how it is
reviewed; off with ``repo_file: false``), then ``repositories.<OWNER/NAME>.exclusions``.
``exclude`` and ``include`` add up across the layers; ``defaults`` and ``repo_file``
are the last layer's that sets them (default true).

Kept apart from :mod:`wrapper.config` (which holds only the two field lines) so that
module stays within its size; this module never imports it back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import yaml
from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError, field_validator

from wrapper.errors import ConfigError
from wrapper.review.exclusions import Policy

REPO_FILE = ".kdev/exclusions.yaml"
MAX_GLOB_CHARS = 300
MAX_REPO_FILE_BYTES = 64 * 1024
INVALID_REPO_FILE = "invalid_exclusions_file"


def _check_globs(value: list[str]) -> list[str]:
    for glob in value:
        if not glob or glob != glob.strip() or len(glob) > MAX_GLOB_CHARS:
            raise ValueError(
                f"glob {glob!r}: 1 to {MAX_GLOB_CHARS} characters, no leading or trailing space"
            )
        if not glob.isprintable():
            raise ValueError(f"glob {glob!r} has a control character")
    return value


class RepoExclusions(BaseModel):
    """The repository's :data:`REPO_FILE`: ``defaults``, ``exclude``, ``include``."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    defaults: StrictBool | None = None
    exclude: list[str] = Field(default_factory=list)
    include: list[str] = Field(default_factory=list)

    @field_validator("exclude", "include")
    @classmethod
    def _globs(cls, value: list[str]) -> list[str]:
        return _check_globs(value)


class ExclusionSettings(RepoExclusions):
    """kdev.yaml ``exclusions`` (top level, or one repository's): the file's keys, plus
    ``repo_file`` (whether the base tree's :data:`REPO_FILE` is read)."""

    repo_file: StrictBool | None = None


class ExclusionsRepository(Protocol):
    @property
    def exclusions(self) -> ExclusionSettings | None: ...


class ExclusionsConfig(Protocol):
    @property
    def exclusions(self) -> ExclusionSettings: ...

    @property
    def repositories(self) -> Mapping[str, ExclusionsRepository]: ...


def reads_repo_file(config: ExclusionsConfig, repo: str) -> bool:
    """Whether ``repo``'s base tree :data:`REPO_FILE` is read (default: yes)."""
    own = _own(config, repo)
    for layer in (own, config.exclusions):
        if layer is not None and layer.repo_file is not None:
            return layer.repo_file
    return True


def parse_repo_file(data: bytes | None) -> RepoExclusions | None:
    """The base tree's :data:`REPO_FILE` (None: there is none). ``ConfigError``
    ``invalid_exclusions_file`` when it is too big, not YAML, or not the schema: the
    round fails loud rather than review with rules nobody meant."""
    if data is None:
        return None
    where = f"{REPO_FILE} on the base branch"
    if len(data) > MAX_REPO_FILE_BYTES:
        raise ConfigError(f"{where} is over {MAX_REPO_FILE_BYTES} bytes", INVALID_REPO_FILE)
    try:
        loaded = yaml.safe_load(data.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        problem = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigError(f"{where} is not YAML: {problem}", INVALID_REPO_FILE) from None
    if loaded is None:
        return RepoExclusions()
    try:
        return RepoExclusions.model_validate(loaded)
    except ValidationError as exc:
        first = exc.errors()[0]
        place = ".".join(str(part) for part in first["loc"]) or "(top)"
        raise ConfigError(f"{where}: {place}: {first['msg']}", INVALID_REPO_FILE) from None


def policy_for(config: ExclusionsConfig, repo: str, repo_file: RepoExclusions | None) -> Policy:
    """The :class:`Policy` for ``repo``: the top level, then ``repo_file`` (the base
    tree's file, None when absent or not read), then the repository's own block."""
    layers = [config.exclusions, repo_file, _own(config, repo)]
    defaults = True
    exclude: list[str] = []
    include: list[str] = []
    for layer in layers:
        if layer is None:
            continue
        if layer.defaults is not None:
            defaults = layer.defaults
        exclude.extend(layer.exclude)
        include.extend(layer.include)
    return Policy(defaults=defaults, exclude=tuple(exclude), include=tuple(include))


def _own(config: ExclusionsConfig, repo: str) -> ExclusionSettings | None:
    settings = config.repositories.get(repo.lower())
    return settings.exclusions if settings is not None else None
