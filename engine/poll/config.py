"""GithubPollConfig: the settings of a ``github_poll`` schedule, validated.

The config is stored as ``ScheduleSpec.trigger_config`` (a plain dict, the JSON dump of
:class:`GithubPollConfig`). Types are strict: ``draft: "false"`` is a string, not a
boolean, and is refused rather than guessed at. Reason codes:

- ``invalid_repo``: not ``OWNER/NAME`` as GitHub spells them
- ``invalid_filter``: a ``key=value`` filter from the CLI with an unknown key or bad value
- ``invalid_trigger_config``: a stored or given config that does not validate
- ``allowlist_config_error``: a ``mentions.allowlist`` entry is not a numeric user id
- ``invalid_handle``: ``mentions.handle`` is not a GitHub login

A ``mentions`` block may name ``verbs`` (words a mention may be followed by) and a
``default_verb`` (the verb of any other mention, and of ``pr_opened``); a verb that is
not one word is ``invalid_trigger_config``. The engine has no verbs of its own.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails, PydanticCustomError

from engine.durations import MAX_POLL_INTERVAL_SECONDS
from engine.errors import InvalidInput, field_checked
from engine.github.types import repo_problem, validate_repo_name
from engine.triggers import (
    ALLOWLIST_CONFIG_ERROR,
    allowlist_ids,
    validate_handle,
    validate_verb,
)

_SCALAR_TYPES = (str, int, float, bool, type(None))

FILTER_KEYS = ("state", "base", "draft", "same_repo_only")
DEFAULT_POLL_INTERVAL_SECONDS = 120


def parse_repo(text: str) -> str:
    """``text`` unchanged when it is ``OWNER/NAME``; ``invalid_repo`` otherwise."""
    return validate_repo_name(text)


class PollFilters(BaseModel):
    """Which pull requests a poll may fire for; everything else moves the cursor only."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    state: Literal["open"] = "open"
    base: StrictStr | None = Field(default=None, min_length=1)  # None: any base branch
    draft: StrictBool | None = None  # None: drafts and ready PRs alike
    same_repo_only: StrictBool = True  # False lets fork PRs fire (the wrapper still checks)


def _as_verb(value: object) -> str:
    return field_checked(validate_verb, value)


class MentionsConfig(BaseModel):
    """What a ``mentions`` schedule listens for: comments that mention ``handle`` written
    by an allowlisted numeric user id, and (``pr_opened``) new pull requests opened by
    one. ``self_user_id`` is deprecated and ignored (kept so that stored schedules and
    schedule files still load): the engine does not filter by account.

    ``verbs`` and ``default_verb`` give the ``verb`` template variable: the word after
    a mention when it is one of ``verbs`` (case-insensitive), else ``default_verb``;
    ``pr_opened`` gets ``default_verb``. With no ``default_verb`` such an event has no
    ``verb`` variable. Both are left out of dumps when unset, so a stored schedule
    written before they existed reads back unchanged."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    handle: StrictStr
    allowlist: list[int]
    self_user_id: StrictInt | None = Field(default=None, ge=1)
    pr_opened: StrictBool = True
    verbs: list[str] = Field(default_factory=list, exclude_if=lambda value: not value)
    default_verb: str | None = Field(default=None, exclude_if=lambda value: value is None)

    @field_validator("verbs", mode="before")
    @classmethod
    def _verbs_are_words(cls, value: object) -> list[str]:
        if not isinstance(value, list):
            raise PydanticCustomError("list_type", "Input should be a valid list")
        words: list[str] = []
        for item in value:
            word = _as_verb(item)
            if word not in words:
                words.append(word)
        return words

    @field_validator("default_verb", mode="before")
    @classmethod
    def _default_verb_is_a_word(cls, value: object) -> str | None:
        return None if value is None else _as_verb(value)

    @field_validator("handle")
    @classmethod
    def _handle_is_a_login(cls, value: str) -> str:
        return field_checked(validate_handle, value)

    @field_validator("allowlist", mode="before")
    @classmethod
    def _allowlist_is_user_ids(cls, value: object) -> list[int]:
        return field_checked(allowlist_ids, value)


class GithubPollConfig(BaseModel):
    """How a ``github_poll`` schedule watches one repository's pull requests."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    repo: StrictStr
    poll_interval_seconds: StrictInt = Field(
        default=DEFAULT_POLL_INTERVAL_SECONDS, ge=10, le=MAX_POLL_INTERVAL_SECONDS
    )
    filters: PollFilters = Field(default_factory=PollFilters)
    event: Literal["pr_updated", "pr_merged", "mentions"] = "pr_updated"
    max_fires_per_poll: StrictInt = Field(default=10, ge=1, le=1000)
    backfill: StrictBool = False  # True: the first poll fires for PRs that already exist
    page_limit: StrictInt | None = Field(default=None, ge=5, le=100)
    # A run lost with its engine (engine_lost): fire the event again (at least once,
    # the default) or leave it cancelled. Left out of dumps at the default.
    on_engine_lost: Literal["refire", "drop"] = Field(
        default="refire", exclude_if=lambda value: value == "refire"
    )
    # Required with event "mentions", refused otherwise; left out of dumps when unset.
    mentions: MentionsConfig | None = Field(default=None, exclude_if=lambda value: value is None)

    @field_validator("repo")
    @classmethod
    def _repo_is_owner_slash_name(cls, value: str) -> str:
        problem = repo_problem(value)
        if problem is not None:
            raise PydanticCustomError("invalid_repo", problem)
        return value

    @model_validator(mode="after")
    def _mentions_iff_event(self) -> GithubPollConfig:
        if self.event == "mentions" and self.mentions is None:
            raise PydanticCustomError(
                "mentions_required", 'event "mentions" needs a mentions block (handle, allowlist)'
            )
        if self.event != "mentions" and self.mentions is not None:
            raise PydanticCustomError(
                "mentions_refused",
                f'a mentions block applies to event "mentions", not {self.event}',
            )
        return self


