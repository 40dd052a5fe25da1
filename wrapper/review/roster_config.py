"""The ``# Configuration`` block of the root ``AGENT-REVIEWERS.md``: exactly one fenced
JSON object (``disabled``, ``overlap_acknowledged``, ``independent_validator``).
Problems are ``ConfigError roster_config_error``; unknown keys are warnings."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from wrapper.errors import ConfigError
from wrapper.review.roster_defaults import DEFAULT_REVIEWERS, markdown_parser

ROSTER_CONFIG_ERROR = "roster_config_error"
UNCERTAIN_ACTIONS = ("post_with_annotation", "post_silently", "drop")
CONFIG_KEYS = frozenset({"disabled", "overlap_acknowledged", "independent_validator"})
VALIDATOR_KEYS = frozenset({"enabled", "skip_for", "uncertain_action"})


@dataclass(frozen=True)
class IndependentValidator:
    """``independent_validator`` of the configuration (parsed and reported only)."""

    enabled: bool = False
    skip_for: tuple[str, ...] = ()
    uncertain_action: str = "post_with_annotation"


@dataclass(frozen=True)
class RosterConfig:
    """The root file's ``# Configuration`` block."""

    disabled: tuple[str, ...] = ()
    overlap_acknowledged: tuple[dict[str, Any], ...] = ()
    independent_validator: IndependentValidator = field(default_factory=IndependentValidator)


def _config_error(path: str, problem: str) -> ConfigError:
    return ConfigError(f"{path}: # Configuration: {problem}", ROSTER_CONFIG_ERROR)


def parse_configuration(path: str, section: str) -> tuple[RosterConfig, list[str]]:
    """The ``# Configuration`` section of the root file: exactly one fenced JSON block
    holding an object. Raises ``ConfigError roster_config_error`` for: no or several
    fenced blocks, invalid JSON, a non-object, ``disabled`` not a list of names, an
    ``overlap_acknowledged`` entry that is not an object with a non-empty ``reason``,
    ``independent_validator`` not an object, ``enabled`` not a boolean, ``skip_for`` not
    an array of strings, ``uncertain_action`` not one of :data:`UNCERTAIN_ACTIONS`.
    Unknown keys (top level or nested) and unknown names in ``disabled`` are warnings.
    """
    fences = [t for t in markdown_parser().parse(section) if t.type == "fence"]
    if len(fences) != 1:
        raise _config_error(path, f"expected exactly one fenced JSON block, found {len(fences)}")
    try:
        data = json.loads(fences[0].content)
    except json.JSONDecodeError as exc:
        raise _config_error(path, f"invalid JSON: {exc.msg} (line {exc.lineno})") from None
    if not isinstance(data, dict):
        raise _config_error(path, "the JSON block must be an object")
    warnings = [
        f"{path}: # Configuration: unknown key {key!r} ignored"
        for key in data
        if key not in CONFIG_KEYS
    ]

    disabled = data.get("disabled", [])
    if not isinstance(disabled, list) or not all(isinstance(n, str) for n in disabled):
        raise _config_error(path, "disabled must be an array of reviewer names")
    warnings += [
        f"{path}: # Configuration: disabled names unknown default reviewer {name!r}"
        for name in disabled
        if name not in DEFAULT_REVIEWERS
    ]

    overlaps = data.get("overlap_acknowledged", [])
    if not isinstance(overlaps, list):
        raise _config_error(path, "overlap_acknowledged must be an array")
    for number, entry in enumerate(overlaps):
        if not isinstance(entry, dict):
            raise _config_error(path, f"overlap_acknowledged[{number}] must be an object")
        reason = entry.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise _config_error(path, f"overlap_acknowledged[{number}] has no reason")

    raw = data.get("independent_validator", {})
    if not isinstance(raw, dict):
        raise _config_error(path, "independent_validator must be an object")
    warnings += [
        f"{path}: # Configuration: unknown key independent_validator.{key} ignored"
        for key in raw
        if key not in VALIDATOR_KEYS
    ]
    enabled = raw.get("enabled", False)
    if not isinstance(enabled, bool):
        raise _config_error(path, "independent_validator.enabled must be a boolean")
    skip_for = raw.get("skip_for", [])
    if not isinstance(skip_for, list) or not all(isinstance(s, str) for s in skip_for):
        raise _config_error(path, "independent_validator.skip_for must be an array of strings")
    action = raw.get("uncertain_action", "post_with_annotation")
    if action not in UNCERTAIN_ACTIONS:
        raise _config_error(
            path,
            f"independent_validator.uncertain_action must be one of "
            f"{'|'.join(UNCERTAIN_ACTIONS)}, got {action!r}",
        )
    config = RosterConfig(
        disabled=tuple(disabled),
        overlap_acknowledged=tuple(overlaps),
        independent_validator=IndependentValidator(enabled, tuple(skip_for), action),
    )
    return config, warnings
