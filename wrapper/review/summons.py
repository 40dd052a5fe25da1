"""Summons that say they were heard (issue 29; docs/triggers.md "Wrapper side"; D99).

When ``kdev review-pr --comment-id ID`` picks up a summons, :func:`acknowledge` adds an
👀 (``eyes``) reaction to that comment, and when the round is posted, :func:`answer`
posts one short reply on the PR that links to it. Both through the gate
(:class:`wrapper.post.PostingContext`), both recorded in
``pr-N/summons-<ID>.json``, so a rerun or a restart mid-round never reacts or replies
twice, and never loses either:

1. A summons is acknowledged only when the comment, re-read from the API, is on this PR,
   its author's numeric id is in kdev's own ``mention_allowlist`` and its body mentions
   ``mention_handle`` (:func:`wrapper.review.admission.read_summons`): kdev does not take
   its argv's word that a comment is a summons.
2. The record is written (its kind and page) before the reaction is sent, and the
   reaction's id after. A kill between GitHub making the reaction and the id being
   recorded is harmless: GitHub keeps one reaction per user and content and answers the
   same request again with the existing one (200 "Reaction exists").
3. The round's page (the review's, or the round comment's) is recorded in
   ``pr-N/posted-rounds.json`` by whoever posted it, before its delivery part is crossed
   off (:func:`note_round_link`), so a run killed after the round and before the reply
   finds the page on its rerun.
4. The reply is recorded ``reply_attempted`` before its POST, and it ends with the hidden
   mark ``<!-- kdev-summons: <ID> -->``. A rerun that finds ``reply_attempted`` lists
   the PR's comments and adopts the one with that mark instead of posting again (as
   D86 does for a round). Its id is recorded (the self-loop's posted ids included).

A round that is not posted (no ``github-comment`` target, ``review_post`` off) has no
page: the summons gets its reaction and no reply.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from engine.github import GitHubError
from wrapper.errors import KdevError, LedgerError
from wrapper.gh import post_issue_comment
from wrapper.gh_reviews import list_issue_comments
from wrapper.ledger.ledger import Ledger, check_sha
from wrapper.post import COMMENT_POST_FAILED, PostingContext
from wrapper.review.admission import read_summons
from wrapper.review.context import ReviewContext, ReviewRequest

log = logging.getLogger("kdev.review")

EYES = "eyes"
REPLY_PURPOSE = "summons-reply"
SUMMONS_UNREADABLE = "summons_record_unreadable"


@dataclass(frozen=True)
class SummonsRecord:
    """What kdev did about one summons: the comment's ``kind`` (``issue`` or ``diff``)
    and ``page``; the reaction's id once made; the reply, attempted and then its id."""

    comment_id: int
    kind: str
    page: str
    reaction_id: int | None = None
    reply_attempted: bool = False
    reply_id: int | None = None


def reply_marker(comment_id: int) -> str:
    """The hidden last line of the reply to summons ``comment_id``."""
    return f"<!-- kdev-summons: {int(comment_id)} -->"


def summons_path(ledger: Ledger, repo: str, pr: int, comment_id: int) -> Path:
    return ledger.pr_dir(repo, pr) / f"summons-{int(comment_id)}.json"


def load_summons(ledger: Ledger, repo: str, pr: int, comment_id: int) -> SummonsRecord | None:
    """The record of summons ``comment_id``, None when there is none; LedgerError
    ``summons_record_unreadable`` when it is not of its form (nothing is guessed)."""
    path = summons_path(ledger, repo, pr, comment_id)
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
        record = SummonsRecord(**data)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError) as exc:
        raise LedgerError(f"{path}: not a summons record ({exc})", SUMMONS_UNREADABLE) from None
    if (
        record.comment_id != comment_id
        or record.kind not in ("issue", "diff")
        or not isinstance(record.page, str)
        or not isinstance(record.reply_attempted, bool)
        or not all(_optional_id(value) for value in (record.reaction_id, record.reply_id))
    ):
        raise LedgerError(f"{path}: not a summons record", SUMMONS_UNREADABLE)
    return record


def _optional_id(value: object) -> bool:
    return value is None or (isinstance(value, int) and not isinstance(value, bool) and value > 0)


def _save(ledger: Ledger, repo: str, pr: int, record: SummonsRecord) -> None:
    path = summons_path(ledger, repo, pr, record.comment_id)
    ledger.ensure_dir(path.parent)
    ledger.atomic_write(path, json.dumps(asdict(record)))


# -- the round's page ------------------------------------------------------------------


def _links_path(ledger: Ledger, repo: str, pr: int) -> Path:
    return ledger.pr_dir(repo, pr) / "posted-rounds.json"


def _links(ledger: Ledger, repo: str, pr: int) -> dict[str, str]:
    path = _links_path(ledger, repo, pr)
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise LedgerError(f"{path}: unreadable ({exc})", SUMMONS_UNREADABLE) from None
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise LedgerError(f"{path}: not a map of round pages", SUMMONS_UNREADABLE)
    return data


