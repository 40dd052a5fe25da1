"""What ``kdev config validate`` checks beyond the schema (D74): that what kdev.yaml names
exists on this machine, as a review would need it.

- each reviewer's executable (``reviewer`` and a ``triage_reviewer`` of its own):
  ``argv[0]`` on PATH, or an absolute path to an executable file
  (``reviewer_spawn_failed``, as the review would fail);
- with a sandbox (``sandbox`` not ``off``), that executable and its real path visible in
  it (:meth:`wrapper.review.sandbox.Sandbox.check_visible`: the system directories plus
  ``sandbox_paths``);
- every variable the reviewers need: an openai reviewer's ``api_key_env`` and an
  ``api_proxy.key_env`` set and not empty (``reviewer_key_missing``); each name of
  ``reviewer.env_passthrough`` and ``reviewer_env`` set (``env_missing``).

``secret_env`` is optional by design: it names variables whose values must never appear
in a verdict, and an unset one has no value to leak (its defaults name three variables
that are seldom all set). Notify targets name no variables.

Each block is checked when it is itself valid, so a schema problem elsewhere does not
hide these.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from wrapper.config import CommandReviewer, KdevConfig, OpenAIReviewer
from wrapper.errors import ReviewerSpawnError

# The keys the checks read; each is validated alone (see the module doc).
_KEYS = ("reviewer", "triage_reviewer", "sandbox", "sandbox_paths", "reviewer_env")


@dataclass(frozen=True)
class Finding:
    """One problem at ``loc`` (a path of keys in the file)."""

    loc: tuple[int | str, ...]
    message: str
    reason: str


def probe(data: Mapping[str, Any], environ: Mapping[str, str]) -> list[Finding]:
    """The problems of the valid parts of kdev.yaml's ``data`` on this machine."""
    config = _valid_part(data)
    findings: list[Finding] = []
    reviewers: list[tuple[str, CommandReviewer | OpenAIReviewer]] = []
    if config.reviewer is not None:
        reviewers.append(("reviewer", config.reviewer))
    if config.triage_reviewer is not None and config.triage_reviewer != "reviewer":
        reviewers.append(("triage_reviewer", config.triage_reviewer))
    for key, reviewer in reviewers:
        if isinstance(reviewer, OpenAIReviewer):
            findings += _key_env((key, "api_key_env"), reviewer.api_key_env, environ)
            continue
        findings += _executable(key, reviewer.argv[0], config, environ)
        if reviewer.api_proxy is not None:
            where = (key, "api_proxy", "key_env")
            findings += _key_env(where, reviewer.api_proxy.key_env, environ)
        findings += _names_set((key, "env_passthrough"), reviewer.env_passthrough, environ)
    findings += _names_set(("reviewer_env",), config.reviewer_env, environ)
    return findings


def _valid_part(data: Mapping[str, Any]) -> KdevConfig:
    """A config of the keys of ``_KEYS`` that are valid on their own, a block without
    the keys the schema check reports (a typo'd key of ``reviewer`` does not hide its
    executable); defaults for the others."""
    kept: dict[str, Any] = {}
    for key in _KEYS:
        if key in data:
            value = _lenient(key, data[key])
            if value is not None:
                kept[key] = value
    try:
        return KdevConfig.model_validate(kept)
    except ValidationError:  # the parts disagree: the schema check says how
        return KdevConfig()


def _lenient(key: str, value: Any) -> Any:
    """``value`` of ``key``, or the mapping without its invalid keys, if that is valid
    alone; None when it is not."""
    for _ in range(3):
        try:
            KdevConfig.model_validate({key: value})
        except ValidationError as exc:
            if not isinstance(value, dict):
                return None
            bad = {_first_key(error["loc"][1:], value) for error in exc.errors()} - {None}
            if not bad:
                return None
            value = {name: item for name, item in value.items() if name not in bad}
            continue
        return value
    return None


def _first_key(loc: tuple[int | str, ...], block: dict[str, Any]) -> str | None:
    """The first step of ``loc`` that is a key of ``block`` (a union's tag is not)."""
    return next((part for part in loc if isinstance(part, str) and part in block), None)


def _executable(
    key: str, command: str, config: KdevConfig, environ: Mapping[str, str]
) -> list[Finding]:
    where = (key, "argv", 0)
    path = environ.get("PATH", os.defpath)
    if "/" in command and not os.path.isabs(command):
        said = f"reviewer executable {command!r} must be a bare name or an absolute path"
        return [Finding(where, said, "reviewer_spawn_failed")]
    found = shutil.which(command, path=path) if "/" not in command else None
    if "/" in command and os.path.isfile(command) and os.access(command, os.X_OK):
        found = command
    if found is None:
        said = (
            f"reviewer executable {command!r} is not on PATH {path!r}"
            if "/" not in command
            else f"reviewer executable {command} is not an executable file"
        )
        return [Finding(where, said, "reviewer_spawn_failed")]
    if config.sandbox == "off":
        return []
    from wrapper.review.sandbox import Sandbox

    paths = tuple(str(Path(p).expanduser()) for p in config.sandbox_paths)
    sandbox = Sandbox("bwrap", bwrap=config.sandbox_bwrap, extra_paths=paths)
    try:
        sandbox.check_visible(found)
        sandbox.check_visible(os.path.realpath(found))  # a link into an unbound directory
    except ReviewerSpawnError as exc:
        return [Finding(where, f"{exc.message} (sandbox: {config.sandbox})", exc.reason)]
    return []


def _key_env(where: tuple[int | str, ...], name: str, environ: Mapping[str, str]) -> list[Finding]:
    if environ.get(name):
        return []
    said = f"the API key variable {name} is not set (or empty) in kdev's environment"
    return [Finding(where, said, "reviewer_key_missing")]


def _names_set(
    where: tuple[int | str, ...], names: list[str], environ: Mapping[str, str]
) -> list[Finding]:
    said = "the variable {} is not set in kdev's environment"
    return [
        Finding((*where, index), said.format(name), "env_missing")
        for index, name in enumerate(names)
        if name not in environ
    ]
