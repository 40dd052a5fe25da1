"""Incremental rounds in ``kdev review-pr`` (issue 28; docs/decisions.md D91-D93).

With ``review_post`` on (one backend, not a roster) and ``incremental.mode`` not
``off``, every round keeps the PR's findings history
(:mod:`wrapper.ledger.findings_history`):

1. :func:`prepare_round` (step 4, before the size plan): with a reviewed diff on record
   that differs, the prompt gets parts 1 and 2 (:mod:`wrapper.review.incremental_prompt`:
   what changed, the earlier findings with their state at the new head, read from the
   head's files and the PR's review threads over GraphQL) and asks for contract version
   2; in ``delta`` mode its diff is only the changed files' sections (``--force``: a
   full round). A first round changes nothing but is recorded the same way.
2. :meth:`IncrementalRound.settle` (step 7, on the reviewer's answer): which earlier
   findings are closed, which stand, which new ones are repeats, reintroductions or new
   (:mod:`wrapper.review.incremental_settle`); only new and reintroduced ones are posted.
3. :func:`record_history` (step 8, after the verdict file): the history and the diff read.
4. :func:`finish_round` (after the round's review is delivered, and on every later run
   of the PR, carried forward included): the posted line comments' ids recorded on their
   findings, then each closed finding's thread replied to and resolved through the
   posting gate, each step recorded as it is done, so a rerun does only what is left.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any, Literal

from engine.github import GitHubClient, GitHubError
from wrapper.authorloop.threads import ReviewThread, list_review_threads, reply, resolve
from wrapper.config import KdevConfig
from wrapper.config_repo import incremental_mode, review_post_enabled
from wrapper.errors import KdevError, ReviewerFailed
from wrapper.gh_reviews import list_review_comments, list_reviews
from wrapper.git import Git
from wrapper.ledger.findings_history import (
    FindingEntry,
    History,
    read_history,
    read_reviewed_diff,
    write_history,
    write_reviewed_diff,
)
from wrapper.ledger.ledger import Ledger
from wrapper.post import PostingContext
from wrapper.review.finding_identity import locate
from wrapper.review.findings_contract import EARLIER_VERSION, ParsedReview
from wrapper.review.incremental_prompt import EarlierFinding, build_incremental_prompt
from wrapper.review.incremental_settle import Settled, SettleRefused, settle
from wrapper.review.prompt import PromptInput
from wrapper.review.round_marker import marker

log = logging.getLogger("kdev.review")

CLOSE_FAILED = "incremental_close_failed"
RoundMode = Literal["first", "full", "delta"]


@dataclass
class IncrementalRound:
    """One round's part in the history: its mode (``first``: nothing reviewed before),
    the history as the round starts, the ids its prompt listed, and (once the reviewer
    answered) what was settled."""

    repo: str
    pr: int
    head_sha: str
    patch_id: str
    mode: RoundMode
    git: Git
    history: History
    reviewed_diff: str
    listed: tuple[str, ...] = ()
    settled: Settled | None = None

    @property
    def derived(self) -> bool:
        return self.mode == "delta"

    def head_text(self, path: str) -> list[str] | None:
        try:
            blob = self.git.file_at(self.head_sha, path)
        except KdevError:  # not a regular file at the head
            return None
        return None if blob is None else blob.decode("utf-8", "replace").splitlines()

    def settle(self, parsed: ParsedReview) -> ParsedReview:
        """The answer to post (step 2 of the module doc); ReviewerFailed when the report
        names an id the prompt did not list."""
        try:
            self.settled = settle(
                self.history,
                parsed,
                self.head_text,
                listed=self.listed,
                patch_id=self.patch_id,
                head_sha=self.head_sha,
                derived=self.derived,
            )
        except SettleRefused as bad:
            raise ReviewerFailed(f"reviewer output: {bad.detail}", bad.reason) from None
        return self.settled.parsed


def applies(config: KdevConfig, repo: str) -> bool:
    reviewer = config.reviewer
    if reviewer is None or reviewer.roster or not review_post_enabled(config, repo):
        return False
    return incremental_mode(config, repo) != "off"


def prepare_round(
    config: KdevConfig,
    ledger: Ledger,
    github: GitHubClient,
    git: Git,
    data: PromptInput,
    patch_id: str,
    *,
    force: bool,
) -> tuple[PromptInput, IncrementalRound] | None:
    """The round's prompt input and its part in the history (see the module doc); None
    when incremental rounds do not apply to the repository."""
    repo, pr = data.repo, data.pr
    if not applies(config, repo):
        return None
    history = read_history(ledger, repo, pr)
    previous = read_reviewed_diff(ledger, repo, pr)
    round_ = IncrementalRound(repo, pr, data.head_sha, patch_id, "first", git, history, data.diff)
    if previous is None or history.patch_id is None:
        return data, round_
    mode = "full" if force else incremental_mode(config, repo)
    shown = [f for f in history.findings if f.state in ("open", "withdrawn")]
    threads = _threads(github, repo, pr) if any(f.comment_id for f in shown) else {}
    earlier: list[EarlierFinding] = []
    for entry in shown:
        seen, moved = _state(round_, entry, threads.get(entry.comment_id or -1))
        earlier.append(seen)
        round_.history = round_.history.with_entry(moved)
    prompt = build_incremental_prompt(
        previous, data.diff, earlier, "delta" if mode == "delta" else "full"
    )
    round_.mode = "delta" if mode == "delta" else "full"
    round_.listed = tuple(f.id for f in shown)
    sent = replace(data, diff=prompt.diff, earlier=prompt.section, contract_version=EARLIER_VERSION)
    return sent, round_


def _threads(github: GitHubClient, repo: str, pr: int) -> dict[int, ReviewThread]:
    return {
        t.first_comment_id: t
        for t in list_review_threads(github, repo, pr)
        if t.first_comment_id is not None
    }


def _state(
    round_: IncrementalRound, entry: FindingEntry, thread: ReviewThread | None
) -> tuple[EarlierFinding, FindingEntry]:
    """``entry`` as part 2 shows it at the new head, and the entry at its new line."""
    lines = round_.head_text(entry.path)
    line = locate(entry.anchored, lines, entry.line)
    code: Literal["unchanged", "changed", "gone"] = "gone" if lines is None else "changed"
    moved = entry
    if line is not None:
        code = "unchanged"
        first = line - len(entry.anchored) + 1  # the anchored lines may be a long range's start
        span = entry.line - (entry.start_line or entry.line)
        start = first if entry.start_line is not None else None
        moved = replace(entry, line=first + span, start_line=start)
    state: Literal["open", "resolved", "outdated", "none"] = "none"
    if thread is not None:
        state = "resolved" if thread.is_resolved else "outdated" if thread.is_outdated else "open"
    seen = EarlierFinding(
        id=entry.id,
        path=entry.path,
        line=moved.line,
        severity=entry.severity,
        title=entry.title,
        body=entry.body,
        code=code,
        thread=state,
        withdrawn=entry.state == "withdrawn",
    )
    return seen, moved


def record_history(ledger: Ledger, round_: IncrementalRound) -> None:
    """Step 3: the settled history (or, for a prose answer, the history as it was) and
    the diff this round read, as the PR's last reviewed state."""
    history = round_.settled.history if round_.settled is not None else round_.history
    rounds = {**history.rounds, round_.patch_id: round_.mode}
    history = replace(history, patch_id=round_.patch_id, head_sha=round_.head_sha, rounds=rounds)
    write_reviewed_diff(ledger, round_.repo, round_.pr, round_.reviewed_diff)
    write_history(ledger, round_.repo, round_.pr, history)


