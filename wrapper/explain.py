"""``kdev explain --repo R --pr N``: why a pull request was (not) reviewed, one timeline.

Sources, each read through its public interface:

- the engine's side through li's public, typed read API (:mod:`engine.api`), never its
  tables: :meth:`~engine.api.LiReader.pr_history` (the github_poll schedules of the
  repository, their decisions and runs for the PR; ``--json`` shows them in the
  ``li schedule events/runs --pr N --json`` forms) and
  :meth:`~engine.api.LiReader.schedule_health` (only when the head was not seen), on the
  li database (``LI_DATABASE_URL``), read only: never created or migrated here;
- kdev's outcome log (wrapper.ledger.outcomes) and the ledger (verdicts, carried heads,
  deferrals);
- the PR's current head from GitHub.

It ends with one verdict line about the current head a person can act on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from engine.api import (
    Decision,
    PollSchedule,
    PrHistory,
    PrRun,
    QueuedAttempt,
    ScheduleHealthRow,
)
from engine.errors import LiError
from engine.github import GitHubClient, GitHubError, GitHubNotFound, PullRequest
from engine.timefmt import iso_utc, iso_utc_or_none, minute_utc
from wrapper.errors import KdevError
from wrapper.gh import get_pull
from wrapper.ledger.findings_history import DERIVED_WORDS, is_derived
from wrapper.ledger.ledger import Ledger, LedgerRow
from wrapper.ledger.outcomes import FAILED, OutcomeEntry, OutcomeLog
from wrapper.ledger.usagelog import read_usage
from wrapper.usage import describe


class EngineReader(Protocol):
    """The engine's side of one PR (:class:`engine.api.LiReader` is one)."""

    def pr_history(self, repo: str, pr: int) -> PrHistory: ...
    def schedule_health(self, name: str | None = None) -> list[ScheduleHealthRow]: ...


# Schedule states in which a new head may go unseen; the verdict line names them.
UNSEEN_STATES = frozenset({"blind", "stale", "overdue", "rate_limited", "disabled"})


@dataclass(frozen=True)
class Line:
    """One timeline line."""

    at: datetime | None
    source: str
    text: str

    def to_json(self) -> dict[str, Any]:
        at = None if self.at is None else iso_utc(self.at, timespec="auto")
        return {"at": at, "source": self.source, "text": self.text}


@dataclass
class Explanation:
    repo: str
    pr: int
    head_sha: str | None
    verdict: str = ""
    fate: str = ""  # the reason code the verdict names
    timeline: list[Line] = field(default_factory=list)
    engine: dict[str, Any] = field(default_factory=dict)
    outcomes: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    pull: PullRequest | None = None  # GitHub's answer; None when it could not be read
    usage: list[dict[str, Any]] = field(default_factory=list)  # usage.jsonl lines (D103)

    def to_json(self) -> dict[str, Any]:
        pull = self.pull
        return {
            "repo": self.repo,
            "pr": self.pr,
            "head_sha": self.head_sha,
            "pull": None
            if pull is None
            else {
                "state": pull.state,
                "created_at": iso_utc_or_none(pull.created_at),
                "updated_at": iso_utc_or_none(pull.updated_at),
                "merged_at": iso_utc_or_none(pull.merged_at),
            },
            "fate": self.fate,
            "verdict": self.verdict,
            "timeline": [line.to_json() for line in self.timeline],
            "engine": self.engine,
            "outcomes": self.outcomes,
            "problems": self.problems,
            "usage": self.usage,
        }


def _second(moment: datetime | None) -> datetime | None:
    """li's times to the second: the precision li's ``--json`` forms and the ledger show."""
    return None if moment is None else moment.replace(microsecond=0)


@dataclass
class EngineSide:
    schedules: Sequence[PollSchedule] = ()
    decisions: Sequence[Decision] = ()
    runs: Sequence[PrRun] = ()
    queued: Sequence[QueuedAttempt] = ()


