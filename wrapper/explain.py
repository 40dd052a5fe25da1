"""``kdev explain --repo R --pr N``: why a pull request was (not) reviewed, one timeline.

Sources, each read through its public interface:

- the engine's side through li's public read API, never its tables:
  :func:`engine.poll.decisions.pr_history` (the github_poll schedules of the repository, their
  decisions and runs for the PR, in the ``li schedule events/runs --pr N --json`` forms)
  and :func:`engine.health.status.schedule_health` (only when the head was not seen), on the li
  database (``LI_DATABASE_URL``), read only: never created or migrated here;
- kdev's outcome log (wrapper.ledger.outcomes) and the ledger (verdicts, carried heads,
  deferrals);
- the PR's current head from GitHub.

It ends with one verdict line about the current head a person can act on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from engine.errors import LiError
from engine.github import GitHubClient, GitHubError
from wrapper.errors import KdevError
from wrapper.gh import get_pull
from wrapper.ledger.ledger import Ledger, LedgerRow, format_timestamp, parse_timestamp
from wrapper.ledger.outcomes import FAILED, OutcomeEntry, OutcomeLog


class EngineReader(Protocol):
    """The engine's side of one PR (li's public read API)."""

    def history(self, repo: str, pr: int) -> dict[str, Any]: ...
    def health(self, name: str) -> dict[str, Any] | None: ...


class LiDatabase:
    """An :class:`EngineReader` on the li database (read only; never migrated here)."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        from sqlalchemy.engine import make_url  # not at import time: issue 19

        from engine.config import Settings
        from engine.store import db as dbmod
        from engine.store.store import Store

        url = Settings.from_env(dict(environ)).database_url
        parsed = make_url(url)
        if parsed.get_backend_name() == "sqlite" and parsed.database:
            if not Path(parsed.database).expanduser().exists():
                raise KdevError(f"li database {parsed.database} does not exist", "li_unreadable")
        self.engine = dbmod.make_engine(url)
        if dbmod.current_revision(self.engine) != dbmod.head_revision(self.engine):
            self.engine.dispose()
            raise KdevError("li database is not at the newest schema", "li_unreadable")
        self.store = Store(self.engine)

    def history(self, repo: str, pr: int) -> dict[str, Any]:
        from engine.poll.decisions import pr_history

        return pr_history(self.store, repo, pr)

    def health(self, name: str) -> dict[str, Any] | None:
        from engine.health.status import schedule_health

        rows = schedule_health(self.store, name)
        return rows[0].to_json() if rows else None

    def close(self) -> None:
        self.engine.dispose()


@dataclass(frozen=True)
class Line:
    """One timeline line."""

    at: datetime | None
    source: str
    text: str

    def to_json(self) -> dict[str, Any]:
        at = None if self.at is None else format_timestamp(self.at)
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

    def to_json(self) -> dict[str, Any]:
        return {
            "repo": self.repo,
            "pr": self.pr,
            "head_sha": self.head_sha,
            "fate": self.fate,
            "verdict": self.verdict,
            "timeline": [line.to_json() for line in self.timeline],
            "engine": self.engine,
            "outcomes": self.outcomes,
            "problems": self.problems,
        }


def _moment(text: object) -> datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return parse_timestamp(text)
    except (ValueError, KdevError):
        return None


@dataclass
class EngineSide:
    schedules: list[dict[str, Any]] = field(default_factory=list)
    decisions: list[dict[str, Any]] = field(default_factory=list)
    runs: list[dict[str, Any]] = field(default_factory=list)


def read_engine(reader: EngineReader | None, repo: str, pr: int, problems: list[str]) -> EngineSide:
    """The engine's side; an unreadable li database is a problem line, not a crash."""
    if reader is None:
        return EngineSide()
    try:
        found = reader.history(repo, pr)
    except LiError as exc:
        problems.append(f"li: {exc.message} [{exc.reason}]")
        return EngineSide()
    return EngineSide(
        schedules=list(found["schedules"]),
        decisions=list(found["decisions"]),
        runs=list(found["runs"]),
    )


def mention_handle(schedules: Sequence[Mapping[str, Any]]) -> str | None:
    for row in schedules:
        mentions = (row.get("trigger_config") or {}).get("mentions") or {}
        if mentions.get("handle"):
            return str(mentions["handle"])
    return None


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
    """Gather every source and decide the verdict line (see the module doc)."""
    problems: list[str] = []
    try:
        head: str | None = get_pull(github, repo, pr).head_sha
    except GitHubError as exc:
        head = None
        problems.append(f"GitHub: {exc} [{exc.reason}]")
    result = Explanation(repo, pr, head, problems=problems)
    if engine_problem is not None:
        problems.append(engine_problem)
    side = read_engine(engine, repo, pr, problems)
    entries = outcomes.read(repo, pr)
    rows = ledger.list_ledger(repo, pr)
    result.engine = {
        "schedules": [str(s["name"]) for s in side.schedules],
        "decisions": side.decisions,
        "runs": side.runs,
    }
    result.outcomes = [e.to_json() for e in entries]
    result.timeline = build_timeline(side, entries, rows, now)
    result.fate, result.verdict = verdict(result, side, entries, rows, engine, now)
    return result


