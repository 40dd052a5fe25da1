"""One fire of a ``command`` action: claim -> render argv -> spawn -> record.

This is the only path from a due schedule to a process, used by the daemon, by
``li engine run --once`` and by ``li schedule trigger --wait``. Every claimed fire
ends in a terminal run row, whatever goes wrong in between.
"""

from __future__ import annotations

import logging
import os
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from engine.config import Settings
from engine.errors import LiError
from engine.fields import same_fields
from engine.poll.handover import github_environment
from engine.run.metrics import record_run
from engine.run.runner import RunOutcome, RunRequest, build_environment, run_action
from engine.schedules.argv import render_argv
from engine.schedules.spec import MAX_RETRY_BACKOFF
from engine.store.enums import TriggerType
from engine.store.models import RunStatus, ScheduleRun
from engine.store.store import Claim, FinishedRun, Store

log = logging.getLogger(__name__)

# Records a run's outcome: ``finish(run_id, result)``.
Finisher = Callable[[int, FinishedRun], None]


def finished_from_outcome(outcome: RunOutcome) -> FinishedRun:
    """The store's view of a runner outcome."""
    return same_fields(FinishedRun, outcome)


def retry_delay(claim: Claim, failed_attempts: int, rng: random.Random) -> float:
    """The wait before the next attempt: the schedule's backoff, doubled after each
    failed attempt (capped at MAX_RETRY_BACKOFF), plus up to 10% jitter."""
    base = min(float(MAX_RETRY_BACKOFF), claim.retry_backoff_seconds * 2.0 ** (failed_attempts - 1))
    return base + rng.uniform(0, base / 10)


def execute_claim(
    store: Store,
    settings: Settings,
    claim: Claim,
    owner: str,
    *,
    environ: Mapping[str, str] | None = None,
    cancel: threading.Event | None = None,
    finish: Finisher | None = None,
    on_attempt: Callable[[int], None] | None = None,
) -> FinishedRun:
    """Run a claimed fire to its end, retrying a failed run as new attempts of the same
    fire while the schedule's retry policy allows (``retry_max_attempts``). The wait
    between attempts ends early on ``cancel`` (a stop): the fire then stays failed.
    ``on_attempt(run_id)`` is told each new attempt's run id.
    """
    if finish is None:

        def finish(run_id: int, result: FinishedRun) -> None:
            store.finish_run(run_id, result, owner=owner)

    attempts = _Attempts(store, settings, owner, environ, cancel, finish)
    rng = random.Random()
    result = _execute_attempt(attempts, claim)
    tries = 1
    while result.status is RunStatus.FAILED and tries < claim.retry_max_attempts:
        delay = retry_delay(claim, tries, rng)
        log.info(
            "run %s of %s failed (%s); attempt %d of %d in %.0f s",
            claim.run_id,
            claim.schedule_name,
            result.reason,
            tries + 1,
            claim.retry_max_attempts,
            delay,
        )
        if (cancel or threading.Event()).wait(delay):
            break  # stopping: the fire stays failed
        run_id = store.start_attempt(claim.run_id, owner)
        if run_id is None:
            break  # fenced: another engine settled it
        claim = replace(claim, run_id=run_id)
        if on_attempt is not None:
            on_attempt(run_id)
        tries += 1
        result = _execute_attempt(attempts, claim)
    return result


def _run_fields(claim: Claim) -> dict[str, Any]:
    """The ``extra`` fields every run line carries (``pr`` only for an event's run)."""
    fields: dict[str, Any] = {"schedule": claim.schedule_name, "run_id": claim.run_id}
    pr = claim.context.get("pr_number")
    if pr is not None:
        fields["repo"] = claim.context.get("repo")
        fields["pr"] = pr
    return fields


def _run_label(claim: Claim) -> str:
    pr = claim.context.get("pr_number")
    where = f" ({claim.context.get('repo')}#{pr})" if pr is not None else ""
    return f"run {claim.run_id} of {claim.schedule_name}{where}"


def end_level(result: FinishedRun) -> int:
    """INFO for a run that succeeded or was cut short by a requested stop, WARNING for
    every other ending (failed, timed out, refused, cancelled by a loss or a fence)."""
    if result.status is RunStatus.SUCCEEDED:
        return logging.INFO
    if result.status is RunStatus.CANCELLED and result.reason == "engine_shutdown":
        return logging.INFO
    return logging.WARNING


def _log_end(claim: Claim, result: FinishedRun, began: float) -> None:
    seconds = round(time.monotonic() - began, 3)
    said = [result.reason or ""] + (
        [f"exit {result.exit_code}"] if result.exit_code is not None else []
    )
    detail = ", ".join(part for part in said if part)
    log.log(
        end_level(result),
        "%s ended: %s%s after %.1f s",
        _run_label(claim),
        result.status.value,
        f" ({detail})" if detail else "",
        seconds,
        extra={
            **_run_fields(claim),
            "phase": "end",
            "status": result.status.value,
            "reason": result.reason,
            "exit_code": result.exit_code,
            "duration_seconds": seconds,
        },
    )


