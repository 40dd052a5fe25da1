"""``kdev watch``: one persistent watch over a PR's CI and comments, one line per event.

Each poll reads, all conditionally (``If-None-Match``, so an idle poll is answered 304
and costs no rate limit):

* ``GET /repos/{o}/{r}/pulls/{n}`` (head, state, size);
* ``GET .../commits/{head}/check-runs``: a run is printed once per terminal bucket
  (``pass``, ``fail``, ``cancel``, ``skipping``), ``[ci] <name>: <bucket>``;
* ``GET .../issues/{n}/comments?since=`` and ``.../pulls/{n}/comments?since=``: the window
  starts at the PR's creation and moves to the newest ``updated_at`` seen. ``since`` is
  inclusive, so comments are de-duplicated by node id;
* ``GET .../pulls/{n}/reviews`` (no ``since`` exists for reviews), de-duplicated likewise.

One failed call is logged and skipped; the next poll retries. The watch ends when the PR
is closed or merged (exit 0) or after ``max_duration`` (exit :data:`EXIT_MAX_DURATION`),
printing what is still unsettled: checks not passing, comments not answered.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from engine.durations import DAY, parse_duration
from engine.errors import LiError
from engine.github import GitHubClient, GitHubError
from engine.timefmt import iso_utc
from wrapper.errors import ConfigError

log = logging.getLogger("kdev.watch")

EXIT_MAX_DURATION = 16  # the watch ran out of time with something unsettled or not
MIN_INTERVAL = 60
DEFAULT_MAX_DURATION = 2 * 3600
TERMINAL_BUCKETS = ("pass", "fail", "cancel", "skipping")


def auto_interval(changed_lines: int) -> int:
    """Seconds between polls for a PR of ``changed_lines`` (additions + deletions):
    under 200 -> 180, 200 to 1000 -> 300, over 1000 -> 480."""
    if changed_lines < 200:
        return 180
    if changed_lines <= 1000:
        return 300
    return 480


def choose_interval(option: str, changed_lines: int) -> int:
    """``--interval``: ``auto`` (by size) or a duration like every other one (``90s``,
    ``5m``; bare whole seconds are still read, as before), never under
    :data:`MIN_INTERVAL`. Anything else is ConfigError ``invalid_interval``."""
    text = option.strip().lower()
    if text == "auto":
        return max(MIN_INTERVAL, auto_interval(changed_lines))
    if text.isdigit() and int(text) >= 1:
        seconds = int(text)
    else:
        try:
            seconds = parse_duration(text, what="--interval", maximum=DAY)
        except LiError:
            raise ConfigError(
                f"--interval is auto or a duration like 90s or 5m, got {option!r}",
                "invalid_interval",
            ) from None
    if seconds < MIN_INTERVAL:
        log.warning(
            "--interval %ss is under the %ss floor; using %ss", seconds, *[MIN_INTERVAL] * 2
        )
    return max(MIN_INTERVAL, seconds)


def check_bucket(status: str | None, conclusion: str | None) -> str:
    """A check run's bucket, as ``gh pr checks`` names them: ``pending`` until completed,
    then ``pass`` (success, neutral), ``skipping`` (skipped), ``cancel`` (cancelled) or
    ``fail`` (everything else)."""
    if status != "completed":
        return "pending"
    if conclusion in ("success", "neutral"):
        return "pass"
    if conclusion == "skipped":
        return "skipping"
    if conclusion == "cancelled":
        return "cancel"
    return "fail"


def one_line(body: str) -> str:
    """``body`` on one line: backslashes doubled, CR/LF/tab escaped."""
    return (
        (body or "")
        .replace("\\", "\\\\")
        .replace("\r", "\\r")
        .replace("\n", "\\n")
        .replace("\t", "\\t")
    )


@dataclass(frozen=True)
class WatchEvent:
    """One printed event. ``kind``: ci, issue, inline, review, unsettled, pr."""

    kind: str
    fields: dict[str, Any]

    def line(self) -> str:
        """The tagged text line (docs/author-loop.md)."""
        f = self.fields
        if self.kind == "ci":
            return f"[ci] {f['name']}: {f['bucket']}"
        if self.kind == "issue":
            return (
                f"[comment] issue node={f['node_id']} id={f['id']} @{f['user']}: "
                f"{one_line(f['body'])}"
            )
        if self.kind == "inline":
            where = f"{f['path']}:{f['line'] if f['line'] is not None else '?'}"
            return (
                f"[comment] inline node={f['node_id']} id={f['id']} @{f['user']} {where}: "
                f"{one_line(f['body'])}"
            )
        if self.kind == "review":
            return (
                f"[comment] review node={f['node_id']} id={f['id']} @{f['user']} "
                f"[{f['state']}]: {one_line(f['body'])}"
            )
        if self.kind == "pr":
            return f"[pr] {f['state']}"
        return f"[unsettled] {f['what']}"

    def to_json(self) -> str:
        return json.dumps({"event": self.kind, **self.fields}, sort_keys=True)


@dataclass
class WatchState:
    """What the watch has already printed and where its comment window stands."""

    since: datetime | None = None
    seen_nodes: set[str] = field(default_factory=set)
    printed_buckets: dict[int, str] = field(default_factory=dict)  # check run id -> bucket
    checks: dict[str, str] = field(default_factory=dict)  # name -> latest bucket at head
    head_sha: str | None = None
    author: str | None = None
    pr_state: str | None = None
    changed_lines: int = 0
    inline: dict[int, dict[str, Any]] = field(default_factory=dict)  # id -> comment
    conversation: list[tuple[str, str]] = field(default_factory=list)  # (created_at, user)
    errors: list[str] = field(default_factory=list)  # the last few failed calls


@dataclass(frozen=True)
class WatchResult:
    exit_code: int
    polls: int
    unsettled: list[str]


def _user(item: dict[str, Any]) -> str:
    user = item.get("user")
    return str(user.get("login") or "ghost") if isinstance(user, dict) else "ghost"


def _stamp(text: Any) -> datetime | None:
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)
    except ValueError:
        return None


@dataclass(eq=False)
class PrWatch:
    """The watch loop over ``repo`` #``pr``; ``emit`` receives each event.

    ``interval`` is the option (``auto`` or a duration), turned into ``poll_seconds``
    once the head's size is known. ``clock`` (aware UTC) and ``sleep`` are injectable so
    tests run it without waiting.
    """

    github: GitHubClient
    repo: str
    pr: int
    emit: Callable[[WatchEvent], None]
    _: KW_ONLY
    interval: str = "auto"
    max_duration: float = DEFAULT_MAX_DURATION
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    sleep: Callable[[float], None] = time.sleep
    state: WatchState = field(default_factory=WatchState, init=False)
    poll_seconds: int | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        choose_interval(self.interval, 0)  # refuse a bad option before the first request

    # -- one poll ---------------------------------------------------------------------

    def _get(self, path: str, params: dict[str, str | int] | None = None, **kw: Any) -> Any:
        """One conditional read; None (logged, remembered) when it failed."""
        try:
            return self.github.get_rest(path, params, cache_scope="kdev-watch", **kw).body
        except GitHubError as exc:
            message = f"{exc.message} [{exc.reason}]"
            log.warning("watch %s #%s: %s", self.repo, self.pr, message)
            self.state.errors = [*self.state.errors[-4:], message]
            return None

    def poll(self) -> list[WatchEvent]:
        """One poll: every new event, in the order CI, issue, inline, review."""
        base = f"repos/{self.repo}"
        events: list[WatchEvent] = []
        pull = self._get(f"{base}/pulls/{self.pr}")
        if isinstance(pull, dict):
            self._read_pull(pull)
        if self.state.head_sha:
            runs = self._get(
                f"{base}/commits/{self.state.head_sha}/check-runs",
                {"per_page": 100},
                paginate=True,
                items_key="check_runs",
            )
            if isinstance(runs, list):
                events += self._read_checks(runs)
        if self.state.since is not None:
            window: dict[str, str | int] = {
                "since": iso_utc(self.state.since),
                "sort": "updated",
                "direction": "asc",
                "per_page": 100,
            }
            newest = self.state.since
            for kind, path in (
                ("issue", f"{base}/issues/{self.pr}/comments"),
                ("inline", f"{base}/pulls/{self.pr}/comments"),
            ):
                items = self._get(path, window, paginate=True)
                if isinstance(items, list):
                    found, latest = self._read_comments(kind, items)
                    events += found
                    newest = max(newest, latest or newest)
            # Only now, so both feeds of this poll used the same window.
            self.state.since = newest
        reviews = self._get(f"{base}/pulls/{self.pr}/reviews", {"per_page": 100}, paginate=True)
        if isinstance(reviews, list):
            events += self._read_reviews(reviews)
        return events

    def _read_pull(self, pull: dict[str, Any]) -> None:
        state = self.state
        head = pull.get("head")
        if isinstance(head, dict) and isinstance(head.get("sha"), str):
            if state.head_sha != head["sha"]:
                state.checks = {}
            state.head_sha = head["sha"]
        additions, deletions = pull.get("additions"), pull.get("deletions")
        if isinstance(additions, int) and isinstance(deletions, int):
            state.changed_lines = additions + deletions
        state.author = _user(pull)
        state.pr_state = "merged" if pull.get("merged_at") else str(pull.get("state") or "open")
        if state.since is None:
            state.since = _stamp(pull.get("created_at"))

    def _read_checks(self, runs: list[Any]) -> list[WatchEvent]:
        events = []
        for run in sorted((r for r in runs if isinstance(r, dict)), key=lambda r: r.get("id", 0)):
            name = str(run.get("name") or "?")
            bucket = check_bucket(run.get("status"), run.get("conclusion"))
            self.state.checks[name] = bucket
            run_id = run.get("id")
            if bucket in TERMINAL_BUCKETS and isinstance(run_id, int):
                if self.state.printed_buckets.get(run_id) != bucket:
                    self.state.printed_buckets[run_id] = bucket
                    events.append(WatchEvent("ci", {"name": name, "bucket": bucket}))
        return events

    def _fresh(self, item: dict[str, Any]) -> bool:
        node = item.get("node_id")
        key = str(node) if node else f"id:{item.get('id')}"
        if key in self.state.seen_nodes:
            return False
        self.state.seen_nodes.add(key)
        return True

    def _read_comments(
        self, kind: str, items: list[Any]
    ) -> tuple[list[WatchEvent], datetime | None]:
        events, latest = [], None
        for item in items:
            if not isinstance(item, dict):
                continue
            updated = _stamp(item.get("updated_at"))
            if updated is not None and (latest is None or updated > latest):
                latest = updated
            if kind == "inline" and isinstance(item.get("id"), int):
                self.state.inline[item["id"]] = item
            if not self._fresh(item):
                continue
            if kind == "issue":
                self.state.conversation.append((str(item.get("created_at")), _user(item)))
            fields: dict[str, Any] = {
                "node_id": item.get("node_id"),
                "id": item.get("id"),
                "user": _user(item),
                "body": str(item.get("body") or ""),
            }
            if kind == "inline":
                line = (
                    item.get("line") if item.get("line") is not None else item.get("original_line")
                )
                fields |= {"path": item.get("path"), "line": line}
            events.append(WatchEvent(kind, fields))
        return events, latest

    def _read_reviews(self, reviews: list[Any]) -> list[WatchEvent]:
        events = []
        for review in reviews:
            if not isinstance(review, dict):
                continue
            state, body = str(review.get("state") or ""), str(review.get("body") or "")
            if not self._fresh(review) or (state == "COMMENTED" and not body.strip()):
                continue  # an empty COMMENTED review only carries inline comments
            self.state.conversation.append((str(review.get("submitted_at")), _user(review)))
            events.append(
                WatchEvent(
                    "review",
                    {
                        "node_id": review.get("node_id"),
                        "id": review.get("id"),
                        "user": _user(review),
                        "state": state,
                        "body": body,
                    },
                )
            )
        return events

    # -- the loop ---------------------------------------------------------------------

    def unsettled(self) -> list[str]:
        """What is not settled: checks not passing at the head, unanswered comments.

        An inline thread is unanswered when its first comment is someone else's and it
        has no reply; an issue-level comment or review summary when it is someone else's
        and newer than the PR author's last one."""
        state = self.state
        lines = [
            f"check {name}: {bucket}"
            for name, bucket in sorted(state.checks.items())
            if bucket not in ("pass", "skipping")
        ]
        if state.head_sha is None:
            lines.append("pr: never read")
        replied = {c.get("in_reply_to_id") for c in state.inline.values()}
        open_inline = sum(
            1
            for cid, c in state.inline.items()
            if c.get("in_reply_to_id") is None and _user(c) != state.author and cid not in replied
        )
        author_last = max(
            (at for at, user in state.conversation if user == state.author), default=""
        )
        open_conversation = sum(
            1 for at, user in state.conversation if user != state.author and at > author_last
        )
        if open_inline or open_conversation:
            lines.append(
                f"comments: {open_inline + open_conversation} unanswered "
                f"({open_inline} inline, {open_conversation} conversation)"
            )
        return lines

    def run(self) -> WatchResult:
        """Poll until the PR closes (exit 0) or ``max_duration`` passes
        (:data:`EXIT_MAX_DURATION`, after the unsettled lines)."""
        started = self.clock()
        deadline = started + timedelta(seconds=self.max_duration)
        polls = 0
        while True:
            for event in self.poll():
                self.emit(event)
            polls += 1
            if self.poll_seconds is None and self.state.head_sha is not None:
                self.poll_seconds = choose_interval(self.interval, self.state.changed_lines)
            if self.state.pr_state in ("closed", "merged"):
                self.emit(WatchEvent("pr", {"state": self.state.pr_state}))
                return WatchResult(0, polls, self.unsettled())
            interval = self.poll_seconds or MIN_INTERVAL
            now = self.clock()
            if now >= deadline:
                break
            self.sleep(min(interval, max(0.0, (deadline - now).total_seconds())))
            if self.clock() >= deadline:
                for event in self.poll():  # a last look at the deadline
                    self.emit(event)
                polls += 1
                break
        unsettled = self.unsettled()
        for what in unsettled or ["nothing"]:
            self.emit(WatchEvent("unsettled", {"what": what}))
        return WatchResult(EXIT_MAX_DURATION, polls, unsettled)