def finish_round(posting: PostingContext) -> str:
    """Step 4: what the history still owes GitHub, done; returns it in words. Raises
    KdevError (``reply_failed``, ``resolve_failed``, ``incremental_close_failed``) when a
    step fails: the steps done stay recorded and the next run does the rest."""
    ledger, repo, pr = posting.ledger, posting.repo, posting.pr
    history = read_history(ledger, repo, pr)
    if history.patch_id is None:
        return ""
    if history.attached != history.patch_id:
        history = _attach(posting, history)
        write_history(ledger, repo, pr, history)
    closed = 0
    for entry in history.findings:
        closing = entry.closing
        if closing is None or (closing.replied and closing.resolved):
            continue
        if entry.comment_id is None or entry.comment_node is None:  # in a summary: no thread
            done = replace(closing, replied=True, resolved=True)
            history = history.with_entry(replace(entry, closing=done))
            write_history(ledger, repo, pr, history)
            continue
        if not closing.replied:
            reply(posting, entry.comment_id, _reply_text(entry))
            closing = replace(closing, replied=True)
            history = history.with_entry(replace(entry, closing=closing))
            write_history(ledger, repo, pr, history)
        resolve(posting.github, repo, pr, entry.comment_node)
        history = history.with_entry(replace(entry, closing=replace(closing, resolved=True)))
        write_history(ledger, repo, pr, history)
        closed += 1
    return f"{closed} earlier findings closed on their threads" if closed else ""


def _reply_text(entry: FindingEntry) -> str:
    assert entry.closing is not None
    at = entry.closing.head_sha[:12]
    note = f" {entry.closing.note}" if entry.closing.note else ""
    if entry.closing.status == "fixed":
        return f"Fixed at {at} ({entry.id}), by kdev's review of the new head.{note}"
    return f"Withdrawn at {at} ({entry.id}): the reviewer now judges this finding wrong.{note}"


def _attach(posting: PostingContext, history: History) -> History:
    """The ids of the line comments of the last round's review, on their findings (by
    path and line); the round is marked attached when its review is found."""
    github, repo, pr = posting.github, posting.repo, posting.pr
    assert history.patch_id is not None
    tag = marker(history.patch_id)
    try:
        reviews = list_reviews(github, repo, pr)
        review = next((r for r in reviews if str(r.get("body") or "").rstrip().endswith(tag)), None)
        if review is None:  # not delivered yet (the review part is still owed)
            return history
        comments = list_review_comments(github, repo, pr, int(review["id"]))
    except GitHubError as exc:
        raise KdevError(
            f"cannot read the round's review back: {exc.message} [{exc.reason}]", CLOSE_FAILED
        ) from None
    waiting = [f for f in history.findings if f.round == history.patch_id and f.comment_id is None]
    for comment in comments:
        entry = _match(waiting, comment)
        if entry is not None:
            waiting.remove(entry)
            history = history.with_entry(
                replace(entry, comment_id=int(comment["id"]), comment_node=str(comment["node_id"]))
            )
    return replace(history, attached=history.patch_id)


def _match(waiting: list[FindingEntry], comment: dict[str, Any]) -> FindingEntry | None:
    if not isinstance(comment.get("id"), int) or not isinstance(comment.get("node_id"), str):
        return None
    for entry in waiting:
        where = (comment.get("line"), comment.get("original_line"))
        if entry.path == comment.get("path") and entry.line in where:
            return entry
    return None
