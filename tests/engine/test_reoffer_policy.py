"""Which cancelled runs are offered again (engine.store.attempts): never-launched attempts
always, attempts lost with their engine up to a cap, cron and interval never."""

from __future__ import annotations

import pytest

from engine.store.attempts import MAX_LOST_ATTEMPTS, reoffer_wanted
from engine.store.models import RunStatus, Schedule, ScheduleRun, TriggerType


def schedule(kind: TriggerType = TriggerType.GITHUB_POLL, **config: str) -> Schedule:
    return Schedule(name="watch", trigger_type=kind.value, trigger_config=config)


def cancelled(reason: str, attempt: int) -> ScheduleRun:
    return ScheduleRun(status=RunStatus.CANCELLED.value, reason=reason, attempt=attempt)


@pytest.mark.parametrize("reason", ["abandoned_before_launch", "engine_shutdown"])
def test_an_attempt_that_never_launched_is_always_offered_again(reason: str) -> None:
    # The cap once counted these too: restarts that kept handing back one event before it
    # launched gave it up after five of them, with nothing ever run (a lost event).
    for attempt in (1, MAX_LOST_ATTEMPTS, 3 * MAX_LOST_ATTEMPTS):
        assert reoffer_wanted(cancelled(reason, attempt), schedule(), lost_attempts=0)


def test_attempts_lost_with_their_engine_are_capped() -> None:
    lost = cancelled("engine_lost", attempt=9)  # four never-launched attempts before
    assert reoffer_wanted(lost, schedule(), lost_attempts=MAX_LOST_ATTEMPTS - 1)
    assert not reoffer_wanted(lost, schedule(), lost_attempts=MAX_LOST_ATTEMPTS)
    assert not reoffer_wanted(lost, schedule(on_engine_lost="drop"), lost_attempts=1)


def test_cron_interval_and_other_endings_are_not_offered_again() -> None:
    run = cancelled("abandoned_before_launch", attempt=1)
    assert not reoffer_wanted(run, schedule(TriggerType.INTERVAL), lost_attempts=0)
    assert not reoffer_wanted(run, schedule(TriggerType.CRON), lost_attempts=0)
    failed = ScheduleRun(status=RunStatus.FAILED.value, reason="nonzero_exit", attempt=1)
    assert not reoffer_wanted(failed, schedule(), lost_attempts=0)
