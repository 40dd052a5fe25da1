"""One review per round: the round posted as one GitHub review, exactly once (issue 27;
docs/reviewers.md "One review per round"; docs/decisions.md D86).

A round is recorded before its verdict is written (:func:`record_round`: the rendered
summary, its line comments and the summary to fall back on, raw, in
``pr-N/round-<patch_id>.json``) and owed as the ``review`` part of
:mod:`wrapper.ledger.delivery`, which calls :func:`post_round` under its delivery lock.
:func:`post_round`:

1. prepares every body (the summary, each line comment, the fallback summary) through
   the gate (:meth:`wrapper.post.PostingContext.prepare`: neutralised, live pings and the secret
   canary checked); a refusal posts nothing;
2. appends the hidden marker ``<!-- kdev-round: <patch_id> -->`` to the summary (after
   the preparation, which would escape it);
3. when an earlier run may have sent the POST (the record says ``attempted``), lists the
   PR's reviews and adopts one at the reviewed head whose summary carries the marker,
   instead of posting again;
4. otherwise records ``attempted``, then sends one ``POST .../pulls/{n}/reviews`` with
   ``event: COMMENT``, ``commit_id`` the reviewed head, the summary and the line
   comments; a 422 (GitHub refused an anchor, which rejects the whole review) sends it
   once more with no line comments and the fallback summary, which lists every finding;
   when that is refused too and the posting run decides another head carrying the same
   diff (a rebase left the reviewed head out of the pull), the fallback goes to that
   head, opening with the diff it carries (D90);
5. records the review's id (and its page, which the reply to a summons links to,
   :mod:`wrapper.review.summons`) and each of its comments' ids (self-loop closure), and
   returns them matched to the recorded comments (:class:`PostedRound`), so a roster
   round can write its findings record (:mod:`wrapper.review.roster_round`).

A recorded comment with an ``agent`` (a roster reviewer's finding) gets that reviewer's
hidden signature ``<!-- kdev-agent: NAME -->`` after the gate's preparation, as
:func:`wrapper.post.post_gated` appends it to a finding comment.

The caller crosses the part off after that. A kill anywhere, between GitHub making the
review and step 5 included, leaves the part owed and ``attempted`` set, so the rerun
adopts the review it finds: a round is never posted twice, and never lost.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from engine.github import GitHubError
from wrapper.errors import KdevError, LedgerError
from wrapper.gh_reviews import LineComment, create_review, list_review_comments, list_reviews
from wrapper.ledger.ledger import Ledger, check_sha
from wrapper.post import PostingContext
from wrapper.review.findings import signature
from wrapper.review.review_body import Carried, carried_line
from wrapper.review.round_marker import marker
from wrapper.review.summons import note_round_link

log = logging.getLogger("kdev.review")

PURPOSE = "review-round"
COMMENT_PURPOSE = "review-round-comment"
REVIEW_POST_FAILED = "review_post_failed"
ROUND_UNREADABLE = "round_record_unreadable"
REFUSED_LINES = "GitHub refused the line comments"
FALLBACK_NOTE = (
    "_GitHub refused this review's line comments (HTTP 422), so every finding is listed "
    "in this summary instead._"
)


@dataclass(frozen=True)
class RoundPayload:
    """What one round posts, raw (before the gate): the summary ``body``, the line
    ``comments`` (create-review form), and ``fallback``, the summary listing every
    finding (posted alone when GitHub refuses the line comments). ``attempted``: a POST
    may have been sent (a rerun lists the PR's reviews first). ``findings``: a roster
    round's findings (:mod:`wrapper.review.roster_round`), each naming the index of its
    line comment, if any, in ``comments``; ``roster``: a roster round (its findings
    record is written when it is posted, none found included)."""

    patch_id: str
    head_sha: str
    body: str
    comments: tuple[dict[str, Any], ...]
    fallback: str
    attempted: bool = False
    findings: tuple[dict[str, Any], ...] = ()
    roster: bool = False


@dataclass(frozen=True)
class PostedRound:
    """What :func:`post_round` did: ``detail`` in words, the review's id, and for each
    recorded comment (in order) the ``(id, node_id)`` GitHub gave it, or None when it
    is not on the PR as a line comment (the 422 fallback)."""

    payload: RoundPayload
    review_id: int
    detail: str
    comment_ids: tuple[tuple[int, str | None] | None, ...]


def round_path(ledger: Ledger, repo: str, pr: int, patch_id: str) -> Path:
    return ledger.pr_dir(repo, pr) / f"round-{check_sha(patch_id, 'patch_id')}.json"


def record_round(ledger: Ledger, repo: str, pr: int, payload: RoundPayload) -> None:
    """Writes ``payload`` (atomically; before the verdict, with the ``review`` part owed)."""
    path = round_path(ledger, repo, pr, payload.patch_id)
    ledger.ensure_dir(path.parent)
    data = {
        "patch_id": payload.patch_id,
        "head_sha": payload.head_sha,
        "body": payload.body,
        "comments": list(payload.comments),
        "fallback": payload.fallback,
        "attempted": payload.attempted,
        "findings": list(payload.findings),
        "roster": payload.roster,
    }
    ledger.atomic_write(path, json.dumps(data))


def forget_round(ledger: Ledger, repo: str, pr: int, patch_id: str) -> None:
    round_path(ledger, repo, pr, patch_id).unlink(missing_ok=True)


def load_round(ledger: Ledger, repo: str, pr: int, patch_id: str) -> RoundPayload:
    """The recorded round; LedgerError ``round_record_unreadable`` when it is missing or
    not of its form (the part stays owed: nothing is guessed)."""
    path = round_path(ledger, repo, pr, patch_id)
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
        payload = RoundPayload(
            patch_id=_string(data, "patch_id"),
            head_sha=_string(data, "head_sha"),
            body=_string(data, "body"),
            comments=tuple(_comment(item) for item in data["comments"]),
            fallback=_string(data, "fallback"),
            attempted=data["attempted"] is True,
            findings=tuple(_finding(item) for item in data.get("findings", [])),
            roster=data.get("roster") is True,
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        detail = exc.strerror if isinstance(exc, OSError) else "not a round record"
        raise LedgerError(f"{path}: {detail}", ROUND_UNREADABLE) from None
    if payload.patch_id != patch_id:
        raise LedgerError(f"{path}: records patch {payload.patch_id}", ROUND_UNREADABLE)
    return payload


def _string(data: Any, key: str) -> str:
    value = data[key]
    if not isinstance(value, str):
        raise TypeError(key)
    return value


def _comment(item: Any) -> dict[str, Any]:
    if not isinstance(item, dict) or not isinstance(item.get("body"), str):
        raise TypeError("comment")
    return item


def _finding(item: Any) -> dict[str, Any]:
    if not isinstance(item, dict) or not isinstance(item.get("agent"), str):
        raise TypeError("finding")
    return item


def post_round(posting: PostingContext, patch_id: str, at_head: str | None = None) -> PostedRound:
    """Posts the recorded round of ``patch_id`` once (see the module doc); returns what
    it did. ``at_head``: the head the posting run decides; when it is not the reviewed
    one (it carries the reviewed diff, D90) and GitHub refuses the reviewed head (a
    rebase left it out of the pull), the round goes there, every finding in the summary
    with the diff it carries. Raises the gate's error (nothing posted), LedgerError
    ``round_record_unreadable``, or KdevError ``review_post_failed`` (GitHub refused or
    failed; the part stays owed)."""
    ledger, repo, pr = posting.ledger, posting.repo, posting.pr
    payload = load_round(ledger, repo, pr, patch_id)
    carrier = at_head if at_head is not None and at_head != payload.head_sha else None
    sent = _prepared(posting, payload, carrier)
    review = _adopted(posting, payload, carrier) if payload.attempted else None
    if review is not None:
        how = "adopted"
    else:
        record_round(ledger, repo, pr, replace(payload, attempted=True))
        review, how = _create(posting, payload.head_sha, sent, carrier)
    review_id = int(review["id"])
    ledger.record_posted_comment(repo, pr, review_id, PURPOSE)
    note_round_link(ledger, repo, pr, patch_id, review.get("html_url"))  # D99: the reply's link
    posted = _read(lambda: list_review_comments(posting.github, repo, pr, review_id))
    for comment in posted:
        if isinstance(comment.get("id"), int) and not isinstance(comment["id"], bool):
            ledger.record_posted_comment(repo, pr, comment["id"], COMMENT_PURPOSE)
    log.info("review %s %s on %s #%s (%d line comments)", review_id, how, repo, pr, len(posted))
    detail = f"review {review_id} {how} ({len(posted)} line comments)"
    return PostedRound(payload, review_id, detail, _matched(sent.comments, posted))


def _matched(
    sent: list[LineComment], posted: list[dict[str, Any]]
) -> tuple[tuple[int, str | None] | None, ...]:
    """Each sent comment's ``(id, node_id)`` among the ``posted`` ones read back (None:
    not there, as after the 422 fallback): the first not yet taken at the same path and
    line with the same body, else (a body GitHub normalised) at the same path and line."""
    free = [c for c in posted if isinstance(c.get("id"), int) and not isinstance(c["id"], bool)]
    found: list[dict[str, Any] | None] = [None] * len(sent)
    for exact in (True, False):
        for index, comment in enumerate(sent):
            if found[index] is not None:
                continue
            match = next((c for c in free if _same(c, comment, exact)), None)
            if match is not None:
                free.remove(match)
                found[index] = match
    return tuple(None if m is None else (int(m["id"]), _node(m)) for m in found)


def _same(posted: dict[str, Any], sent: LineComment, exact: bool) -> bool:
    if posted.get("path") != sent.path or posted.get("line") != sent.line:
        return False
    return not exact or str(posted.get("body", "")).rstrip() == sent.body.rstrip()


def _node(posted: dict[str, Any]) -> str | None:
    node = posted.get("node_id")
    return node if isinstance(node, str) else None


@dataclass(frozen=True)
class _Prepared:
    """Every body of a round through the gate, the marker appended: the summary, the
    line comments, the fallback, and (``carried``) the fallback for a carrying head."""

    body: str
    comments: list[LineComment]
    fallback: str
    carried: str | None


def _prepared(posting: PostingContext, payload: RoundPayload, carrier: str | None) -> _Prepared:
    """Every body of the round through the gate, before anything is sent."""
    tag = marker(payload.patch_id)

    def gated(raw: str) -> str:
        return posting.prepare(raw, PURPOSE)

    carried = None
    if carrier is not None:
        note = carried_line(Carried(payload.patch_id, payload.head_sha))
        carried = f"{gated(f'{note}{chr(10) * 2}{payload.fallback}')}\n\n{tag}"
    comments = [
        LineComment(
            path=str(c["path"]),
            body=_signed(gated(c["body"]), c.get("agent")),
            line=int(c["line"]),
            side=str(c.get("side", "RIGHT")),
            start_line=int(c["start_line"]) if c.get("start_line") is not None else None,
            start_side=str(c["start_side"]) if c.get("start_side") is not None else None,
        )
        for c in payload.comments
    ]
    body = f"{gated(payload.body)}\n\n{tag}"
    return _Prepared(body, comments, f"{gated(payload.fallback)}\n\n{tag}", carried)


def _signed(body: str, agent: Any) -> str:
    """A roster finding's prepared ``body`` with its reviewer's signature last."""
    return f"{body}\n\n{signature(agent)}" if isinstance(agent, str) else body


def _adopted(
    posting: PostingContext, payload: RoundPayload, carrier: str | None
) -> dict[str, Any] | None:
    """The review an earlier run posted for this round, if GitHub has it: at the
    reviewed head (or the carrying head this run decides), its summary ending with the
    round's marker."""
    tag = marker(payload.patch_id)
    heads = {payload.head_sha, carrier} - {None}
    reviews = _read(lambda: list_reviews(posting.github, posting.repo, posting.pr))
    for review in reviews:
        body = review.get("body")
        if (
            isinstance(review.get("id"), int)
            and review.get("commit_id") in heads
            and isinstance(body, str)
            and body.rstrip().endswith(tag)
        ):
            return review
    return None


