"""`kdev explain` with no decision for the head (issue 25): each fate comes from the
pull request's times and the schedule's event, cursor and last poll, never a guess."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from engine.api import PollSchedule, ScheduleHealthRow
from engine.github import PullRequest
from wrapper.explain import schedule_fate

ADDED = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
LABEL = "head 1a2b3c4"
PULL = PullRequest(
    number=7, title="t", html_url="https://github.test/octo/widgets/pull/7", state="open",
    draft=False, user_login="alice", user_id=501, user_type="User",
    created_at=ADDED - timedelta(hours=3), updated_at=ADDED - timedelta(hours=2),
    merged_at=None, head_sha="1a2b3c4" + "0" * 33, head_ref="f", head_repo_full_name=None,
    head_repo_id=1, head_repo_fork=False, base_ref="main", base_repo_full_name="octo/widgets",
    base_repo_id=1, merge_commit_sha=None,
)  # fmt: skip
SCHEDULE = PollSchedule("review-prs", "octo/widgets", None, "pr_updated", ADDED, ADDED)


def polled(at: datetime | None) -> ScheduleHealthRow:
    return ScheduleHealthRow("review-prs", "healthy", False, (), at, at, None)


def fate(
    schedule: PollSchedule = SCHEDULE, pull: PullRequest = PULL, poll: datetime | None = ADDED
) -> tuple[str, str]:
    return schedule_fate(schedule, pull, polled(poll), "octo/widgets", LABEL)


def test_older_than_the_schedule_prints_the_exact_cursor_command() -> None:
    assert fate() == (
        "before_schedule",
        "head 1a2b3c4: not seen: opened 2026-11-30 09:00Z and last changed 2026-11-30 10:00Z, "
        "before schedule review-prs started (2026-11-30 12:00Z); polls do not look back: run "
        "`li schedule cursor review-prs --set 2026-11-30T10:00:00Z --reason 'backfill "
        "octo/widgets#7'` to get it reviewed",
    )


def test_behind_a_cursor_moved_past_it_is_named_with_the_same_command() -> None:
    moved = replace(SCHEDULE, cursor_at=ADDED + timedelta(hours=2))
    changed = replace(PULL, updated_at=ADDED + timedelta(hours=1))
    kind, line = fate(moved, changed, ADDED + timedelta(hours=3))
    assert kind == "behind_cursor"
    assert "behind the cursor of schedule review-prs (2026-11-30 14:00Z)" in line
    assert "--set 2026-11-30T13:00:00Z" in line


def test_a_backfill_schedule_with_no_cursor_sees_it_on_its_next_poll() -> None:
    unset = replace(SCHEDULE, cursor_at=None)
    kind, line = fate(unset, poll=ADDED - timedelta(hours=2, minutes=5))
    assert kind == "not_seen" and line.endswith("the next poll will see it")
    assert fate(unset, poll=None) == (
        "not_seen",
        "head 1a2b3c4: not seen yet: schedule review-prs has not polled yet; "
        "its first poll will see it",
    )


def test_polled_after_its_change_with_no_decision_says_li_does_not_know() -> None:
    unset = replace(SCHEDULE, cursor_at=None)
    kind, line = fate(unset, poll=ADDED)
    assert kind == "unknown" and "li's records do not say why" in line
    assert "next poll" not in line


def test_closed_unmerged_and_mention_schedules_are_named() -> None:
    closed = replace(PULL, state="closed")
    assert fate(pull=closed)[0] == "closed"
    assert "polls open pull requests only" in fate(pull=closed)[1]
    merged = replace(SCHEDULE, event="pr_merged")
    assert fate(merged)[0] == "not_merged"
    mentions = replace(SCHEDULE, event="mentions", mention_handle="kdev-bot")
    kind, line = fate(mentions)
    assert kind == "mention_only" and line.endswith("summon a review with @kdev-bot review")
