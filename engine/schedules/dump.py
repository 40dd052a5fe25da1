"""Writing a ScheduleSet file: ``li schedule export`` prints schedules as YAML that
engine.schedules.schedulefile reads back to equal specs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml

from engine.durations import format_duration
from engine.poll.config import DEFAULT_POLL_INTERVAL_SECONDS, validate_poll_config
from engine.schedules.schedulefile import FORMAT_VERSION
from engine.schedules.spec import DEFAULT_TIMEOUT_SECONDS, ScheduleSpec
from engine.store.enums import OverlapPolicy, TriggerType


class _SetDumper(yaml.SafeDumper):
    """Block style for mappings, flow style for lists of plain values (args, env)."""


def _represent_list(dumper: yaml.SafeDumper, data: list[Any]) -> yaml.SequenceNode:
    flow = all(isinstance(item, str | int | float | bool) for item in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    # PyYAML's single-quoted style mangles these line breaks; double quotes escape them.
    style = '"' if any(char in data for char in "\x85\u2028\u2029") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_SetDumper.add_representer(list, _represent_list)
_SetDumper.add_representer(str, _represent_str)


def _github_entry(config: dict[str, Any]) -> dict[str, Any]:
    parsed = validate_poll_config(config)
    entry: dict[str, Any] = {"repo": parsed.repo}
    if parsed.poll_interval_seconds != DEFAULT_POLL_INTERVAL_SECONDS:
        entry["poll_interval"] = format_duration(parsed.poll_interval_seconds)
    filters = parsed.filters.model_dump(mode="json", exclude_defaults=True)
    if filters:
        entry["filters"] = filters
    rest = parsed.model_dump(
        mode="json",
        exclude_defaults=True,
        exclude={"repo", "poll_interval_seconds", "filters"},
    )
    entry.update(rest)
    return entry


def _entry(spec: ScheduleSpec) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": spec.name}
    if not spec.enabled:
        entry["enabled"] = False
    if spec.trigger_type is TriggerType.CRON:
        entry["cron"] = spec.cron
    elif spec.trigger_type is TriggerType.INTERVAL:
        assert spec.interval_seconds is not None
        entry["every"] = format_duration(spec.interval_seconds)
    else:
        entry["github"] = _github_entry(spec.trigger_config)
    if spec.timezone is not None:
        entry["timezone"] = spec.timezone
    entry["command"] = spec.command
    if spec.args:
        entry["args"] = list(spec.args)
    if spec.cwd is not None:
        entry["cwd"] = spec.cwd
    if spec.timeout_seconds != DEFAULT_TIMEOUT_SECONDS:
        entry["timeout"] = format_duration(spec.timeout_seconds)
    if spec.max_runs is not None:
        entry["max_runs"] = spec.max_runs
    if spec.env_passthrough:
        entry["env_passthrough"] = list(spec.env_passthrough)
    if spec.overlap is not OverlapPolicy.SKIP:
        entry["overlap"] = spec.overlap.value
    if spec.retry_max_attempts > 1:
        entry["retry"] = {
            "max_attempts": spec.retry_max_attempts,
            "backoff": format_duration(spec.retry_backoff_seconds),
        }
    return entry


def dump_schedule_set(owner: str, specs: Sequence[ScheduleSpec]) -> str:
    """YAML text that :func:`load_schedule_set` reads back to equal specs.

    Defaults are omitted and durations written with ``format_duration``; ``cwd`` is
    written as stored (absolute for anything that came from a file or the database).
    A github_poll spec whose ``trigger_config`` does not validate raises
    ``invalid_trigger_config``.
    """
    document = {
        "version": FORMAT_VERSION,
        "owner": owner,
        "schedules": [_entry(spec) for spec in specs],
    }
    return yaml.dump(document, Dumper=_SetDumper, sort_keys=False, allow_unicode=True, width=100)
