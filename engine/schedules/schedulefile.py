"""ScheduleSet files: the YAML that ``li schedule apply`` reads and ``li schedule export``
writes.

The file names an ``owner``; apply creates and updates the schedules it lists and only
ever removes schedules that the same owner created. Loading is strict and points at the
problem: every error is :class:`engine.errors.InvalidInput` with reason
``invalid_schedule_file`` and a one-line message ``FILE:LINE: what is wrong``.

Planning the loaded set against the database is engine.schedules.plan (pure). The file
format is documented in docs/schedules.md.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from engine.durations import parse_duration
from engine.errors import InvalidInput, LiError
from engine.poll.config import (
    CONFIG_ERROR_REASONS,
    GithubPollConfig,
    describe_validation_error,
    dotted,
)
from engine.schedules.plan import ScheduleSet
from engine.schedules.spec import (
    DEFAULT_RETRY_BACKOFF_SECONDS,
    DEFAULT_TIMEOUT_SECONDS,
    ENV_NAME,
    MAX_RETRY_ATTEMPTS,
    SCHEDULE_NAME,
    ScheduleSpec,
    check_name,
    cron_trigger,
    zone,
)
from engine.store.enums import OverlapPolicy, TriggerType

FORMAT_VERSION = 1
TRIGGER_KEYS = ("cron", "every", "github")
_MERGE_KEY_TAG = "tag:yaml.org,2002:merge"


class _RetryFile(BaseModel):
    """``retry: {max_attempts, backoff}``: a failed run is tried again (issue 15)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    max_attempts: int = Field(ge=1, le=MAX_RETRY_ATTEMPTS)
    backoff: str | None = None