def read_engine(reader: EngineReader | None, repo: str, pr: int, problems: list[str]) -> EngineSide:
    """The engine's side; an unreadable li database is a problem line, not a crash."""
    if reader is None:
        return EngineSide()
    try:
        found = reader.pr_history(repo, pr)
    except LiError as exc:
        problems.append(f"li: {exc.message} [{exc.reason}]")
        return EngineSide()
    return EngineSide(found.schedules, found.decisions, found.runs, found.queued)


def mention_handle(schedules: Sequence[PollSchedule]) -> str | None:
    return next((s.mention_handle for s in schedules if s.mention_handle), None)


def explain(
    repo: str,
    pr: int,
    *,
    ledger: Ledger,
    outcomes: OutcomeLog,
    github: GitHubClient,
    engine: EngineReader | None,
    now: datetime,
    engine_problem: str | None = None,
) -> Explanation:
    """Gather every source and decide the verdict line (see the module doc).

    Raises ``pr_not_found`` when GitHub answers 404 for the pull request: there is no
    fate to explain (D71)."""
    problems: list[str] = []
    pull: PullRequest | None = None
    try:
        pull = get_pull(github, repo, pr)
    except GitHubNotFound:
        raise KdevError(
            f"GitHub has no pull request #{pr} in {repo} (404: it does not exist, or the "
            "token cannot see the repository)",
            "pr_not_found",
        ) from None
    except GitHubError as exc:
        problems.append(f"GitHub: {exc} [{exc.reason}]")
    head = pull.head_sha if pull is not None else None
    result = Explanation(repo, pr, head, problems=problems, pull=pull)
    if engine_problem is not None:
        problems.append(engine_problem)
    side = read_engine(engine, repo, pr, problems)
    entries = outcomes.read(repo, pr)
    rows = ledger.list_ledger(repo, pr)
    result.engine = {
        "schedules": [s.name for s in side.schedules],
        "decisions": [d.to_json() for d in side.decisions],
        "runs": [r.to_json() for r in side.runs],
        "queued": [q.to_json() for q in side.queued],
    }
    result.outcomes = [e.to_json() for e in entries]
    result.timeline = build_timeline(side, entries, rows, now)
    result.fate, result.verdict = verdict(result, side, entries, rows, engine, now)
    legs = [r for r in read_usage(ledger, repo) if r.pr == pr]
    result.usage = [{"at": iso_utc(r.at), **r.usage.to_json()} for r in legs]
    result.timeline += [Line(r.at, "usage", describe(r.usage)) for r in legs]
    patch = next((r.patch_id for r in rows if r.head_sha == head and r.verdict), None)
    if result.fate in ("reviewed", "carried_forward") and is_derived(ledger, repo, pr, patch):
        result.verdict += f" ({DERIVED_WORDS})"  # a delta round's verdict (D92)
    return result


def build_timeline(
    side: EngineSide, entries: Sequence[OutcomeEntry], rows: Sequence[LedgerRow], now: datetime
) -> list[Line]:
    """Every source's lines, oldest first (lines without a time last)."""
    timeline: list[Line] = []
    for d in side.decisions:
        detail = f" ({d.detail})" if d.detail else ""
        run = f" run {d.run_id}" if d.run_id is not None else ""
        timeline.append(
            Line(
                _second(d.decided_at),
                f"engine {d.schedule}",
                f"{d.decision}{detail} head {d.head_sha[:7]}{run}",
            )
        )
    for r in side.runs:
        reason = f" ({r.reason})" if r.reason else ""
        timeline.append(
            Line(_second(r.started_at), f"engine {r.schedule}", f"run {r.id} {r.status}{reason}")
        )
    for q in side.queued:
        timeline.append(Line(_second(q.not_before), f"engine {q.schedule}", _queued_text(q)))
    for e in entries:
        extra = f" {e.verdict}" if e.verdict else ""
        detail = f" ({e.detail})" if e.detail else ""
        code = e.outcome if e.reason == e.outcome else f"{e.outcome}:{e.reason}"
        gate = e.merge_gate or {}
        why = f": {gate['reason']}" if "reason" in gate else ""
        kind = "check run " if gate.get("kind") == "check run" else ""
        shown = f" [{kind}{gate.get('context')} {gate.get('state')} {gate.get('action')}{why}]"
        text = f"{code}{extra} head {e.head_sha[:7]}{detail}{shown if gate else ''}"
        timeline.append(Line(e.at, f"kdev {e.command}", text))
    for row in rows:
        if row.deferred is not None:
            continue  # the outcome log has the deferral with its reopening
        carried = f" carried from {row.carried_from[:7]}" if row.carried_from else ""
        timeline.append(
            Line(
                row.carried_at or row.reviewed_at,  # a carry's own moment (D76)
                "ledger",
                f"{row.kind} {row.verdict} head {row.head_sha[:7]}{carried}",
            )
        )
    timeline.sort(key=lambda line: (line.at is None, line.at or now))
    return timeline


