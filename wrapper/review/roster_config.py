"""The ``# Configuration`` block of the root ``AGENT-REVIEWERS.md``: exactly one fenced
JSON object (``defaults_version_checked``, ``disabled``, ``overlap_acknowledged``,
``independent_validator``). Problems are ``ConfigError roster_config_error``; unknown
keys are warnings. A pin (``defaults_version_checked``) that is not the built-in set's
version is ``stale_roster_pin`` where :func:`check_defaults_pin` is asked."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from wrapper.errors import ConfigError
from wrapper.review.roster_defaults import DEFAULT_REVIEWERS, DEFAULTS_VERSION, markdown_parser

ROSTER_CONFIG_ERROR = "roster_config_error"
STALE_ROSTER_PIN = "stale_roster_pin"
UNCERTAIN_ACTIONS = ("post_with_annotation", "post_silently", "drop")
CONFIG_KEYS = frozenset(
    {"defaults_version_checked", "disabled", "overlap_acknowledged", "independent_validator"}
)
VALIDATOR_KEYS = frozenset({"enabled", "skip_for", "uncertain_action"})


@dataclass(frozen=True)
class IndependentValidator:
    """``independent_validator`` of the configuration (acted on by wrapper.review.validator)."""

    enabled: bool = False
    skip_for: tuple[str, ...] = ()
    uncertain_action: str = "post_with_annotation"


@dataclass(frozen=True)
class RosterConfig:
    """The root file's ``# Configuration`` block."""

    disabled: tuple[str, ...] = ()
    overlap_acknowledged: tuple[dict[str, Any], ...] = ()
    independent_validator: IndependentValidator = field(default_factory=IndependentValidator)
    defaults_version_checked: str | None = None


def check_defaults_pin(path: str, config: RosterConfig, *, skip: bool = False) -> str | None:
    """Raise ``ConfigError stale_roster_pin`` when the root file pins a version of the
    built-in reviewers other than :data:`DEFAULTS_VERSION`; with ``skip`` the same
    problem is returned as a warning instead. None when there is no pin or it is current."""
    pinned = config.defaults_version_checked
    if pinned is None or pinned == DEFAULTS_VERSION:
        return None
    problem = (
        f"{path}: # Configuration: defaults_version_checked is {pinned!r} but the built-in "
        f"reviewers are version {DEFAULTS_VERSION!r}; re-read them (kdev reviewers --json) "
        "and update the pin"
    )
    if skip:
        return problem
    raise ConfigError(problem, STALE_ROSTER_PIN)


def _overlaps(path: str, raw: Any) -> list[dict[str, Any]]:
    """``overlap_acknowledged`` as a list of ``{"reviewers": [...], "reason": ...}``; the
    list form is kept as written, the map form ``{NAME: {"overlaps_with": OTHER or
    [OTHERS], "reason": TEXT}}`` becomes one entry per name."""
    if isinstance(raw, dict):
        entries: list[dict[str, Any]] = []
        for name, value in raw.items():
            if not isinstance(value, dict):
                raise _config_error(path, f"overlap_acknowledged.{name} must be an object")
            others = value.get("overlaps_with", [])
            others = [others] if isinstance(others, str) else others
            if (
                not isinstance(others, list)
                or not others
                or not all(isinstance(o, str) and o for o in others)
            ):
                raise _config_error(
                    path, f"overlap_acknowledged.{name}.overlaps_with must name a reviewer"
                )
            entries.append({"reviewers": [name, *others], "reason": value.get("reason")})
        raw = entries
    if not isinstance(raw, list):
        raise _config_error(path, "overlap_acknowledged must be an array or an object")
    for number, entry in enumerate(raw):
        if not isinstance(entry, dict):
            raise _config_error(path, f"overlap_acknowledged[{number}] must be an object")
        reason = entry.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise _config_error(path, f"overlap_acknowledged[{number}] has no reason")
    return raw


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

    overlaps = _overlaps(path, data.get("overlap_acknowledged", []))
    pinned = data.get("defaults_version_checked")
    if pinned is not None and (not isinstance(pinned, str) or not pinned.strip()):
        raise _config_error(path, "defaults_version_checked must be a version string")

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
        defaults_version_checked=pinned,
    )
    return config, warnings