class _EntryFile(BaseModel):
    """One schedule exactly as written in the file (types only; meaning comes later)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    name: str
    enabled: bool = True
    cron: str | None = None
    timezone: str | None = None
    every: str | None = None
    github: dict[str, Any] | None = None
    command: str
    args: list[str] = Field(default_factory=list)
    cwd: str | None = None
    timeout: str | None = None
    max_runs: int | None = Field(default=None, ge=1)
    env_passthrough: list[str] = Field(default_factory=list)
    overlap: Literal["skip", "allow"] = "skip"
    retry: _RetryFile | None = None


class _SetFile(BaseModel):
    """The top level of the file."""

    model_config = ConfigDict(extra="forbid", strict=True)

    version: Literal[1]
    owner: str
    schedules: list[_EntryFile]


# -- loading -----------------------------------------------------------------------------


class _FileError(Exception):
    """A problem at one line of the file (1-based); turned into InvalidInput at the edge."""

    def __init__(self, line: int, text: str, reason: str = "invalid_schedule_file") -> None:
        super().__init__(text)
        self.line = line
        self.text = text
        self.reason = reason


def _line(node: Node) -> int:
    return int(node.start_mark.line) + 1


def _scalar_key(node: Node) -> str | None:
    return str(node.value) if isinstance(node, ScalarNode) else None


def _child(node: Node, key: str) -> tuple[Node, Node] | None:
    """The (key node, value node) for ``key`` in a mapping node; the last one wins."""
    if not isinstance(node, MappingNode):
        return None
    for key_node, value_node in reversed(node.value):
        if _scalar_key(key_node) == key:
            return key_node, value_node
    return None


def _check_duplicate_keys(root: Node) -> None:
    """Refuse a mapping that repeats a key: PyYAML would silently keep the last one."""
    seen_nodes: set[int] = set()
    pending = [root]
    while pending:
        node = pending.pop()
        if id(node) in seen_nodes:
            continue
        seen_nodes.add(id(node))
        if isinstance(node, MappingNode):
            first_line: dict[tuple[str, str], int] = {}
            for key_node, value_node in node.value:
                pending.append(value_node)
                if not isinstance(key_node, ScalarNode) or key_node.tag == _MERGE_KEY_TAG:
                    continue
                identity = (key_node.tag, key_node.value)
                if identity in first_line:
                    raise _FileError(
                        _line(key_node),
                        f"duplicate key {key_node.value!r} (first at line {first_line[identity]})",
                    )
                first_line[identity] = _line(key_node)
        elif isinstance(node, SequenceNode):
            pending.extend(node.value)


def _line_of(root: Node, loc: Sequence[int | str]) -> int:
    """The line of the deepest node on ``loc`` that exists.

    A mapping step gives the key's line (the offending key); a sequence step gives the
    item's line. A missing key stops at its parent, whose line is then the answer.
    """
    node = root
    line = _line(root)
    for part in loc:
        if isinstance(part, int) and isinstance(node, SequenceNode):
            if not 0 <= part < len(node.value):
                break
            node = node.value[part]
            line = _line(node)
            continue
        found = _child(node, str(part))
        if found is None:
            break
        key_node, node = found
        line = _line(key_node)
    return line


def yaml_line_of(root: Node, loc: Sequence[int | str]) -> int:
    """Public name of :func:`_line_of`: the line of ``loc`` in a composed YAML document
    (the wrapper's config validation maps its errors with it, as schedule files do)."""
    return _line_of(root, loc)


def _subject(data: Any, loc: Sequence[int | str]) -> tuple[str, tuple[int | str, ...]]:
    """``("schedule 'x'", rest of loc)`` for a location inside a schedule entry."""
    if len(loc) >= 2 and loc[0] == "schedules" and isinstance(loc[1], int):
        index = loc[1]
        name = None
        entries = data.get("schedules") if isinstance(data, dict) else None
        if isinstance(entries, list) and index < len(entries):
            entry = entries[index]
            if isinstance(entry, dict) and isinstance(entry.get("name"), str):
                name = entry["name"]
        label = f"schedule {name!r}" if name is not None else f"schedules[{index}]"
        return label, tuple(loc[2:])
    return "", tuple(loc)


def _validation_problem(
    root: Node, data: Any, error: ErrorDetails, prefix: Sequence[int | str] = ()
) -> _FileError:
    loc = (*prefix, *error["loc"])
    line = _line_of(root, loc)
    subject, rest = _subject(data, loc)
    if error["type"] in ("extra_forbidden", "missing"):
        rest = rest[:-1]
    parts = [part for part in (subject, dotted(rest)) if part]
    parts.append(describe_validation_error(error))
    return _FileError(line, ": ".join(parts))


def _first_validation_problem(
    root: Node, data: Any, errors: Iterable[ErrorDetails], prefix: Sequence[int | str] = ()
) -> _FileError:
    """The error to show: the first in the file, a missing key only when nothing else.

    A misspelt key reads as unknown key + missing key; the unknown one explains both.
    """
    ranked = [
        (error["type"] == "missing", problem.line, problem)
        for error in errors
        for problem in [_validation_problem(root, data, error, prefix)]
    ]
    return min(ranked, key=lambda entry: entry[:2])[2]


def _github_config(
    root: Node, data: Any, index: int, raw: dict[str, Any], label: str
) -> dict[str, Any]:
    """The file's ``github:`` mapping as a validated GithubPollConfig dump."""
    loc: tuple[int | str, ...] = ("schedules", index, "github")
    config = dict(raw)
    if "poll_interval_seconds" in config:
        raise _FileError(
            _line_of(root, (*loc, "poll_interval_seconds")),
            f"{label}: github: unknown key 'poll_interval_seconds' (write poll_interval: 2m)",
        )
    if "poll_interval" in config:
        where = _line_of(root, (*loc, "poll_interval"))
        text = config.pop("poll_interval")
        if not isinstance(text, str):
            raise _FileError(
                where, f"{label}: github.poll_interval must be a duration like 2m, got {text!r}"
            )
        seconds = _duration(where, label, "github.poll_interval", text)
        if seconds < 10:
            raise _FileError(where, f"{label}: github.poll_interval must be at least 10s")
        config["poll_interval_seconds"] = seconds
    try:
        parsed = GithubPollConfig.model_validate(config)
    except ValidationError as exc:
        errors = exc.errors()
        for error in errors:
            if error["loc"][:1] == ("poll_interval_seconds",):
                error["loc"] = ("poll_interval", *error["loc"][1:])
        problem = _first_validation_problem(root, data, errors, loc)
        # allowlist_config_error and invalid_handle keep their own reason code.
        own = [error for error in errors if error["type"] in CONFIG_ERROR_REASONS]
        if own:
            problem = _validation_problem(root, data, own[0], loc)
            problem.reason = str(own[0]["type"])
        raise problem from None
    return parsed.model_dump(mode="json")


def _duration(line: int, label: str, key: str, text: str) -> int:
    try:
        return parse_duration(text, what=key)
    except LiError as exc:
        raise _FileError(line, f"{label}: {exc.message}") from None


_LineOf = Callable[..., int]


def _entry_trigger(
    root: Node, data: Any, index: int, entry: _EntryFile, line_of: _LineOf
) -> tuple[TriggerType, int | None, dict[str, Any]]:
    """``(trigger_type, interval_seconds, trigger_config)`` of one entry, checked."""
    label = f"schedule {entry.name!r}"
    given = [key for key in TRIGGER_KEYS if getattr(entry, key) is not None]
    if len(given) != 1:
        found = " and ".join(given) if given else "none"
        # The second trigger in file order is the one to take out.
        line = sorted(line_of(key) for key in given)[1] if given else line_of()
        raise _FileError(
            line, f"{label}: give exactly one of cron, every or github (found {found})"
        )

    if entry.timezone is not None:
        if entry.github is not None:
            raise _FileError(
                line_of("timezone"), f"{label}: timezone applies to cron and every only"
            )
        try:
            zone(entry.timezone)
        except LiError as exc:
            raise _FileError(line_of("timezone"), f"{label}: {exc.message}") from None

    if entry.cron is not None:
        try:
            cron_trigger(entry.cron, entry.timezone)
        except LiError as exc:
            raise _FileError(line_of("cron"), f"{label}: {exc.message}") from None
        return TriggerType.CRON, None, {}
    if entry.every is not None:
        seconds = _duration(line_of("every"), label, "every", entry.every)
        return TriggerType.INTERVAL, seconds, {}
    assert entry.github is not None
    return TriggerType.GITHUB_POLL, None, _github_config(root, data, index, entry.github, label)


def _entry_spec(
    root: Node, data: Any, index: int, entry: _EntryFile, base_dir: Path
) -> ScheduleSpec:
    """One validated file entry as a ScheduleSpec; meaning-level checks with lines."""
    loc: tuple[int | str, ...] = ("schedules", index)
    label = f"schedule {entry.name!r}"

    def line_of(*keys: int | str) -> int:
        return _line_of(root, (*loc, *keys))

    try:
        check_name(entry.name)
    except LiError as exc:
        raise _FileError(line_of("name"), exc.message) from None

    trigger_type, interval_seconds, trigger_config = _entry_trigger(
        root, data, index, entry, line_of
    )

    timeout_seconds = DEFAULT_TIMEOUT_SECONDS
    if entry.timeout is not None:
        timeout_seconds = _duration(line_of("timeout"), label, "timeout", entry.timeout)
    retry_max_attempts, retry_backoff = 1, DEFAULT_RETRY_BACKOFF_SECONDS
    if entry.retry is not None:
        retry_max_attempts = entry.retry.max_attempts
        if entry.retry.backoff is not None:
            where = line_of("retry", "backoff")
            retry_backoff = _duration(where, label, "retry.backoff", entry.retry.backoff)

    for position, variable in enumerate(entry.env_passthrough):
        if not ENV_NAME.match(variable):
            raise _FileError(
                line_of("env_passthrough", position),
                f"{label}: env_passthrough {variable!r} is not a variable name",
            )

    cwd = None
    if entry.cwd is not None:
        # Relative to the file, so a set and the checkout it points into move together.
        cwd = os.path.normpath(base_dir / Path(entry.cwd).expanduser())

    return ScheduleSpec(
        name=entry.name,
        enabled=entry.enabled,
        trigger_type=trigger_type,
        cron=entry.cron,
        timezone=entry.timezone,
        interval_seconds=interval_seconds,
        trigger_config=trigger_config,
        command=entry.command,
        args=list(entry.args),
        cwd=cwd,
        timeout_seconds=timeout_seconds,
        max_runs=entry.max_runs,
        env_passthrough=list(entry.env_passthrough),
        overlap=OverlapPolicy(entry.overlap),
        retry_max_attempts=retry_max_attempts,
        retry_backoff_seconds=retry_backoff,
    )


def _parse(text: str, base_dir: Path) -> ScheduleSet:
    try:
        loader = yaml.SafeLoader(text)
        try:
            root = loader.get_single_node()
            if root is None:
                raise _FileError(1, "the file is empty; expected version, owner and schedules")
            # Before constructing: construction flattens merge keys into the nodes.
            _check_duplicate_keys(root)
            data = loader.construct_document(root)
        finally:
            loader.dispose()
    except yaml.reader.ReaderError as exc:
        # Raised for str input only on a non-printable character; it has no line mark.
        line = text.count("\n", 0, exc.position) + 1
        raise _FileError(line, f"YAML syntax error: {str(exc).splitlines()[0]}") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = int(mark.line) + 1 if mark is not None else 1
        problem = ", ".join(part for part in (exc.context, exc.problem) if part)
        raise _FileError(line, f"YAML syntax error: {problem or 'cannot parse'}") from None
    except yaml.YAMLError as exc:
        raise _FileError(1, f"YAML error: {exc}") from None

    if not isinstance(data, dict):
        raise _FileError(
            _line(root),
            f"the top level must be a mapping with version, owner and schedules, "
            f"not a {type(data).__name__}",
        )
    try:
        parsed = _SetFile.model_validate(data)
    except ValidationError as exc:
        raise _first_validation_problem(root, data, exc.errors()) from None

    if not SCHEDULE_NAME.match(parsed.owner):
        raise _FileError(
            _line_of(root, ("owner",)),
            f"owner {parsed.owner!r} must be 1-100 of letters, digits, '.', '_' or '-', "
            "starting with a letter or digit",
        )
    first_line: dict[str, int] = {}
    specs = []
    for index, entry in enumerate(parsed.schedules):
        name_line = _line_of(root, ("schedules", index, "name"))
        if entry.name in first_line:
            raise _FileError(
                name_line,
                f"schedule {entry.name!r} is defined twice (first at line "
                f"{first_line[entry.name]})",
            )
        first_line[entry.name] = name_line
        specs.append(_entry_spec(root, data, index, entry, base_dir))
    return ScheduleSet(owner=parsed.owner, schedules=specs)


def load_schedule_set(path: Path) -> ScheduleSet:
    """Read and validate a ScheduleSet file.

    Relative ``cwd`` values resolve against the file's folder. Raises InvalidInput with
    reason ``invalid_schedule_file`` and a one-line ``FILE:LINE: problem`` message (no
    line when the file cannot be read at all).
    """
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise InvalidInput(
            f"{path}: cannot read the schedule file: {exc.strerror or exc}",
            "invalid_schedule_file",
        ) from None
    except UnicodeDecodeError:
        raise InvalidInput(
            f"{path}: the schedule file is not UTF-8 text", "invalid_schedule_file"
        ) from None
    try:
        return _parse(text, path.parent.absolute())
    except _FileError as exc:
        message = " ".join(exc.text.splitlines())
        raise InvalidInput(f"{path}:{exc.line}: {message}", exc.reason) from None