def note_round_link(ledger: Ledger, repo: str, pr: int, patch_id: str, page: object) -> None:
    """Records ``page`` as where the round of ``patch_id`` was posted (before its
    delivery part is crossed off); a page that is no http(s) URL is not recorded."""
    if not isinstance(page, str) or not page.startswith(("https://", "http://")):
        return
    links = _links(ledger, repo, pr)
    links[check_sha(patch_id, "patch_id")] = page
    path = _links_path(ledger, repo, pr)
    ledger.ensure_dir(path.parent)
    ledger.atomic_write(path, json.dumps(links, sort_keys=True))


# -- the reaction ----------------------------------------------------------------------


def acknowledge(ctx: ReviewContext, req: ReviewRequest) -> str | None:
    """The 👀 on summons ``req.comment_id``, once (see the module doc); what it did, in
    words, or None when there is no summons to acknowledge. A failed reaction is
    logged and said, never raised: the review matters more, and a rerun reacts."""
    comment_id = req.comment_id
    handle = ctx.config.mention_handle
    if comment_id is None or handle is None:
        return None
    record = load_summons(ctx.ledger, req.repo, req.pr, comment_id)
    if record is None:
        found = read_summons(ctx, req.repo, req.pr, comment_id)
        if isinstance(found, str):
            log.info("summons not acknowledged: %s", found)
            return None
        kind, comment = found
        # The mention parser (cmark-gfm) only when there is a summons to read (the
        # carry-forward path stays light: tests/wrapper/test_fast_path.py).
        from engine.triggers import find_mention

        body = comment.get("body")
        if find_mention(body if isinstance(body, str) else "", handle) is None:
            log.info("summons not acknowledged: comment %s does not mention it", comment_id)
            return None
        page = comment.get("html_url")
        record = SummonsRecord(comment_id, kind, page if isinstance(page, str) else "")
        _save(ctx.ledger, req.repo, req.pr, record)
    if record.reaction_id is not None:
        return None
    try:
        made = ctx.posting(req.repo, req.pr).react(record.kind, comment_id, EYES)
    except KdevError as exc:
        log.warning("summons %s not acknowledged: %s [%s]", comment_id, exc.message, exc.reason)
        return f"summons not acknowledged [{exc.reason}]"
    _save(ctx.ledger, req.repo, req.pr, replace(record, reaction_id=int(made["id"])))
    return f"summons {comment_id} acknowledged"


# -- the reply -------------------------------------------------------------------------


def reply_text(record: SummonsRecord, page: str) -> str:
    """The short reply: which summons, and where its round is."""
    asked = f"[this summons]({record.page})" if record.page else "this summons"
    return f"Reviewed, as {asked} asked: {page}"


def answer(ctx: ReviewContext, req: ReviewRequest, patch_id: str) -> str | None:
    """The reply to summons ``req.comment_id`` linking to the round of ``patch_id``, once
    (see the module doc); what it did, or None when there is nothing to answer. Raises
    the gate's errors and KdevError ``comment_post_failed`` (the reply stays owed)."""
    comment_id = req.comment_id
    if comment_id is None:
        return None
    record = load_summons(ctx.ledger, req.repo, req.pr, comment_id)
    if record is None or record.reply_id is not None:
        return None
    page = _links(ctx.ledger, req.repo, req.pr).get(patch_id)
    if page is None:
        return None
    posting = ctx.posting(req.repo, req.pr)
    tag = reply_marker(comment_id)
    reply_id = _adopted(posting, tag) if record.reply_attempted else None
    how = "adopted"
    if reply_id is None:
        _save(ctx.ledger, req.repo, req.pr, replace(record, reply_attempted=True))
        reply_id, how = _post_reply(posting, reply_text(record, page), tag), "posted"
    else:
        ctx.ledger.record_posted_comment(req.repo, req.pr, reply_id, REPLY_PURPOSE)
    _save(ctx.ledger, req.repo, req.pr, replace(record, reply_attempted=True, reply_id=reply_id))
    return f"reply {reply_id} to summons {comment_id} {how}"


def _post_reply(posting: PostingContext, raw: str, tag: str) -> int:
    repo, pr = posting.repo, posting.pr

    def send(body: str) -> dict[str, Any]:
        try:
            return post_issue_comment(posting.github, repo, pr, body)
        except GitHubError as exc:
            raise KdevError(
                f"cannot post the summons reply on {repo} #{pr}: {exc.message} [{exc.reason}]",
                COMMENT_POST_FAILED,
            ) from None

    created = posting.gated(raw, REPLY_PURPOSE, send, signature=tag)
    return int(created["id"])


def _adopted(posting: PostingContext, tag: str) -> int | None:
    """The id of the reply an earlier run posted, if the PR has it (its body ends with
    ``tag``)."""
    try:
        comments = list_issue_comments(posting.github, posting.repo, posting.pr)
    except GitHubError as exc:
        raise KdevError(
            f"cannot look for the summons reply on {posting.repo} #{posting.pr}: "
            f"{exc.message} [{exc.reason}]",
            COMMENT_POST_FAILED,
        ) from None
    for comment in comments:
        body, found = comment.get("body"), comment.get("id")
        if isinstance(body, str) and body.rstrip().endswith(tag) and _optional_id(found):
            if isinstance(found, int):
                return found
    return None