def describe_validation_error(error: ErrorDetails) -> str:
    """One lower-case line for one pydantic error, without its location.

    ``extra_forbidden`` and ``missing`` name the key (the last ``loc`` item); others
    say what was expected and show the offending scalar value.
    """
    key = error["loc"][-1] if error["loc"] else None
    if error["type"] == "extra_forbidden":
        return f"unknown key {key!r}"
    if error["type"] == "missing":
        return f"missing required key {key!r}"
    if error["type"] in ("model_type", "dict_type"):
        text = "input should be a mapping"
    else:
        # Without pydantic's own prefix: a validator's ValueError is the message.
        said = error["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
        text = said[:1].lower() + said[1:] if said[1:2].islower() else said  # keep "API"
    value = error.get("input")
    if isinstance(value, _SCALAR_TYPES):
        # Shown as YAML/JSON spell it, since that is what the user wrote.
        if value is None:
            shown = "null"
        elif isinstance(value, bool):
            shown = "true" if value else "false"
        else:
            shown = repr(value)
        if len(shown) > 60:
            shown = shown[:57] + "..."
        text = f"{text}, got {shown}"
    return text


def dotted(loc: tuple[int | str, ...]) -> str:
    """``("filters", "draft")`` -> ``filters.draft``; indices as ``[0]``."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


# Validation errors that keep their own reason code instead of invalid_trigger_config.
CONFIG_ERROR_REASONS = frozenset({ALLOWLIST_CONFIG_ERROR, "invalid_handle"})


def validate_poll_config(data: Any) -> GithubPollConfig:
    """``data`` as a :class:`GithubPollConfig`; ``invalid_trigger_config`` names the field."""
    try:
        return GithubPollConfig.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = error["loc"]
        if error["type"] in CONFIG_ERROR_REASONS:
            raise InvalidInput(
                f"trigger_config.{dotted(loc)}: {error['msg']}", error["type"]
            ) from None
        if error["type"] in ("extra_forbidden", "missing"):
            loc = loc[:-1]
        where = f"trigger_config.{dotted(loc)}" if loc else "trigger_config"
        raise InvalidInput(
            f"{where}: {describe_validation_error(error)}", "invalid_trigger_config"
        ) from None


def _parse_bool(key: str, value: str) -> bool:
    lowered = value.strip().lower()
    if lowered == "true":
        return True
    if lowered == "false":
        return False
    raise InvalidInput(f"filter {key} takes true or false, got {value!r}", "invalid_filter")


def parse_filter(text: str) -> tuple[str, str | bool]:
    """A CLI ``key=value`` filter as ``(key, typed value)``: ``draft=false`` -> ``False``.

    Keys: ``state`` (only ``open``), ``base`` (a branch name), ``draft`` and
    ``same_repo_only`` (``true``/``false``). Anything else raises ``invalid_filter``.
    """
    key, equals, value = text.partition("=")
    key = key.strip()
    if not equals:
        raise InvalidInput(f"filter {text!r} must be key=value, like base=main", "invalid_filter")
    if key not in FILTER_KEYS:
        raise InvalidInput(
            f"unknown filter {key!r} (known: {', '.join(FILTER_KEYS)})", "invalid_filter"
        )
    if key in ("draft", "same_repo_only"):
        return key, _parse_bool(key, value)
    value = value.strip()
    if key == "state" and value != "open":
        raise InvalidInput(f"filter state only takes open, got {value!r}", "invalid_filter")
    if not value:
        raise InvalidInput(f"filter {key} needs a value", "invalid_filter")
    return key, value