def build_timeline(
    side: EngineSide, entries: Sequence[OutcomeEntry], rows: Sequence[LedgerRow], now: datetime
) -> list[Line]:
    """Every source's lines, oldest first (lines without a time last)."""
    timeline: list[Line] = []
    for d in side.decisions:
        detail = f" ({d['detail']})" if d.get("detail") else ""
        run = f" run {d['run_id']}" if d.get("run_id") is not None else ""
        timeline.append(
            Line(
                _moment(d.get("decided_at")),
                f"engine {d['schedule']}",
                f"{d['decision']}{detail} head {str(d.get('head_sha'))[:7]}{run}",
            )
        )
    for r in side.runs:
        reason = f" ({r['reason']})" if r.get("reason") else ""
        timeline.append(
            Line(
                _moment(r.get("started_at")),
                f"engine {r['schedule']}",
                f"run {r['id']} {r['status']}{reason}",
            )
        )
    for e in entries:
        extra = f" {e.verdict}" if e.verdict else ""
        detail = f" ({e.detail})" if e.detail else ""
        code = e.outcome if e.reason == e.outcome else f"{e.outcome}:{e.reason}"
        timeline.append(
            Line(e.at, f"kdev {e.command}", f"{code}{extra} head {e.head_sha[:7]}{detail}")
        )
    for row in rows:
        if row.deferred is not None:
            continue  # the outcome log has the deferral with its reopening
        carried = f" carried from {row.carried_from[:7]}" if row.carried_from else ""
        timeline.append(
            Line(
                row.reviewed_at,
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


def _clock(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%MZ")


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
            return "reviewed", f"{label}: reviewed {entry.verdict} {_ago(entry.reviewed_at, now)}"
    decided = [d for d in side.decisions if d.get("head_sha") == head]
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
    for row in side.schedules:
        name = str(row["name"])
        try:
            item = engine.health(name)
        except LiError as exc:
            result.problems.append(f"li health of {name}: {exc.message} [{exc.reason}]")
            continue
        if item is None:
            continue
        state = str(item.get("state"))
        if state in ("blind", "stale", "overdue", "rate_limited", "disabled"):
            reason = item.get("last_error_reason") or state
            since = _moment(item.get("last_healthy_poll_at")) or _moment(item.get("last_poll_at"))
            when = f" since {_clock(since)}" if since else ""
            return state, (
                f"{label}: not seen yet{earlier}: schedule {name} is {state} ({reason}{when})"
            )
    names = ", ".join(str(s["name"]) for s in side.schedules)
    return "not_seen", f"{label}: not seen yet{earlier}: the next poll of {names} will see it"


def _outcome_line(label: str, entry: OutcomeEntry, how: str, now: datetime) -> str:
    outcome = entry.outcome
    if outcome in ("reviewed", "carried_forward"):
        artifact = f" (artifact {entry.artifact})" if entry.artifact else ""
        carried = " carried forward" if outcome == "carried_forward" else ""
        verdict = f" {entry.verdict}" if entry.verdict else ""
        return f"{label}: reviewed{verdict}{carried} {_ago(entry.at, now)}{artifact}"
    if outcome == "deferred_budget":
        until = f" until {_clock(entry.reopens_at)}" if entry.reopens_at else " until a slot frees"
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


def _decision_line(
    label: str, decision: Mapping[str, Any], side: EngineSide, how: str
) -> tuple[str, str]:
    kind = str(decision["decision"])
    name = decision.get("schedule")
    detail = decision.get("detail")
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
    run = next((r for r in side.runs if r.get("id") == decision.get("run_id")), None)
    status = f" ({run['status']}{', ' + run['reason'] if run.get('reason') else ''})" if run else ""
    return (
        kind,
        f"{label}: fired as run {decision.get('run_id')}{status}; kdev recorded no outcome yet",
    )


def render(result: Explanation) -> list[str]:
    """The text form: header, timeline, problems, the verdict line last."""
    lines = [f"{result.repo} #{result.pr} (head {result.head_sha or 'unknown'})"]
    for line in result.timeline:
        at = line.at.strftime("%Y-%m-%dT%H:%M:%SZ") if line.at else "-"
        lines.append(f"  {at}  {line.source}: {line.text}")
    for problem in result.problems:
        lines.append(f"  ! {problem}")
    lines.append(result.verdict)
    return lines
