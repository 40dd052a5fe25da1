"""Poll health: states, causes, their order, the capped-poll counter (docs/decisions.md D7)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.health.assess import (
    Cause,
    Health,
    HealthState,
    PollHealthFacts,
    assess,
    capped_counter_next,
    health_json,
)

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
INTERVAL = 120


def facts(**changes: Any) -> PollHealthFacts:
    """A github_poll schedule that polled healthily a minute ago; ``changes`` break it."""
    base = PollHealthFacts(
        enabled=True,
        trigger_type="github_poll",
        poll_interval_seconds=INTERVAL,
        page_limit=5,
        last_poll_at=NOW - timedelta(seconds=60),
        last_healthy_poll_at=NOW - timedelta(seconds=60),
        last_http_status=200,
        last_error_reason=None,
        rate_limit_reset_at=None,
        consecutive_auth_failures=0,
        consecutive_errors=0,
        consecutive_cap_no_dispatch=0,
        latest_run_status="succeeded",
        latest_run_reason=None,
        counters={"polls": 10, "not_modified": 4, "events_seen": 3, "dispatched": 3},
    )
    return replace(base, **changes)


def failed_poll(reason: str, status: int, **changes: Any) -> PollHealthFacts:
    """The newest poll (10 s ago) failed with ``reason``; the last healthy one was older."""
    failed: dict[str, Any] = {
        "last_poll_at": NOW - timedelta(seconds=10),
        "last_healthy_poll_at": NOW - timedelta(seconds=60),
        "last_http_status": status,
        "last_error_reason": reason,
        "consecutive_errors": 1,
    }
    return facts(**{**failed, **changes})


def codes(health: Health) -> list[str]:
    return [cause.code for cause in health.causes]


def cause(health: Health, code: str) -> Cause:
    (found,) = (c for c in health.causes if c.code == code)
    return found


# --- states ----------------------------------------------------------------------------


def test_a_schedule_with_a_recent_healthy_poll_is_healthy_with_no_causes() -> None:
    assert assess(facts(), NOW) == Health(HealthState.HEALTHY, ())


def test_a_disabled_schedule_is_disabled_with_no_causes_whatever_else_is_wrong() -> None:
    broken = facts(
        enabled=False,
        consecutive_auth_failures=9,
        consecutive_cap_no_dispatch=9,
        latest_run_status="failed",
        last_healthy_poll_at=None,
    )
    assert assess(broken, NOW) == Health(HealthState.DISABLED, ())


def test_a_github_poll_schedule_that_has_never_polled_is_never_polled() -> None:
    health = assess(facts(last_poll_at=None, last_healthy_poll_at=None), NOW)
    assert health.state is HealthState.NEVER_POLLED
    assert codes(health) == ["never_polled"]


def test_a_schedule_that_has_never_polled_is_not_judged_stale() -> None:
    never = facts(last_poll_at=None, last_healthy_poll_at=None, latest_run_status=None)
    assert "stale" not in codes(assess(never, NOW + timedelta(days=30)))


def test_three_auth_failures_in_a_row_make_a_schedule_blind() -> None:
    health = assess(failed_poll("auth_error", 401, consecutive_auth_failures=3), NOW)
    assert health.state is HealthState.BLIND
    blind = cause(health, "blind")
    assert "3 polls" in blind.message
    assert blind.advice is not None and "token" in blind.advice


def test_two_auth_failures_in_a_row_are_not_yet_blind() -> None:
    health = assess(failed_poll("auth_error", 401, consecutive_auth_failures=2), NOW)
    assert health.state is HealthState.HEALTHY
    assert "blind" not in codes(health)


def test_a_rate_limited_poll_with_a_future_reset_is_rate_limited_until_then() -> None:
    reset = NOW + timedelta(minutes=7)
    health = assess(failed_poll("rate_limited", 403, rate_limit_reset_at=reset), NOW)
    assert health.state is HealthState.RATE_LIMITED
    limited = cause(health, "rate_limited")
    assert reset.isoformat() in limited.message
    assert "7m" in limited.message


def test_a_secondary_rate_limit_with_an_unknown_reset_is_rate_limited() -> None:
    health = assess(failed_poll("secondary_rate_limited", 429), NOW)
    assert health.state is HealthState.RATE_LIMITED
    limited = cause(health, "rate_limited")
    assert "secondary" in limited.message
    assert "unknown" in limited.message


def test_a_rate_limit_whose_reset_has_passed_is_no_longer_rate_limited() -> None:
    past = NOW - timedelta(seconds=1)
    health = assess(failed_poll("rate_limited", 403, rate_limit_reset_at=past), NOW)
    assert "rate_limited" not in codes(health)


def test_a_rate_limit_error_from_before_the_newest_healthy_poll_is_history() -> None:
    old = facts(last_error_reason="rate_limited", rate_limit_reset_at=None)
    assert assess(old, NOW).state is HealthState.HEALTHY


def test_no_healthy_poll_for_more_than_three_intervals_is_stale() -> None:
    healthy_at = NOW - timedelta(seconds=3 * INTERVAL + 1)
    health = assess(failed_poll("server_error", 502, last_healthy_poll_at=healthy_at), NOW)
    assert health.state is HealthState.STALE
    stale = cause(health, "stale")
    assert "6m1s" in stale.message
    assert "server_error" in stale.message


def test_no_healthy_poll_for_two_point_nine_intervals_is_not_yet_stale() -> None:
    healthy_at = NOW - timedelta(seconds=2.9 * INTERVAL)
    health = assess(failed_poll("server_error", 502, last_healthy_poll_at=healthy_at), NOW)
    assert health.state is HealthState.HEALTHY


def test_exactly_three_intervals_without_a_healthy_poll_is_not_yet_stale() -> None:
    healthy_at = NOW - timedelta(seconds=3 * INTERVAL)
    health = assess(failed_poll("network_error", 0, last_healthy_poll_at=healthy_at), NOW)
    assert "stale" not in codes(health)


def test_a_schedule_that_polled_but_was_never_healthy_is_stale() -> None:
    health = assess(failed_poll("malformed_payload", 200, last_healthy_poll_at=None), NOW)
    assert health.state is HealthState.STALE
    assert "no healthy poll yet" in cause(health, "stale").message


def test_three_capped_polls_without_a_launch_are_overdue_with_raise_page_limit_advice() -> None:
    health = assess(facts(consecutive_cap_no_dispatch=3, page_limit=5), NOW)
    assert health.state is HealthState.OVERDUE
    capped = cause(health, "capped_scan")
    assert capped.advice is not None and "raise page_limit above 5" in capped.advice


def test_two_capped_polls_are_not_yet_overdue() -> None:
    assert assess(facts(consecutive_cap_no_dispatch=2), NOW).state is HealthState.HEALTHY


def test_at_page_limit_100_a_capped_scan_asks_for_operator_reconciliation() -> None:
    health = assess(facts(consecutive_cap_no_dispatch=3, page_limit=100), NOW)
    assert health.state is HealthState.OVERDUE
    capped = cause(health, "capped_scan")
    assert "bounded recovery is insufficient" in capped.message
    assert capped.advice is not None
    assert "li schedule cursor NAME --set ... --reason ..." in capped.advice
    assert "raise" not in capped.advice.lower()
    assert "raise" not in capped.message.lower()


def test_a_failed_newest_run_makes_a_poll_schedule_failing_with_its_reason() -> None:
    health = assess(facts(latest_run_status="failed", latest_run_reason="nonzero_exit"), NOW)
    assert health.state is HealthState.FAILING
    assert "nonzero_exit" in cause(health, "run_failed").message


def test_a_timed_out_newest_run_makes_a_schedule_failing() -> None:
    timed_out = facts(latest_run_status="timed_out", latest_run_reason="deadline_exceeded")
    health = assess(timed_out, NOW)
    assert health.state is HealthState.FAILING
    assert "deadline_exceeded" in cause(health, "run_timed_out").message


@pytest.mark.parametrize("status", ["succeeded", "refused", "cancelled", "running", None])
def test_a_newest_run_that_did_not_fail_or_time_out_is_not_failing(status: str | None) -> None:
    assert assess(facts(latest_run_status=status), NOW).state is HealthState.HEALTHY


@pytest.mark.parametrize(("trigger", "interval"), [("cron", None), ("interval", 300)])
def test_a_time_schedule_that_has_not_run_yet_is_healthy_not_never_polled(
    trigger: str, interval: int | None
) -> None:
    idle = facts(
        trigger_type=trigger,
        poll_interval_seconds=interval,
        last_poll_at=None,
        last_healthy_poll_at=None,
        latest_run_status=None,
    )
    assert assess(idle, NOW) == Health(HealthState.HEALTHY, ())


@pytest.mark.parametrize("trigger", ["cron", "interval"])
def test_a_time_schedule_is_failing_only_for_a_failed_newest_run(trigger: str) -> None:
    failing = facts(
        trigger_type=trigger,
        latest_run_status="failed",
        latest_run_reason="killed_by_signal",
        consecutive_auth_failures=5,
        consecutive_cap_no_dispatch=5,
    )
    health = assess(failing, NOW)
    assert health.state is HealthState.FAILING
    assert codes(health) == ["run_failed"]


def test_a_disabled_time_schedule_is_disabled() -> None:
    paused = facts(trigger_type="cron", poll_interval_seconds=None, enabled=False)
    assert assess(paused, NOW).state is HealthState.DISABLED


def test_when_every_cause_applies_all_are_listed_most_severe_first() -> None:
    everything = failed_poll(
        "rate_limited",
        403,
        rate_limit_reset_at=NOW + timedelta(minutes=1),
        last_healthy_poll_at=NOW - timedelta(hours=1),
        consecutive_auth_failures=3,
        consecutive_cap_no_dispatch=4,
        latest_run_status="failed",
        latest_run_reason="nonzero_exit",
    )
    health = assess(everything, NOW)
    assert health.state is HealthState.BLIND
    assert codes(health) == ["blind", "rate_limited", "stale", "capped_scan", "run_failed"]


def test_stale_outranks_overdue_and_overdue_outranks_failing() -> None:
    overdue_and_failing = facts(consecutive_cap_no_dispatch=3, latest_run_status="timed_out")
    assert assess(overdue_and_failing, NOW).state is HealthState.OVERDUE
    stale_too = replace(overdue_and_failing, last_healthy_poll_at=NOW - timedelta(hours=1))
    health = assess(stale_too, NOW)
    assert health.state is HealthState.STALE
    assert codes(health) == ["stale", "capped_scan", "run_timed_out"]


def test_a_failed_run_outranks_never_polled() -> None:
    health = assess(facts(last_poll_at=None, latest_run_status="failed"), NOW)
    assert health.state is HealthState.FAILING
    assert codes(health) == ["run_failed", "never_polled"]


def test_assess_refuses_a_naive_now_and_an_unknown_trigger_type() -> None:
    with pytest.raises(ValueError):
        assess(facts(), NOW.replace(tzinfo=None))
    with pytest.raises(ValueError):
        assess(facts(trigger_type="webhook"), NOW)


def test_health_json_lists_state_and_every_cause_with_code_message_and_advice() -> None:
    health = assess(facts(consecutive_cap_no_dispatch=3, latest_run_status="failed"), NOW)
    payload = health_json(health)
    assert payload["state"] == "overdue"
    assert [c["code"] for c in payload["causes"]] == ["capped_scan", "run_failed"]
    assert all(set(c) == {"code", "message", "advice"} for c in payload["causes"])
    assert health_json(Health(HealthState.HEALTHY)) == {"state": "healthy", "causes": []}


optional_time = st.one_of(
    st.none(),
    st.integers(min_value=-86_400, max_value=86_400).map(lambda s: NOW + timedelta(seconds=s)),
)
any_facts = st.builds(
    PollHealthFacts,
    enabled=st.booleans(),
    trigger_type=st.sampled_from(["cron", "interval", "github_poll"]),
    poll_interval_seconds=st.one_of(st.none(), st.integers(min_value=10, max_value=3600)),
    page_limit=st.sampled_from([3, 5, 50, 99, 100]),
    last_poll_at=optional_time,
    last_healthy_poll_at=optional_time,
    last_http_status=st.sampled_from([None, 0, 200, 304, 401, 403, 429, 502]),
    last_error_reason=st.sampled_from(
        [
            None,
            "auth_error",
            "rate_limited",
            "secondary_rate_limited",
            "server_error",
            "network_error",
            "malformed_payload",
        ]
    ),
    rate_limit_reset_at=optional_time,
    consecutive_auth_failures=st.integers(min_value=0, max_value=6),
    consecutive_errors=st.integers(min_value=0, max_value=6),
    consecutive_cap_no_dispatch=st.integers(min_value=0, max_value=6),
    latest_run_status=st.sampled_from(
        [None, "succeeded", "failed", "timed_out", "refused", "cancelled", "running"]
    ),
    latest_run_reason=st.sampled_from([None, "nonzero_exit", "deadline_exceeded"]),
    counters=st.just({}),
)


@given(any_facts)
def test_no_message_or_advice_ever_recommends_skipping_or_claims_success(
    given_facts: PollHealthFacts,
) -> None:
    health = assess(given_facts, NOW)
    for found in health.causes:
        text = f"{found.message} {found.advice or ''}".lower()
        assert "skip" not in text
        assert "success" not in text
        assert "review" not in text


@given(any_facts)
def test_the_state_is_the_most_severe_cause_and_problems_are_never_healthy(
    given_facts: PollHealthFacts,
) -> None:
    health = assess(given_facts, NOW)
    if health.state in (HealthState.HEALTHY, HealthState.DISABLED):
        assert health.causes == ()
    else:
        assert health.causes
    assert len(set(codes(health))) == len(health.causes)


# --- the capped-poll counter (docs/decisions.md D7) ----------------------------------------

QUIET: dict[str, bool] = {
    "fresh_ok_poll": False,
    "scan_complete": False,
    "confirmed_launch": False,
    "held_batch": False,
    "held_batch_matching_launch": False,
    "error": False,
    "polled": False,
    "interrupted": False,
}
FRESH_OK = {"polled": True, "fresh_ok_poll": True}


def counter_after(current: int, **flags: bool) -> int:
    return capped_counter_next(current, **{**QUIET, **flags})


def test_a_fresh_ok_poll_with_an_incomplete_scan_and_no_launch_increments() -> None:
    assert counter_after(2, **FRESH_OK) == 3


def test_a_complete_ok_poll_without_a_held_batch_resets() -> None:
    assert counter_after(2, **FRESH_OK, scan_complete=True) == 0


def test_a_confirmed_launch_from_a_fresh_ok_poll_resets_even_with_an_incomplete_scan() -> None:
    assert counter_after(2, **FRESH_OK, confirmed_launch=True) == 0


def test_a_confirmed_launch_from_a_still_matching_held_batch_resets() -> None:
    flags = {"held_batch": True, "held_batch_matching_launch": True, "confirmed_launch": True}
    assert counter_after(2, **flags) == 0


def test_a_held_batch_without_a_launch_leaves_the_counter_unchanged() -> None:
    assert counter_after(2, **FRESH_OK, held_batch=True) == 2
    assert counter_after(2, **FRESH_OK, held_batch=True, scan_complete=True) == 2


def test_a_launch_from_a_held_batch_that_no_longer_matches_leaves_it_unchanged() -> None:
    assert counter_after(2, held_batch=True, confirmed_launch=True) == 2


def test_an_error_or_auth_error_leaves_the_counter_unchanged() -> None:
    assert counter_after(2, polled=True, error=True) == 2
    assert counter_after(2, **FRESH_OK, error=True, confirmed_launch=True) == 2


def test_a_pass_that_neither_polls_nor_launches_leaves_the_counter_unchanged() -> None:
    assert counter_after(2) == 2
    assert counter_after(2, fresh_ok_poll=True) == 2


def test_an_interrupted_pass_without_a_confirmed_launch_leaves_the_counter_unchanged() -> None:
    assert counter_after(2, **FRESH_OK, interrupted=True) == 2
    assert counter_after(2, **FRESH_OK, interrupted=True, scan_complete=True) == 2


def test_an_interrupted_pass_with_a_confirmed_launch_from_a_fresh_poll_resets() -> None:
    assert counter_after(2, **FRESH_OK, interrupted=True, confirmed_launch=True) == 0


def test_a_negative_counter_is_refused() -> None:
    with pytest.raises(ValueError):
        counter_after(-1, **FRESH_OK)


def test_three_capped_polls_in_a_row_drive_the_schedule_overdue() -> None:
    counter = 0
    for _ in range(3):
        counter = counter_after(counter, **FRESH_OK)
    assert counter == 3
    health = assess(facts(consecutive_cap_no_dispatch=counter, page_limit=5), NOW)
    assert health.state is HealthState.OVERDUE
    assert cause(health, "capped_scan").advice == "raise page_limit above 5 (at most 100)"


pass_flags = st.fixed_dictionaries({name: st.booleans() for name in QUIET})


@given(start=st.integers(min_value=0, max_value=10), passes=st.lists(pass_flags, max_size=30))
def test_the_counter_never_goes_negative_and_only_changes_per_the_rules(
    start: int, passes: list[dict[str, bool]]
) -> None:
    counter = start
    for flags in passes:
        fresh = flags["polled"] and flags["fresh_ok_poll"]
        launched = flags["confirmed_launch"]
        held = flags["held_batch"]
        may_increment = (
            fresh
            and not flags["scan_complete"]
            and not launched
            and not held
            and not flags["error"]
            and not flags["interrupted"]
        )
        may_reset = not flags["error"] and (
            (fresh and flags["scan_complete"] and not held and not flags["interrupted"])
            or (launched and (fresh or (held and flags["held_batch_matching_launch"])))
        )
        must_hold = (
            flags["error"]
            or (flags["interrupted"] and not launched)
            or (held and not launched)
            or (not flags["polled"] and not launched)
        )

        after = capped_counter_next(counter, **flags)

        assert after >= 0
        assert after in (counter, counter + 1, 0)
        assert (after == counter + 1) == may_increment
        if after == 0 and counter > 0:
            assert may_reset
        if may_reset:
            assert after == 0
        if must_hold:
            assert after == counter
        counter = after
