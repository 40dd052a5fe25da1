"""``li schedule add``: one schedule from command-line options."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from engine.cli.common import (
    emit_json,
    guarded,
    iso,
    open_store,
    schedule_dict,
    settings,
    trigger_text,
)
from engine.durations import parse_duration
from engine.errors import InvalidInput
from engine.poll.config import parse_filter, parse_repo, validate_poll_config
from engine.schedules.argv import check_templates
from engine.schedules.spec import (
    DEFAULT_TIMEOUT_SECONDS,
    ScheduleSpec,
    check_retry_attempts,
    check_spec,
)
from engine.store.models import OverlapPolicy, TriggerType
from engine.termsafe import echo


def github_trigger_config(
    repo: str,
    poll_interval: str,
    filters: list[str],
    event: str,
    max_fires_per_poll: int,
    page_limit: int | None,
    backfill: bool,
    mentions: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The validated trigger_config of ``li schedule add --github``."""
    parsed: dict[str, Any] = {}
    for text in filters:
        key, value = parse_filter(text)
        if key in parsed:
            raise InvalidInput(f"--filter {key} given twice", "invalid_filter")
        parsed[key] = value
    data: dict[str, Any] = {
        "repo": parse_repo(repo),
        "poll_interval_seconds": parse_duration(poll_interval, what="--poll-interval"),
        "filters": parsed,
        "event": event,
        "max_fires_per_poll": max_fires_per_poll,
        "backfill": backfill,
        "page_limit": page_limit,
    }
    if mentions is not None:
        data["mentions"] = mentions
    return validate_poll_config(data).model_dump(mode="json")


def mentions_options(
    event: str, handle: str | None, allow_users: list[str], self_user_id: int | None
) -> dict[str, Any] | None:
    """The ``mentions`` block from ``--handle``/``--allow-user``/``--self-user-id`` (None
    when none is given; validated with the rest of the trigger config)."""
    if handle is None and not allow_users and self_user_id is None:
        if event == "mentions":
            raise InvalidInput(
                "--event mentions needs --handle and --allow-user", "invalid_trigger"
            )
        return None
    if event != "mentions":
        raise InvalidInput(
            "--handle, --allow-user and --self-user-id apply to --event mentions only",
            "invalid_trigger",
        )
    if handle is None:
        raise InvalidInput("--event mentions needs --handle", "invalid_trigger")
    ids: list[object] = []
    for text in allow_users:
        # Only a plain decimal number can be an id; anything else is passed on as the
        # string it is, which parse_allowlist refuses (allowlist_config_error).
        ids.append(int(text) if re.fullmatch(r"-?[0-9]+", text.strip()) else text)
    mentions: dict[str, Any] = {"handle": handle, "allowlist": ids}
    if self_user_id is not None:
        # Kept so that existing scripts and schedule files still load; it filters nothing
        # (docs/decisions.md, "The engine no longer rejects the agent's own account").
        echo(
            "li: warning: --self-user-id is deprecated and ignored: the agent's own account"
            " can summon the fired command, which must skip the comments it posted itself"
            " (self_user_id_ignored)",
            err=True,
        )
        mentions["self_user_id"] = self_user_id
    return mentions