def _ago(moment: datetime | None, now: datetime) -> str:
    if moment is None:
        return "at an unknown time"
    seconds = max(0, int((now - moment).total_seconds()))
    if seconds < 120:
        return f"{seconds}s ago"
    if seconds < 7200:
        return f"{seconds // 60}m ago"
    if seconds < 172800:
        return f"{seconds // 3600}h ago"
    return f"{seconds // 86400}d ago"


def _ledger_line(label: str, entry: LedgerRow, now: datetime) -> str:
    """A head the ledger has a verdict for: reviewed, or carried (when, and from where)."""
    if entry.carried_from is None:
        return f"{label}: reviewed {entry.verdict} {_ago(entry.reviewed_at, now)}"
    when = _ago(entry.carried_at, now) if entry.carried_at else "(an older kdev: time unknown)"
    diff = f" (the same diff, patch-id {entry.patch_id[:12]})" if entry.patch_id else ""
    return (
        f"{label}: reviewed {entry.verdict} carried forward {when} from "
        f"{entry.carried_from[:7]}{diff}, reviewed {_ago(entry.reviewed_at, now)}"
    )


def verdict(
    result: Explanation,
    side: EngineSide,
    entries: Sequence[OutcomeEntry],
    rows: Sequence[LedgerRow],
    engine: EngineReader | None,
    now: datetime,
) -> tuple[str, str]:
    """``(fate, line)`` for the current head (the newest known head if GitHub is unread)."""
    head = result.head_sha or (entries[-1].head_sha if entries else "")
    label = f"head {head[:7]}" if head else "head unknown"
    summon = mention_handle(side.schedules)
    how = (
        f"a maintainer can summon a review with @{summon} review"
        if summon
        else "a maintainer can review it by hand with kdev review-pr --force"
    )
    mine = [e for e in entries if e.head_sha == head]
    if mine:
        last = mine[-1]
        return last.outcome, _outcome_line(label, last, how, now)
    for entry in rows:
        if entry.head_sha == head and entry.verdict and entry.deferred is None:
            return "reviewed", _ledger_line(label, entry, now)
    decided = [d for d in side.decisions if d.head_sha == head]
    if decided:
        return _decision_line(label, decided[-1], side, how)
    earlier = ""
    if entries and entries[-1].outcome == "skipped_stale_head":
        old = entries[-1]
        earlier = f" (the run for {old.head_sha[:7]} was skipped_stale_head: the head moved)"
    if engine is None:
        return "unknown", f"{label}: not reviewed{earlier}: the engine's side is unreadable"
    if not side.schedules:
        return "no_schedule", (
            f"{label}: not seen{earlier}: no github_poll schedule watches {result.repo}"
        )
    return _undecided(result, side, engine, label, earlier)


