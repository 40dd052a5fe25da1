"""All feedback on a pull request, with source and priority (``kdev comments``).

Feedback is every issue-level comment, every inline thread's first comment (replies are
counted on their thread, not triaged again) and every review summary with a body or a
decision (an empty COMMENTED review only carries inline comments). Inline comments carry
their thread's resolution state, read with :func:`wrapper.authorloop.threads.list_review_threads`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

from engine.github import GitHubClient, GitHubError
from engine.jsonable import as_json
from wrapper.authorloop.threads import GITHUB_READ_FAILED, ReviewThread, list_review_threads
from wrapper.authorloop.triage import Basis, Priority, Source, detect_source, triage
from wrapper.errors import ConfigError, KdevError
from wrapper.jsonform import JsonForm
from wrapper.review.findings import AGENT_NAME, signed_by

CONVERSATION = "(conversation)"


@dataclass(frozen=True, kw_only=True)
class Feedback:
    """One piece of feedback. ``kind`` is ``issue``, ``inline`` or ``review``. Its
    ``--json`` form is its fields in this order (``rule``, or ``basis`` when there is no
    rule, shown as ``priority_source`` in ``basis``'s place)."""

    kind: str
    id: int
    node_id: str
    user: str
    source: Source
    priority: Priority
    basis: Basis = Basis.DEFAULT  # what kind of rule decided the priority
    marker: str | None = None  # the deciding marker (or content marker), if any
    path: str | None = None
    line: int | None = None
    state: str | None = None  # review summaries: APPROVED, CHANGES_REQUESTED ...
    thread_id: str | None = None
    resolved: bool | None = None  # inline only
    replies: int = 0
    agent: str | None = None  # the kdev-agent signature ending the body, if any
    # kdev's own roster finding (by its recorded comment id, never by the signature, which
    # anyone can type): its validator answer, if any (wrapper.authorloop.own_findings).
    own_finding: bool = False
    validation: str | None = None
    created_at: str
    body: str
    # The rule that decided, shown as ``priority_source`` (``marker:gemini-high``,
    # ``content:security``, ``default:first-round-ambiguous``; wrapper.authorloop.triage).
    rule: str = ""

    @property
    def priority_source(self) -> str:
        return self.rule or self.basis.value

    def to_json(self) -> dict[str, Any]:
        shown = as_json(self, rename={"basis": "priority_source"}, basis=self.priority_source)
        del shown["rule"]
        return shown


@dataclass(frozen=True)
class FeedbackReport(JsonForm):
    """The feedback of one PR plus its summaries; its ``--json`` form is its fields in
    this order."""

    repo: str
    pr: int
    by_priority: dict[str, int]
    by_source: dict[str, int]
    by_file: dict[str, dict[str, int]]
    open_threads: int
    items: list[Feedback]


def after_first_round(item: Feedback) -> Feedback:
    """``item`` as a round after the first reads it: content that decides nothing no
    longer blocks (issue 29: "when ambiguous on the first round, P2"). Pure."""
    if item.basis is not Basis.DEFAULT or item.priority is Priority.P3:
        return item
    return replace(item, priority=Priority.P3, rule="default:later-round-ambiguous")


def _login(item: dict[str, Any]) -> tuple[str, str | None]:
    user = item.get("user")
    if not isinstance(user, dict):
        return "ghost", None
    return str(user.get("login") or "ghost"), user.get("type")


def _listing(github: GitHubClient, path: str) -> list[dict[str, Any]]:
    try:
        body = github.get_rest(path, {"per_page": 100}, paginate=True, max_pages=30).body
    except GitHubError as exc:
        raise KdevError(
            f"cannot read {path}: {exc.message} [{exc.reason}]", GITHUB_READ_FAILED
        ) from None
    return [item for item in body if isinstance(item, dict)]


def _comment(kind: str, c: dict[str, Any], **extra: Any) -> Feedback:
    """One issue-level or inline comment as :class:`Feedback`, triaged."""
    login, account = _login(c)
    body = str(c.get("body") or "")
    decided = triage(body)
    return Feedback(
        kind=kind,
        id=int(c["id"]),
        node_id=str(c.get("node_id") or ""),
        user=login,
        source=detect_source(login, account),
        priority=decided.priority,
        body=body,
        created_at=str(c.get("created_at") or ""),
        basis=decided.basis,
        marker=decided.marker,
        rule=decided.rule,
        agent=signed_by(body),
        **extra,
    )


def build_feedback(
    issue_comments: list[dict[str, Any]],
    review_comments: list[dict[str, Any]],
    reviews: list[dict[str, Any]],
    threads: list[ReviewThread],
) -> list[Feedback]:
    """Pure: the raw REST objects and the threads as :class:`Feedback`, oldest first."""
    by_root = {t.first_comment_id: t for t in threads if t.first_comment_id is not None}
    replies = Counter(
        c.get("in_reply_to_id") for c in review_comments if c.get("in_reply_to_id") is not None
    )
    items: list[Feedback] = []
    items += [_comment("issue", c) for c in issue_comments]
    for c in review_comments:
        if c.get("in_reply_to_id") is not None:
            continue
        thread = by_root.get(int(c["id"]))
        line = c.get("line") if c.get("line") is not None else c.get("original_line")
        items.append(
            _comment(
                "inline",
                c,
                path=c.get("path"),
                line=line if isinstance(line, int) else None,
                thread_id=thread.id if thread else None,
                resolved=thread.is_resolved if thread else False,
                replies=replies.get(c.get("id"), 0),
            )
        )
    for r in reviews:
        state = str(r.get("state") or "")
        body = str(r.get("body") or "")
        if not body.strip() and state in ("COMMENTED", "PENDING", ""):
            continue
        login, kind = _login(r)
        items.append(
            Feedback(
                kind="review",
                id=int(r["id"]),
                node_id=str(r.get("node_id") or ""),
                user=login,
                source=detect_source(login, kind),
                priority=(decided := triage(body, review_state=state)).priority,
                body=body,
                created_at=str(r.get("submitted_at") or ""),
                basis=decided.basis,
                marker=decided.marker,
                rule=decided.rule,
                state=state,
            )
        )
    items.sort(key=lambda f: (f.created_at, f.id))
    return items


def summarise(repo: str, pr: int, items: list[Feedback], open_threads: int) -> FeedbackReport:
    """Pure: counts by priority, by source and by file (``(conversation)`` for
    issue-level comments and review summaries)."""
    by_priority = {p.value: 0 for p in Priority}
    by_source: dict[str, int] = {}
    by_file: dict[str, dict[str, int]] = {}
    for item in items:
        by_priority[item.priority.value] += 1
        by_source[item.source.value] = by_source.get(item.source.value, 0) + 1
        where = by_file.setdefault(item.path or CONVERSATION, {p.value: 0 for p in Priority})
        where[item.priority.value] += 1
    return FeedbackReport(repo, pr, by_priority, by_source, by_file, open_threads, items)


def collect_feedback(
    github: GitHubClient,
    repo: str,
    pr: int,
    *,
    unresolved: bool = False,
    agent: str | None = None,
) -> FeedbackReport:
    """Read and triage all feedback on ``repo`` #``pr``. ``unresolved`` keeps inline
    comments of open threads only (issue-level comments and summaries have no thread);
    ``agent`` keeps comments signed ``<!-- kdev-agent: AGENT -->`` only, and counts
    only their open threads. A bad ``agent`` is ConfigError ``invalid_agent``."""
    if agent is not None and not AGENT_NAME.fullmatch(agent):
        raise ConfigError(
            f"--agent is a roster reviewer's name ([A-Za-z0-9._-], up to 100), got {agent!r}",
            "invalid_agent",
        )
    issue_comments = _listing(github, f"repos/{repo}/issues/{pr}/comments")
    review_comments = _listing(github, f"repos/{repo}/pulls/{pr}/comments")
    reviews = _listing(github, f"repos/{repo}/pulls/{pr}/reviews")
    threads = list_review_threads(github, repo, pr)
    items = build_feedback(issue_comments, review_comments, reviews, threads)
    if unresolved:
        items = [i for i in items if i.kind == "inline" and not i.resolved]
    open_threads = sum(1 for t in threads if not t.is_resolved)
    if agent is not None:
        items = [i for i in items if i.agent == agent]
        open_threads = sum(1 for i in items if i.kind == "inline" and not i.resolved)
    return summarise(repo, pr, items, open_threads)