def _create(
    posting: PostingContext, head_sha: str, sent: _Prepared, carrier: str | None
) -> tuple[dict[str, Any], str]:
    """The POST: the round at the reviewed head; on a 422, the fallback there; on a 422
    again (the head is no longer the pull's), the carried fallback at ``carrier``."""
    repo, pr = posting.repo, posting.pr

    def create(body: str, at: str, comments: Sequence[LineComment] = ()) -> dict[str, Any]:
        return create_review(
            posting.github, repo, pr, event="COMMENT", body=body, commit_id=at,
            comments=list(comments),
        )  # fmt: skip

    try:
        return create(sent.body, head_sha, sent.comments), "posted"
    except GitHubError as exc:
        refused = exc
        if exc.status != 422:
            raise _failed(repo, pr, exc) from None
    if sent.comments:
        log.warning("GitHub refused the line comments on %s #%s: %s", repo, pr, refused.message)
        try:
            made = create(sent.fallback, head_sha)
            return made, f"posted with every finding in the summary ({REFUSED_LINES})"
        except GitHubError as exc:
            refused = exc
            if exc.status != 422:
                raise _failed(repo, pr, exc) from None
    if sent.carried is None or carrier is None:
        raise _failed(repo, pr, refused)
    log.warning("GitHub refused the reviewed head on %s #%s: %s", repo, pr, refused.message)
    try:
        made = create(sent.carried, carrier)
    except GitHubError as exc:
        raise _failed(repo, pr, exc) from None
    return made, f"posted at {carrier[:12]}, the head carrying its diff (the reviewed one refused)"


def _read(call: Callable[[], list[dict[str, Any]]]) -> list[dict[str, Any]]:
    try:
        result = call()
    except GitHubError as exc:
        raise KdevError(
            f"cannot read the review round back: {exc.message} [{exc.reason}]", REVIEW_POST_FAILED
        ) from None
    return result


def _failed(repo: str, pr: int, exc: GitHubError) -> KdevError:
    return KdevError(
        f"cannot post the review on {repo} #{pr}: {exc.message} [{exc.reason}]",
        REVIEW_POST_FAILED,
    )
