"""Poll health: what a schedule's recorded facts say about whether it is working.

Everything here is pure: the caller reads the schedule row and its newest run (store.py),
builds :class:`PollHealthFacts`, and passes the current time. No I/O, no SQL, no clock.

:func:`assess` turns the facts into a :class:`Health`: one :class:`HealthState` plus every
:class:`Cause` found, most severe first. Each cause's ``code`` is a stable reason code,
the same string in ``li`` output, ``--json`` and docs/health.md.

:func:`capped_counter_next` is the capped-poll counter (``consecutive_cap_no_dispatch``)
that the poller stores after each pass; three in a row make a schedule ``overdue``.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

# One problem found is the public engine.api.HealthCause (one type, not two).
from engine.apitypes import HealthCause as Cause
from engine.durations import format_duration
from engine.store.enums import RunStatus, TriggerType

HEALTH_WINDOW = timedelta(hours=24)


@dataclass(frozen=True)
class LossCounts:
    """Runs in the window by outcome, plus coalesced slots."""

    failed: int = 0  # failed or timed_out
    cancelled: int = 0
    refused: int = 0
    coalesced: int = 0
    total: int = 0  # every run in the window
    drained: int = 0  # cancelled by a clean stop of their engine: not a loss (D71)


# Three in a row: one bad poll is noise, three is a pattern an operator should see.
AUTH_FAILURES_BLIND = 3
STALE_INTERVALS = 3
CAPPED_POLLS_OVERDUE = 3
# The highest page_limit a schedule may set (see GithubPollConfig.page_limit).
MAX_PAGE_LIMIT = 100

RATE_LIMIT_REASONS = frozenset({"rate_limited", "secondary_rate_limited"})
FAILED_RUN_STATUSES = frozenset({RunStatus.FAILED.value, RunStatus.TIMED_OUT.value})

# A GitHub App's refusals (engine.github.appauth, issue 30) and what to do about each: they
# page at once (state blind), since none goes away by itself.
APP_AUTH_ADVICE = {
    "app_key_rejected": "GitHub refused the App's JWT: check GITHUB_APP_ID and that "
    "GITHUB_APP_PRIVATE_KEY_FILE holds a key the App still has (a deleted key is revoked)",
    "app_clock_skew": "GitHub refused the JWT's times: this host's clock is off; sync it "
    "with NTP (timedatectl set-ntp true)",
    "app_installation_suspended": "the App's installation is suspended: an owner of the "
    "account unsuspends it in the account's settings (Applications)",
    "app_not_installed": "the App is not installed on this repository or the installation "
    "is gone: install it there, or correct GITHUB_APP_INSTALLATION_ID",
    "app_key_unreadable": "the App's private key file cannot be read: check "
    "GITHUB_APP_PRIVATE_KEY_FILE and its permissions",
}

RECONCILE_COMMAND = "li schedule cursor NAME --set ... --reason ..."


class HealthState(enum.StrEnum):
    """The one-word answer to "is this schedule working?"; most severe problems first."""

    DISABLED = "disabled"  # paused by an operator; nothing is checked
    NEVER_POLLED = "never_polled"  # a github_poll schedule that has not polled yet
    HEALTHY = "healthy"  # no problem found
    STALE = "stale"  # no healthy poll for more than 3 poll intervals
    BLIND = "blind"  # 3+ polls in a row failed authentication: GitHub is not being read
    RATE_LIMITED = "rate_limited"  # GitHub refused polls for quota; they resume after reset
    OVERDUE = "overdue"  # 3+ polls in a row hit page_limit before the cursor, launched nothing
    FAILING = "failing"  # the newest run failed or timed out
    DEGRADED = "degraded"  # runs failed, were cancelled or refused, or slots coalesced lately


# Most severe first. A state is the most severe of its causes' states.
SEVERITY: tuple[HealthState, ...] = (
    HealthState.BLIND,
    HealthState.RATE_LIMITED,
    HealthState.STALE,
    HealthState.OVERDUE,
    HealthState.FAILING,
    HealthState.DEGRADED,
    HealthState.NEVER_POLLED,
)


@dataclass(frozen=True)
class Health:
    """The assessment of one schedule; ``causes`` lists every problem, most severe first."""

    state: HealthState
    causes: tuple[Cause, ...] = ()


@dataclass(frozen=True)
class PollHealthFacts:
    """What the store knows about one schedule, flattened for :func:`assess`.

    ``poll_interval_seconds`` is the poll interval of a github_poll schedule, the
    interval of an interval schedule and None for cron. Timestamps are aware UTC.
    ``counters`` (polls, not_modified, events_seen, dispatched, excluded, held) are
    carried for display; no rule reads them.
    """

    enabled: bool
    trigger_type: str
    poll_interval_seconds: int | None
    page_limit: int
    last_poll_at: datetime | None
    last_healthy_poll_at: datetime | None
    last_http_status: int | None
    last_error_reason: str | None
    rate_limit_reset_at: datetime | None
    consecutive_auth_failures: int
    consecutive_errors: int
    consecutive_cap_no_dispatch: int
    latest_run_status: str | None
    latest_run_reason: str | None
    counters: Mapping[str, int]
    # Runs in the health window by outcome (engine.health.losses); None: not counted.
    losses: LossCounts | None = None


def assess(facts: PollHealthFacts, now: datetime) -> Health:
    """The health of one schedule at ``now`` (aware), with every cause found.

    Rules, checked in this order:

    - ``enabled`` is false: ``disabled``, with no causes.
    - cron and interval schedules: ``failing`` when the newest run ``failed`` or
      ``timed_out`` (cause ``run_failed`` / ``run_timed_out``), else ``healthy``. A
      schedule that has not run yet is ``healthy`` with no causes.
    - github_poll schedules collect every cause that applies:

      - ``blind``: ``consecutive_auth_failures`` >= 3.
      - a GitHub App's refusal (state ``blind``, the cause named by its reason code,
        :data:`APP_AUTH_ADVICE`): the newest poll failed with it. One is enough.
      - ``rate_limited``: the newest poll was not healthy, its error was
        ``rate_limited`` or ``secondary_rate_limited``, and the reset is after ``now``
        or unknown. A reset already past is no longer a rate limit.
      - ``stale``: the schedule has polled, and ``now - last_healthy_poll_at`` is more
        than 3 poll intervals (exactly 3 is not yet stale). A schedule that has polled
        but never healthily is stale. A schedule that has never polled is not judged
        stale: there is no start to measure from.
      - ``capped_scan`` (state ``overdue``): ``consecutive_cap_no_dispatch`` >= 3. The
        advice is to raise page_limit above its value; at page_limit 100 no higher
        limit exists, so it asks for operator reconciliation of the cursor instead.
      - ``run_failed`` / ``run_timed_out`` (state ``failing``): the newest run.
      - ``never_polled``: ``last_poll_at`` is None.

      The state is the most severe cause's: blind > rate_limited > stale > overdue >
      failing > never_polled; ``healthy`` when no cause applies.

    Raises ValueError for a naive ``now`` or an unknown ``trigger_type``.
    """
    if now.tzinfo is None:
        raise ValueError("assess() needs an aware datetime for now")
    trigger = TriggerType(facts.trigger_type)
    if not facts.enabled:
        return Health(HealthState.DISABLED)
    losses = [(HealthState.DEGRADED, cause) for cause in _loss_causes(facts)]
    if trigger is not TriggerType.GITHUB_POLL:
        failed = _failed_run_cause(facts)
        if failed is not None:
            return Health(HealthState.FAILING, (failed, *(cause for _, cause in losses)))
        if losses:
            return Health(HealthState.DEGRADED, tuple(cause for _, cause in losses))
        return Health(HealthState.HEALTHY)

    found: list[tuple[HealthState, Cause]] = []
    checks = (
        (HealthState.BLIND, _blind_cause(facts)),
        (HealthState.BLIND, _app_auth_cause(facts)),
        (HealthState.RATE_LIMITED, _rate_limited_cause(facts, now)),
        (HealthState.STALE, _stale_cause(facts, now)),
        (HealthState.OVERDUE, _capped_scan_cause(facts)),
        (HealthState.FAILING, _failed_run_cause(facts)),
        (HealthState.NEVER_POLLED, _never_polled_cause(facts)),
    )
    for state, cause in checks:
        if cause is not None:
            found.append((state, cause))
    found.extend(losses)
    if not found:
        return Health(HealthState.HEALTHY)
    found.sort(key=lambda pair: SEVERITY.index(pair[0]))
    return Health(found[0][0], tuple(cause for _, cause in found))


def _blind_cause(facts: PollHealthFacts) -> Cause | None:
    failures = facts.consecutive_auth_failures
    if failures < AUTH_FAILURES_BLIND:
        return None
    status = f" (last HTTP status {facts.last_http_status})" if facts.last_http_status else ""
    return Cause(
        "blind",
        f"the last {failures} polls in a row failed authentication{status}; "
        "no pull request is being read",
        "check the token in GITHUB_TOKEN (or GH_TOKEN): it may be expired or revoked, "
        "or lack read access to this repository's pull requests",
    )


def _app_auth_cause(facts: PollHealthFacts) -> Cause | None:
    reason = facts.last_error_reason
    if reason not in APP_AUTH_ADVICE or not _newest_poll_failed(facts):
        return None
    return Cause(
        reason,
        f"the newest poll could not authenticate as the GitHub App ({reason}); "
        "no pull request is being read",
        APP_AUTH_ADVICE[reason],
    )


def _rate_limited_cause(facts: PollHealthFacts, now: datetime) -> Cause | None:
    if facts.last_error_reason not in RATE_LIMIT_REASONS or not _newest_poll_failed(facts):
        return None
    reset = facts.rate_limit_reset_at
    if reset is not None and reset <= now:
        return None
    secondary = facts.last_error_reason == "secondary_rate_limited"
    kind = "GitHub's secondary rate limit" if secondary else "GitHub's rate limit"
    if reset is None:
        when = "the reset time is unknown"
    else:
        when = (
            f"polls resume after {reset.isoformat()} (in {format_duration(_seconds(reset - now))})"
        )
    advice = (
        "polls resume by themselves; if this recurs, lengthen poll_interval or poll "
        "fewer repositories with the same token"
    )
    return Cause("rate_limited", f"the newest poll hit {kind}; {when}", advice)


def _stale_cause(facts: PollHealthFacts, now: datetime) -> Cause | None:
    interval = facts.poll_interval_seconds
    if facts.last_poll_at is None or interval is None or interval <= 0:
        return None
    limit = timedelta(seconds=STALE_INTERVALS * interval)
    healthy_at = facts.last_healthy_poll_at
    if healthy_at is not None and now - healthy_at <= limit:
        return None
    if healthy_at is None:
        since = "no healthy poll yet"
    else:
        since = f"no healthy poll for {format_duration(_seconds(now - healthy_at))}"
    window = format_duration(limit.total_seconds())
    message = f"{since} ({STALE_INTERVALS} poll intervals are {window}){_last_error(facts)}"
    return Cause(
        "stale",
        message,
        "check that an engine is running (li engine run) and fix the last error shown, if any",
    )


def _capped_scan_cause(facts: PollHealthFacts) -> Cause | None:
    capped = facts.consecutive_cap_no_dispatch
    if capped < CAPPED_POLLS_OVERDUE:
        return None
    pages = facts.page_limit
    seen = (
        f"the last {capped} polls in a row read all {pages} pages allowed without "
        "reaching the cursor and launched nothing"
    )
    if pages < MAX_PAGE_LIMIT:
        return Cause(
            "capped_scan",
            f"{seen}; events past page {pages} are waiting",
            f"raise page_limit above {pages} (at most {MAX_PAGE_LIMIT})",
        )
    return Cause(
        "capped_scan",
        f"{seen}; bounded recovery is insufficient: no higher page limit exists",
        f"operator reconciliation is needed: inspect the waiting pull requests, then "
        f"move the cursor with `{RECONCILE_COMMAND}`",
    )


def _failed_run_cause(facts: PollHealthFacts) -> Cause | None:
    status = facts.latest_run_status
    if status not in FAILED_RUN_STATUSES:
        return None
    reason = f" ({facts.latest_run_reason})" if facts.latest_run_reason else ""
    if status == RunStatus.TIMED_OUT.value:
        return Cause(
            "run_timed_out",
            f"the newest run timed out{reason}",
            "read its output with li schedule runs; raise the timeout if the command needs longer",
        )
    return Cause(
        "run_failed",
        f"the newest run failed{reason}",
        "read its exit code and output tails with li schedule runs",
    )


def _loss_causes(facts: PollHealthFacts) -> list[Cause]:
    """One ``degraded`` cause per kind of loss counted in the health window."""
    counts = facts.losses
    if counts is None:
        return []
    window = format_duration(HEALTH_WINDOW.total_seconds())
    of = f"of {counts.total} run(s) in the last {window}"
    found = []
    if counts.failed:
        found.append(
            Cause(
                "runs_failed",
                f"{counts.failed} {of} failed or timed out",
                "read them with li schedule runs NAME --status failed --status timed_out",
            )
        )
    if counts.cancelled:
        found.append(
            Cause(
                "runs_cancelled",
                f"{counts.cancelled} {of} were cancelled by an engine that was lost "
                "(it never stopped cleanly) or by a fence",
                "github_poll events are offered again (li schedule runs shows the attempts); "
                "li engine status names the engines that were lost",
            )
        )
    if counts.refused:
        found.append(
            Cause(
                "runs_refused",
                f"{counts.refused} {of} were refused (overlap, allow-list, template)",
                "read the reasons with li schedule runs NAME --status refused",
            )
        )
    if counts.coalesced:
        found.append(
            Cause(
                "slots_coalesced",
                f"{counts.coalesced} due occurrence(s) in the last {window} were folded into "
                "later fires (the engine was down or overloaded)",
                "keep an engine running; lengthen the interval or raise "
                "LI_MAX_CONCURRENT_ACTIONS if the engine is overloaded",
            )
        )
    return found


def _never_polled_cause(facts: PollHealthFacts) -> Cause | None:
    if facts.last_poll_at is not None:
        return None
    return Cause(
        "never_polled",
        "this schedule has not polled yet",
        "the first poll happens at its next due time while an engine is running (li engine run)",
    )


def _newest_poll_failed(facts: PollHealthFacts) -> bool:
    healthy_at = facts.last_healthy_poll_at
    if healthy_at is None or facts.last_poll_at is None:
        return True
    return facts.last_poll_at > healthy_at


def _last_error(facts: PollHealthFacts) -> str:
    if facts.last_error_reason is None or not _newest_poll_failed(facts):
        return ""
    status = f", HTTP {facts.last_http_status}" if facts.last_http_status else ""
    errors = facts.consecutive_errors
    streak = f", {errors} errors in a row" if errors > 1 else ""
    return f"; last error: {facts.last_error_reason}{status}{streak}"


def _seconds(delta: timedelta) -> float:
    # Whole seconds: sub-second precision is noise in an operator's message.
    return float(max(0, int(delta.total_seconds())))


def capped_counter_next(
    current: int,
    *,
    fresh_ok_poll: bool,
    scan_complete: bool,
    confirmed_launch: bool,
    held_batch: bool,
    held_batch_matching_launch: bool,
    error: bool,
    polled: bool,
    interrupted: bool,
) -> int:
    """The capped-poll counter after one pass (docs/decisions.md D7); never negative.

    Flags tell what the pass did: ``polled`` it sent a poll; ``fresh_ok_poll`` that poll
    settled OK (a poll that was not sent cannot be fresh); ``scan_complete`` the scan
    reached the cursor within page_limit; ``confirmed_launch`` a launch was confirmed;
    ``held_batch`` the pass worked on a batch held from an earlier pass;
    ``held_batch_matching_launch`` a launch came from a held batch that still matches;
    ``error`` the poll failed (auth errors included); ``interrupted`` the pass was cut off.

    Precedence, first match wins:

    1. ``error``: unchanged (even with a launch: the poll said nothing about the scan).
    2. ``interrupted`` without ``confirmed_launch``: unchanged.
    3. ``confirmed_launch`` from a fresh OK poll or a still-matching held batch: 0.
    4. ``held_batch`` (no qualifying launch): unchanged.
    5. no fresh OK poll (did not poll, or the poll did not settle OK): unchanged.
    6. ``scan_complete``: 0.
    7. otherwise (fresh OK poll, incomplete scan, no launch, no held batch): +1.

    Raises ValueError when ``current`` is negative.
    """
    if current < 0:
        raise ValueError(f"the capped-poll counter cannot be negative, got {current}")
    fresh = polled and fresh_ok_poll
    if error:
        return current
    if interrupted and not confirmed_launch:
        return current
    if confirmed_launch and (fresh or (held_batch and held_batch_matching_launch)):
        return 0
    if held_batch or not fresh:
        return current
    if scan_complete:
        return 0
    return current + 1


def health_json(health: Health) -> dict[str, Any]:
    """``health`` as the ``--json`` output: state plus causes of code, message, advice."""
    return {
        "state": health.state.value,
        "causes": [
            {"code": cause.code, "message": cause.message, "advice": cause.advice}
            for cause in health.causes
        ],
    }


# `li schedule health` exits with the code of the most severe of these states among the
# schedules it shows (docs/health.md, "Exit code"; D71): GitHub is not being read
# (blind), not read lately (stale), events are left unread (overdue), or the newest run
# failed (failing). Every other state exits 0, and `--exit-zero` always does.
EXIT_CODES: Mapping[HealthState, int] = {
    HealthState.BLIND: 20,
    HealthState.STALE: 21,
    HealthState.OVERDUE: 22,
    HealthState.FAILING: 23,
}
# The states that page are exactly those with an exit code: a row's ``paging`` and the
# exit status never disagree (a failing schedule paged nobody before; issue 25).
PAGING_STATES = frozenset(EXIT_CODES)


def health_exit_code(states: Iterable[HealthState]) -> int:
    """0, or the :data:`EXIT_CODES` code of the most severe of ``states`` that has one."""
    coded = [state for state in set(states) if state in EXIT_CODES]
    if not coded:
        return 0
    return EXIT_CODES[min(coded, key=SEVERITY.index)]
