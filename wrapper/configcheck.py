"""``kdev config validate`` / ``show``: every problem of kdev.yaml and repos.yaml at once,
each as ``FILE:LINE: where: problem``, with the line mapper schedule files use
(:func:`engine.api.yaml_line_of`)."""

from __future__ import annotations

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

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else str(self.path)
        return f"{where}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {"file": str(self.path), "line": self.line, "message": self.message}


def check_file(path: Path, model: type[BaseModel]) -> list[Problem]:
    """All problems of the YAML file at ``path`` against ``model``, in file order."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        return [Problem(path, None, f"cannot read: {exc.strerror or exc}")]
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
    try:
        model.model_validate(data)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            loc = _in_data(data, tuple(error["loc"]))
            shown = loc[:-1] if error["type"] in ("extra_forbidden", "missing") else loc
            where = dotted(shown) if shown else "(top level)"
            message = f"{where}: {describe_validation_error(error)}"
            problems.append(Problem(path, yaml_line_of(root, loc), message))
        return sorted(problems, key=lambda p: (p.line or 0, p.message))
    return []


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
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            node = None
    return tuple(kept)


def check_configs(kdev_config: Path | None, repos_config: Path | None) -> list[Problem]:
    """Problems of both files (either may be None: not checked)."""
    problems: list[Problem] = []
    if kdev_config is not None:
        problems += check_file(kdev_config, KdevConfig)
    if repos_config is not None:
        problems += check_file(repos_config, SweepConfig)
    return problems