def _undecided(
    result: Explanation, side: EngineSide, engine: EngineReader, label: str, earlier: str
) -> tuple[str, str]:
    """No decision of li names the head: an unseeing schedule, or what the PR's times
    and each schedule's cursor and last poll prove (:func:`schedule_fate`)."""
    polls: dict[str, ScheduleHealthRow] = {}
    for schedule in side.schedules:
        name = schedule.name
        try:
            health = engine.schedule_health(name)
        except LiError as exc:
            result.problems.append(f"li health of {name}: {exc.message} [{exc.reason}]")
            continue
        if not health:
            continue
        item = health[0]
        polls[name] = item
        if item.state in UNSEEN_STATES:
            reason = item.last_error_reason or item.state
            since = item.last_healthy_poll_at or item.last_poll_at
            when = f" since {minute_utc(since)}" if since else ""
            return item.state, (
                f"{label}: not seen yet{earlier}: schedule {name} is {item.state} ({reason}{when})"
            )
    if result.pull is None:
        return "unknown", (
            f"{label}: not reviewed{earlier}: li recorded no decision for it, and without "
            "GitHub's answer (see above) kdev cannot tell whether a poll will see it"
        )
    pull = result.pull
    fates = [
        schedule_fate(s, pull, polls.get(s.name), result.repo, label, earlier)
        for s in side.schedules
    ]
    # A schedule that will see it speaks first, a mention-only one last.
    order = {"not_seen": 0, "mention_only": 2}
    return min(fates, key=lambda fate: order.get(fate[0], 1))


def backfill_command(schedule: str, at: datetime, repo: str, pr: int) -> str:
    """The operator's command that offers ``pr`` again: the cursor moved back to its
    event's second (an event at the cursor's second is offered, docs/poller.md)."""
    return f"li schedule cursor {schedule} --set {iso_utc(at)} --reason 'backfill {repo}#{pr}'"


def schedule_fate(
    schedule: PollSchedule,
    pull: PullRequest,
    poll: ScheduleHealthRow | None,
    repo: str,
    label: str,
    earlier: str = "",
) -> tuple[str, str]:
    """``(fate, line)`` of a head ``schedule`` recorded no decision for, from what GitHub
    says of the pull request and what li says of the schedule; never a guess."""
    name, number = schedule.name, pull.number
    if schedule.event == "mentions":
        handle = f"@{schedule.mention_handle}" if schedule.mention_handle else "its handle"
        return "mention_only", (
            f"{label}: not fired{earlier}: schedule {name} fires on a pull request's "
            f"opening and on mentions of {handle}, not on pushes; a maintainer can summon "
            f"a review with {handle} review"
        )
    if schedule.event == "pr_merged":
        if pull.merged_at is None:
            return "not_merged", (
                f"{label}: not fired{earlier}: schedule {name} fires on merges (pr_merged) "
                f"and #{number} is not merged"
            )
        at = pull.merged_at
    elif pull.state != "open":
        return "closed", (
            f"{label}: not seen{earlier}: #{number} is {pull.state}; schedule {name} "
            "polls open pull requests only"
        )
    else:
        at = pull.updated_at
    cursor = schedule.cursor_at
    if cursor is not None and at < cursor:
        command = backfill_command(name, at, repo, number)
        started = schedule.created_at
        if started is not None and at < started:
            opened = minute_utc(pull.created_at)
            return "before_schedule", (
                f"{label}: not seen{earlier}: opened {opened} and last changed "
                f"{minute_utc(at)}, before schedule {name} started ({minute_utc(started)}); "
                f"polls do not look back: run `{command}` to get it reviewed"
            )
        return "behind_cursor", (
            f"{label}: not seen{earlier}: last changed {minute_utc(at)}, behind the cursor "
            f"of schedule {name} ({minute_utc(cursor)}), and li recorded no decision for "
            f"it; polls do not look back: run `{command}` to offer it again"
        )
    last = poll.last_poll_at if poll is not None else None
    if last is None:
        return "not_seen", (
            f"{label}: not seen yet{earlier}: schedule {name} has not polled yet; "
            "its first poll will see it"
        )
    if last < at:
        return "not_seen", (
            f"{label}: not seen yet{earlier}: it changed {minute_utc(at)}, after the last "
            f"poll of {name} ({minute_utc(last)}); the next poll will see it"
        )
    return "unknown", (
        f"{label}: not reviewed{earlier}: schedule {name} polled {minute_utc(last)}, after "
        f"it changed ({minute_utc(at)}), and recorded no decision for this head; li's "
        f"records do not say why (li schedule preview {name} shows what a poll decides now)"
    )