def schedule_add(
    name: str = typer.Argument(..., help="Unique schedule name."),
    args: list[str] = typer.Argument(None, help="Arguments after `--` (Jinja2 templates)."),
    cron: str | None = typer.Option(None, "--cron", help="Five-field cron expression."),
    timezone: str | None = typer.Option(None, "--timezone", help="IANA zone for --cron."),
    every: str | None = typer.Option(None, "--every", help="Interval such as 5m or 1h30m."),
    command: str = typer.Option(..., "--command", help="Allow-listed executable name."),
    cwd: Path | None = typer.Option(None, "--cwd", help="Working directory (must exist)."),
    timeout: str | None = typer.Option(None, "--timeout", help="Deadline, default 1h."),
    max_runs: int | None = typer.Option(None, "--max-runs", help="Stop after N runs."),
    env_passthrough: list[str] = typer.Option(
        [], "--env-passthrough", help="Variable passed to the command."
    ),
    overlap: OverlapPolicy = typer.Option(
        OverlapPolicy.SKIP, "--overlap", help="skip or allow a fire while one runs."
    ),
    github: str | None = typer.Option(
        None, "--github", help="OWNER/REPO: poll its pull requests, fire per event."
    ),
    poll_interval: str = typer.Option("2m", "--poll-interval", help="github: poll period."),
    filters: list[str] = typer.Option(
        [], "--filter", help="github: state=open, base=BRANCH, draft=BOOL, same_repo_only=BOOL."
    ),
    event: str = typer.Option(
        "pr_updated", "--event", help="github: pr_updated|pr_merged|mentions."
    ),
    handle: str | None = typer.Option(
        None, "--handle", help="github mentions: the handle to listen for (no @)."
    ),
    allow_users: list[str] = typer.Option(
        [], "--allow-user", help="github mentions: a numeric user id allowed to mention."
    ),
    self_user_id: int | None = typer.Option(
        None,
        "--self-user-id",
        help="Deprecated, ignored: the engine no longer filters by account.",
    ),
    max_fires_per_poll: int = typer.Option(10, "--max-fires-per-poll", help="github: cap."),
    page_limit: int | None = typer.Option(
        None, "--page-limit", help="github: pages a scan may read (5..100)."
    ),
    backfill: bool = typer.Option(
        False, "--backfill", help="github: fire the open backlog too (cursor unset)."
    ),
    retry_max_attempts: int = typer.Option(
        1, "--retry-max-attempts", help="Try a failed run again: N attempts in all (1..10)."
    ),
    retry_backoff: str = typer.Option(
        "30s", "--retry-backoff", help="Wait before the 2nd attempt, doubling after."
    ),
    disabled: bool = typer.Option(False, "--disabled", help="Add it paused."),
    as_json: bool = typer.Option(False, "--json", help="Print the schedule as JSON."),
) -> None:
    """Add a cron or interval schedule firing COMMAND with ARG... ."""
    options = AddOptions(**locals())  # every parameter above, by the same name
    guarded(lambda: _add(options))


@dataclass(frozen=True)
class AddOptions:
    """The parameters of ``li schedule add`` as typer parsed them."""

    name: str
    args: list[str] | None
    cron: str | None
    timezone: str | None
    every: str | None
    command: str
    cwd: Path | None
    timeout: str | None
    max_runs: int | None
    env_passthrough: list[str]
    overlap: OverlapPolicy
    github: str | None
    poll_interval: str
    filters: list[str]
    event: str
    handle: str | None
    allow_users: list[str]
    self_user_id: int | None
    max_fires_per_poll: int
    page_limit: int | None
    backfill: bool
    retry_max_attempts: int
    retry_backoff: str
    disabled: bool
    as_json: bool


def _trigger(o: AddOptions) -> tuple[TriggerType, dict[str, Any]]:
    """The trigger type and validated trigger_config the options ask for."""
    if sum(x is not None for x in (o.cron, o.every, o.github)) != 1:
        raise InvalidInput("give exactly one of --cron, --every or --github", "invalid_trigger")
    if o.timezone is not None and o.cron is None:
        raise InvalidInput("--timezone applies to --cron only", "invalid_trigger")
    if o.github is None:
        return (TriggerType.CRON if o.cron is not None else TriggerType.INTERVAL), {}
    trigger_config = github_trigger_config(
        o.github,
        o.poll_interval,
        o.filters,
        o.event,
        o.max_fires_per_poll,
        o.page_limit,
        o.backfill,
        mentions_options(o.event, o.handle, o.allow_users, o.self_user_id),
    )
    return TriggerType.GITHUB_POLL, trigger_config


def _spec(o: AddOptions, trigger_type: TriggerType, trigger_config: dict[str, Any]) -> ScheduleSpec:
    return ScheduleSpec(
        name=o.name,
        enabled=not o.disabled,
        trigger_type=trigger_type,
        trigger_config=trigger_config,
        cron=o.cron,
        timezone=(o.timezone or "UTC") if o.cron is not None else None,
        interval_seconds=parse_duration(o.every, what="--every") if o.every else None,
        command=o.command,
        args=list(o.args or []),
        cwd=str(o.cwd.resolve()) if o.cwd is not None else None,
        timeout_seconds=(
            parse_duration(o.timeout, what="--timeout") if o.timeout else DEFAULT_TIMEOUT_SECONDS
        ),
        max_runs=o.max_runs,
        env_passthrough=list(o.env_passthrough),
        overlap=o.overlap,
        retry_max_attempts=check_retry_attempts(o.retry_max_attempts),
        retry_backoff_seconds=parse_duration(o.retry_backoff, what="--retry-backoff"),
    )


def _add(o: AddOptions) -> None:
    config = settings()
    spec = _spec(o, *_trigger(o))
    check_spec(spec, config.command_allowlist)
    check_templates(spec.args)
    row = open_store(config).add_schedule(spec)
    if o.as_json:
        emit_json(schedule_dict(row))
    else:
        echo(f"added {row.name}: {trigger_text(row)}, next fire {iso(row.next_fire_at) or 'never'}")
