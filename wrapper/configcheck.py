"""``kdev config validate`` / ``show``: every problem of kdev.yaml and repos.yaml at once,
each as ``FILE:LINE: where: problem [reason]``, with the line mapper schedule files use
(:func:`engine.api.yaml_line_of`); an unknown key names the nearest known one at its
level; and what kdev.yaml names on this machine (wrapper.configprobe, D74)."""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from engine.api import describe_validation_error, dotted, yaml_line_of
from wrapper.config import KdevConfig
from wrapper.sweep.config import SweepConfig


@dataclass(frozen=True)
class Problem:
    """One error in one file."""

    path: Path
    line: int | None
    message: str
    reason: str = "invalid_config"

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else str(self.path)
        return f"{where}: {self.message} [{self.reason}]"

    def to_json(self) -> dict[str, Any]:
        return {
            "file": str(self.path),
            "line": self.line,
            "message": self.message,
            "reason": self.reason,
        }


def check_file(
    path: Path, model: type[BaseModel], environ: Mapping[str, str] | None = None
) -> list[Problem]:
    """All problems of the YAML file at ``path`` against ``model``, in file order; with
    ``environ`` (kdev.yaml only), also what :func:`wrapper.configprobe.probe` finds."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        return [Problem(path, None, f"cannot read: {exc.strerror or exc}", "config_unreadable")]
    try:
        root = yaml.compose(text)
        data: Any = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = int(mark.line) + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return [Problem(path, line, f"not valid YAML: {problem}")]
    if data is None:
        data = {}
    if not isinstance(data, dict) or root is None:
        line = int(root.start_mark.line) + 1 if root is not None else 1
        return [Problem(path, line, "the top level must be a mapping")]
    problems = _schema_problems(path, root, data, model)
    if environ is not None:
        from wrapper.configprobe import probe

        for found in probe(data, environ):
            message = f"{dotted(found.loc)}: {found.message}"
            problems.append(Problem(path, yaml_line_of(root, found.loc), message, found.reason))
    return sorted(problems, key=lambda p: (p.line or 0, p.message))


def _schema_problems(
    path: Path, root: yaml.Node, data: dict[str, Any], model: type[BaseModel]
) -> list[Problem]:
    try:
        model.model_validate(data)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            loc = _in_data(data, tuple(error["loc"]))
            shown = loc[:-1] if error["type"] in ("extra_forbidden", "missing") else loc
            where = dotted(shown) if shown else "(top level)"
            message = f"{where}: {describe_validation_error(error)}"
            if error["type"] == "extra_forbidden":
                message += _suggestion(model, data, loc)
            problems.append(Problem(path, yaml_line_of(root, loc), message))
        return problems
    return []


def _suggestion(model: type[BaseModel], data: Any, loc: tuple[int | str, ...]) -> str:
    """``"; did you mean 'x'?"`` for the unknown key at the end of ``loc``, with the
    nearest field name of the model at that level, or ``""``."""
    level = _model_at(model, data, loc[:-1])
    if level is None or not isinstance(loc[-1], str):
        return ""
    near = difflib.get_close_matches(loc[-1], list(level.model_fields), n=1)
    return f"; did you mean {near[0]!r}?" if near else ""


def _model_at(model: type[BaseModel], data: Any, loc: tuple[int | str, ...]) -> Any:
    """The model class that validates the mapping at ``loc`` of ``data`` (None: none)."""
    kind: Any = _pick(model, data)
    node = data
    for part in loc:
        if isinstance(kind, type) and issubclass(kind, BaseModel) and isinstance(part, str):
            field = kind.model_fields.get(part)
            kind = field.annotation if field is not None else None
        elif typing.get_origin(kind) is list and isinstance(part, int):
            kind = typing.get_args(kind)[0]
        elif typing.get_origin(kind) is dict and isinstance(part, str):
            kind = typing.get_args(kind)[1]
        else:
            return None
        node = _child(node, part)
        kind = _pick(kind, node)
    return kind if isinstance(kind, type) and issubclass(kind, BaseModel) else None


def _child(node: Any, part: int | str) -> Any:
    """The value at ``part`` of a mapping or list ``node`` of the file; None where there is
    none."""
    if isinstance(node, dict):
        return node.get(part)
    if isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
        return node[part]
    return None


def _pick(kind: Any, node: Any) -> Any:
    """``kind`` without ``Annotated`` and ``Optional``; of a union of models, the one
    whose literal tag (``backend``, ``type``) ``node`` has (else the first)."""
    while typing.get_origin(kind) is typing.Annotated:
        kind = typing.get_args(kind)[0]
    if typing.get_origin(kind) not in (typing.Union, types.UnionType):
        return kind
    members = [_pick(member, node) for member in typing.get_args(kind)]
    models = [m for m in members if isinstance(m, type) and issubclass(m, BaseModel)]
    for candidate in models:
        if isinstance(node, dict) and all(
            node.get(name) in typing.get_args(field.annotation)
            for name, field in candidate.model_fields.items()
            if typing.get_origin(field.annotation) is typing.Literal and name in node
        ):
            return candidate
    return models[0] if models else members[0]


def _in_data(data: Any, loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    """``loc`` without the steps pydantic adds that are not in the file (the tag of a
    tagged union, e.g. ``reviewer.command.timeout_seconds`` -> ``reviewer.timeout_seconds``).
    The last step is always kept."""
    kept: list[int | str] = []
    node = data
    for position, part in enumerate(loc):
        last = position == len(loc) - 1
        if isinstance(node, dict) and isinstance(part, str) and part not in node:
            if last:
                kept.append(part)  # a missing or unknown key: named in the message
            continue  # a union tag: not a key of the file
        kept.append(part)
        node = _child(node, part)
    return tuple(kept)


def check_configs(
    kdev_config: Path | None, repos_config: Path | None, environ: Mapping[str, str]
) -> list[Problem]:
    """Problems of both files (either may be None: not checked); ``environ`` is kdev's
    environment, where the reviewer's executable and variables must be."""
    problems: list[Problem] = []
    if kdev_config is not None:
        problems += check_file(kdev_config, KdevConfig, environ)
    if repos_config is not None:
        problems += check_file(repos_config, SweepConfig)
    return problems