def _outcome_line(label: str, entry: OutcomeEntry, how: str, now: datetime) -> str:
    outcome = entry.outcome
    if outcome in ("reviewed", "carried_forward"):
        artifact = f" (artifact {entry.artifact})" if entry.artifact else ""
        carried = " carried forward" if outcome == "carried_forward" else ""
        verdict = f" {entry.verdict}" if entry.verdict else ""
        return f"{label}: reviewed{verdict}{carried} {_ago(entry.at, now)}{artifact}"
    if outcome == "deferred_budget":
        until = (
            f" until {minute_utc(entry.reopens_at)}" if entry.reopens_at else " until a slot frees"
        )
        return f"{label}: not reviewed: deferred by {entry.reason}{until}"
    if outcome == "skipped_fork":
        return f"{label}: not reviewed: skipped_fork ({entry.detail}); {how}"
    if outcome == FAILED:
        return (
            f"{label}: not reviewed: failed ({entry.reason}) {_ago(entry.at, now)}; "
            "the next push fires again, or re-run kdev review-pr"
        )
    if outcome == "described":
        return f"{label}: described {_ago(entry.at, now)}"
    detail = f" ({entry.detail})" if entry.detail else ""
    return f"{label}: not reviewed: {outcome}{detail}"


def _decision_line(label: str, decision: Decision, side: EngineSide, how: str) -> tuple[str, str]:
    kind = decision.decision
    name = decision.schedule
    detail = decision.detail
    if kind.startswith("excluded:"):
        what = kind.partition(":")[2]
        why = " (fork)" if detail == "not_same_repo" else f" ({detail})" if detail else ""
        return kind, f"{label}: not reviewed: excluded by {what}{why}; {how}"
    if kind == "held":
        return kind, (
            f"{label}: not reviewed yet: held by max_fires_per_poll of schedule {name}; "
            "it fires first on a later pass"
        )
    if kind.startswith("refused:"):
        return kind, (
            f"{label}: not reviewed yet: {kind} by schedule {name} (its argv could not be "
            "rendered; retried on the next passes, skipped after 3)"
        )
    if kind == "skipped_after_refusals":
        return kind, (
            f"{label}: not reviewed: skipped_after_refusals ({detail}) by schedule {name}; "
            "fix the schedule's args, then " + how.split("; ")[-1]
        )
    fired = f"{label}: fired as run {decision.run_id}"
    attempts = [r for r in side.runs if decision.run_id in (r.id, r.fire_id)]
    run = max(attempts, key=lambda r: (r.attempt, r.id), default=None)
    if run is not None:
        latest = f"attempt {run.attempt} is run {run.id}, " if run.attempt > 1 else ""
        fired += f" ({latest}{run.status}{', ' + run.reason if run.reason else ''})"
    queued = next(
        (q for q in side.queued if q.schedule == name and q.head_sha == decision.head_sha), None
    )
    if queued is not None:
        return "queued", f"{fired}; {_queued_text(queued)}"
    if run is not None and run.status == "cancelled":
        return "given_up", (
            f"{fired}; not offered again by schedule {name}: the next push fires again, "
            "or re-run kdev review-pr"
        )
    return kind, f"{fired}; kdev recorded no outcome yet"


def _queued_text(queued: QueuedAttempt) -> str:
    """A queued attempt as the timeline and the verdict line say it."""
    when = f" not before {minute_utc(queued.not_before)}" if queued.not_before else ""
    return f"queued for attempt {queued.attempt} of fire {queued.fire_id}{when}"


def render(result: Explanation) -> list[str]:
    """The text form: header, timeline, problems, the verdict line last."""
    lines = [f"{result.repo} #{result.pr} (head {result.head_sha or 'unknown'})"]
    for line in result.timeline:
        at = iso_utc(line.at) if line.at else "-"
        lines.append(f"  {at}  {line.source}: {line.text}")
    for problem in result.problems:
        lines.append(f"  ! {problem}")
    lines.append(result.verdict)
    return lines