@dataclass(frozen=True)
class _Attempts:
    """What every attempt of one fire runs with: the store, the settings, the engine that
    owns the fire, the environment it reads, the stop event and the outcome's recorder."""

    store: Store
    settings: Settings
    owner: str
    environ: Mapping[str, str] | None
    cancel: threading.Event | None
    finish: Finisher


def _execute_attempt(ctx: _Attempts, claim: Claim) -> FinishedRun:
    """One attempt, logged once as it starts and once as it ends (docs/engine.md, "Log
    lines"): the end line carries the status, the reason code and the exit code."""
    log.info("%s started", _run_label(claim), extra={**_run_fields(claim), "phase": "start"})
    began = time.monotonic()
    try:
        result = _attempt(ctx, claim)
    except Exception as exc:
        reason = exc.reason if isinstance(exc, LiError) else "engine_error"
        _log_end(claim, FinishedRun(status=RunStatus.FAILED, reason=reason), began)
        raise
    _log_end(claim, result, began)
    return result


def _attempt(ctx: _Attempts, claim: Claim) -> FinishedRun:
    """Run one attempt of a claimed fire to its end and record its outcome.

    The allow-list is checked again while building argv and once more by the runner
    right before spawn; a refusal there is recorded as ``refused`` with its reason.
    ``ctx.finish`` records the outcome.
    """
    store, settings, environ = ctx.store, ctx.settings, ctx.environ
    try:
        argv = render_argv(claim.command, claim.args, claim.context, settings.command_allowlist)
    except LiError as exc:
        result = FinishedRun(status=RunStatus.REFUSED, reason=exc.reason, stderr_tail=exc.message)
        ctx.finish(claim.run_id, result)
        record_run(claim.schedule_name, result.status.value, None, None)
        return result
    if not store.set_run_argv(claim.run_id, argv, owner=ctx.owner):
        # Fenced: another engine recovered this run meanwhile; it is not ours to launch
        # (the end line says so: cancelled, reason fenced).
        return FinishedRun(status=RunStatus.CANCELLED, reason="fenced")
    passthrough = [*settings.env_passthrough, *claim.env_passthrough]
    env = build_environment(
        settings.base_environment(environ),
        passthrough,
        settings.read_environment(passthrough, environ),
    )
    if claim.trigger_type == TriggerType.GITHUB_POLL:  # the endpoint it polled with (D74)
        given = os.environ if environ is None else environ
        env.update(github_environment(settings, given, str(claim.context.get("repo") or "")))
    request = RunRequest(
        argv=argv,
        cwd=claim.cwd,
        env=env,
        timeout_seconds=float(claim.timeout_seconds),
        allowlist=settings.command_allowlist,
        kill_grace_seconds=settings.kill_grace_seconds,
    )
    outcome = run_action(
        request, on_spawn=lambda pid: store.mark_started(claim.run_id, pid), cancel=ctx.cancel
    )
    result = finished_from_outcome(outcome)
    ctx.finish(claim.run_id, result)
    launched = outcome.pid is not None
    record_run(
        claim.schedule_name,
        result.status.value,
        outcome.started_at if launched else None,
        outcome.finished_at if launched else None,
    )
    return result


def fire_schedule(
    store: Store,
    settings: Settings,
    schedule_id: int,
    owner: str,
    *,
    manual: bool = False,
    cancel: threading.Event | None = None,
    on_claimed: Callable[[Claim], None] | None = None,
    environ: Mapping[str, str] | None = None,
    finish: Finisher | None = None,
) -> ScheduleRun | None:
    """Claim and run one occurrence; returns the final run row, or None if not claimed.

    ``on_claimed`` runs right after the claim commits (the daemon reschedules its timer
    there, so the next occurrence is timed while this one still runs).
    """
    claim = store.claim_fire(
        schedule_id, owner, manual=manual, kill_grace_seconds=settings.kill_grace_seconds
    )
    if claim is None:
        return None
    if isinstance(claim, ScheduleRun):
        return claim
    if on_claimed is not None:
        try:
            on_claimed(claim)
        except Exception:  # the timer is best effort; the run must still happen
            log.exception("on_claimed hook failed for %s", claim.schedule_name)
    attempts = [claim.run_id]
    try:
        execute_claim(
            store,
            settings,
            claim,
            owner,
            environ=environ,
            cancel=cancel,
            finish=finish,
            on_attempt=attempts.append,
        )
    except Exception as exc:
        # Never leave a claimed run as `running`: record what broke, then re-raise so
        # the caller's loop records the iteration error too.
        reason = exc.reason if isinstance(exc, LiError) else "engine_error"
        message: Any = exc.message if isinstance(exc, LiError) else repr(exc)
        try:
            store.finish_run(
                attempts[-1],
                FinishedRun(status=RunStatus.FAILED, reason=reason, stderr_tail=str(message)),
                owner=owner,
            )
        except LiError:
            log.exception("could not record the failure of run %s", attempts[-1])
        raise
    return store.get_run(attempts[-1])
