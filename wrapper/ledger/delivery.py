"""Notification delivery recorded in the ledger (issue 10 item 9b).

Before a verdict file is written, ``pr-N/undelivered-<patch_id>.json`` records what is
owed for it: the verdict notice, and the PR comment when a ``github-comment`` target is
configured. Each part is crossed off once it was handed over (the notice: :func:`send`
returned; the comment: GitHub answered with its id), and the file is deleted when
nothing is owed. A kdev killed between the verdict and the notice leaves the file, so
the next run that finds the verdict (``carried_forward``) delivers what is still owed,
once: delivery runs under ``pr-N/.delivery.lock``, and whoever holds it re-reads the
file first. The remaining window is a kill between a hand-over and its crossing-off,
which can repeat that one part; it never loses one.
"""

from __future__ import annotations

import fcntl
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wrapper.errors import KdevError, LedgerError
from wrapper.leakscan import known_secrets
from wrapper.ledger.ledger import Ledger, VerdictRecord, check_sha
from wrapper.notify import verdict_notification
from wrapper.post import post_comment
from wrapper.review.context import notify
from wrapper.review.exclusions import header_exclusions
from wrapper.review.summons import answer, note_round_link

if TYPE_CHECKING:
    from wrapper.review.context import ReviewContext, ReviewRequest
    from wrapper.review.round_post import RoundPayload

log = logging.getLogger("kdev.review")


@dataclass(frozen=True)
class Owed:
    """What is still owed for the verdict of ``patch_id``."""

    patch_id: str
    head_sha: str
    notice: bool
    comment: bool
    review: bool = False  # the round as one review (wrapper.review.round_post, D86)


def _path(ledger: Ledger, repo: str, pr: int, patch_id: str) -> Path:
    return ledger.pr_dir(repo, pr) / f"undelivered-{check_sha(patch_id, 'patch_id')}.json"


def _write(ledger: Ledger, path: Path, owed: Owed) -> None:
    if not (owed.notice or owed.comment or owed.review):
        path.unlink(missing_ok=True)
        return
    text = json.dumps(
        {
            "patch_id": owed.patch_id,
            "head_sha": owed.head_sha,
            "notice": owed.notice,
            "comment": owed.comment,
            "review": owed.review,
        }
    )
    ledger.atomic_write(path, text)


def _read(path: Path) -> Owed | None:
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise LedgerError(f"{path} is unreadable: {exc}", "ledger_read_failed") from None
    if not isinstance(data, dict):
        raise LedgerError(f"{path} is not an object", "ledger_read_failed")
    return Owed(
        patch_id=str(data.get("patch_id")),
        head_sha=str(data.get("head_sha")),
        notice=data.get("notice") is True,
        comment=data.get("comment") is True,
        review=data.get("review") is True,
    )


def record_owed(ledger: Ledger, repo: str, pr: int, owed: Owed) -> None:
    """Records ``owed`` (before the verdict file is written)."""
    path = _path(ledger, repo, pr, owed.patch_id)
    ledger.ensure_dir(path.parent)
    _write(ledger, path, owed)


def forget_owed(ledger: Ledger, repo: str, pr: int, patch_id: str) -> None:
    """Drops the record (the verdict was not written after all)."""
    _path(ledger, repo, pr, patch_id).unlink(missing_ok=True)


def deliver_owed(
    ledger: Ledger,
    repo: str,
    pr: int,
    patch_id: str,
    send_notice: Callable[[], None],
    post_comment: Callable[[], bool],
    post_review: Callable[[], bool] = lambda: False,
) -> bool:
    """Delivers whatever is still owed for ``patch_id`` (the notice, then the comment,
    then the review), crossing each part off as it goes; True when anything was owed.
    ``post_comment`` and ``post_review`` return whether they posted (a failed post stays
    owed for the next run)."""
    path = _path(ledger, repo, pr, patch_id)
    if not path.parent.is_dir():
        return False
    with ledger.flock(path.parent / ".delivery.lock", fcntl.LOCK_EX):
        owed = _read(path)
        if owed is None:
            return False
        if owed.notice:
            send_notice()
            owed = replace(owed, notice=False)
            _write(ledger, path, owed)
        if owed.comment and post_comment():
            owed = replace(owed, comment=False)
            _write(ledger, path, owed)
        if owed.review and post_review():
            owed = replace(owed, review=False)
            _write(ledger, path, owed)
        return True


# --- step 9 of review-pr -----------------------------------------------------------


def review_comment_text(record: VerdictRecord) -> str:
    """One review round as a comment: a header line, then the reviewer's output."""
    header = f"**kdev review** of {record.head_sha[:12]} ({record.model}): **{record.verdict}**"
    return f"{header}\n\n{record.body.strip()}\n"


def write_verdict_owing_delivery(
    ctx: ReviewContext,
    req: ReviewRequest,
    record: VerdictRecord,
    round_payload: RoundPayload | None = None,
) -> Path:
    """Step 8: records the notice (and PR comment, or with ``round_payload`` the round as
    one review instead, D86) as owed, then writes the verdict, so a kdev killed before
    step 9 delivers them on its next run (:mod:`wrapper.ledger.delivery`)."""
    as_review = round_payload is not None
    comment = ctx.config.posts_review_comments and not as_review
    owed = Owed(record.patch_id, req.head_sha, True, comment, review=as_review)
    if round_payload is not None:
        from wrapper.review.round_post import record_round

        record_round(ctx.ledger, req.repo, req.pr, round_payload)
    record_owed(ctx.ledger, req.repo, req.pr, owed)
    secrets = known_secrets(ctx.config, ctx.environ)
    try:
        return ctx.ledger.write_verdict(req.repo, req.pr, record, secrets=secrets)
    except BaseException:
        forget_owed(ctx.ledger, req.repo, req.pr, record.patch_id)
        if round_payload is not None:
            _forget_round(ctx, req, record.patch_id)
        raise


def deliver(ctx: ReviewContext, req: ReviewRequest, record: VerdictRecord) -> str:
    """Step 9: whatever is still owed for ``record`` (the verdict notice, the PR comment),
    exactly once, the notice to ``req``'s recipient; returns the comment's detail."""
    repo, pr = req.repo, req.pr
    path = ctx.ledger.verdict_path(repo, pr, record.patch_id)
    details: list[str] = []

    def notice() -> None:
        excluded = header_exclusions(record.body)  # D87: the lines its header lists
        note = verdict_notification(
            repo, pr, record.verdict, record.pr_url, record.head_sha, str(path), excluded
        )
        notify(ctx, req, note)

    def comment() -> bool:
        posted, detail = post_review_comment(ctx, repo, pr, record)
        details.append(detail)
        return posted

    failed: list[KdevError] = []

    def review() -> bool:
        try:
            details.append(_post_round(ctx, req, record.patch_id))
        except KdevError as exc:
            log.warning("review not posted: %s [%s]", exc.message, exc.reason)
            failed.append(exc)
            return False
        return True

    deliver_owed(ctx.ledger, repo, pr, record.patch_id, notice, comment, review)
    if failed:  # the verdict stands; the review stays owed for the next run
        raise failed[0]
    if details and not _path(ctx.ledger, repo, pr, record.patch_id).exists():
        _forget_round(ctx, req, record.patch_id)
    details.extend(filter(None, [_answer(ctx, req, record.patch_id)]))
    return "; ".join(details)


def _answer(ctx: ReviewContext, req: ReviewRequest, patch_id: str) -> str | None:
    """The reply to the run's summons that links to the round (issue 29, D99); a failed
    reply is logged and stays owed (the next run with that comment posts it)."""
    try:
        return answer(ctx, req, patch_id)
    except KdevError as exc:
        log.warning("summons reply not posted: %s [%s]", exc.message, exc.reason)
        return f"summons reply not posted [{exc.reason}]"


def _post_round(ctx: ReviewContext, req: ReviewRequest, patch_id: str) -> str:
    """The owed round posted as one review; a roster round's findings record written
    before the part is crossed off (a kill before that adopts and writes it again)."""
    from wrapper.post import PostingContext
    from wrapper.review.round_post import post_round

    posting = PostingContext(ctx.github, ctx.ledger, ctx.config, ctx.environ, req.repo, req.pr)
    posted = post_round(posting, patch_id, at_head=req.head_sha)
    if posted.payload.roster:
        from wrapper.review.roster_round import record_posted

        record_posted(posting, posted, ctx.clock())
    return posted.detail


def _forget_round(ctx: ReviewContext, req: ReviewRequest, patch_id: str) -> None:
    from wrapper.review.round_post import forget_round

    forget_round(ctx.ledger, req.repo, req.pr, patch_id)


def post_review_comment(
    ctx: ReviewContext, repo: str, pr: int, record: VerdictRecord
) -> tuple[bool, str]:
    """Step 9, ``github-comment`` target: the round as one PR comment (neutralised,
    escaped, secret canary), its id recorded. The verdict is already written, so a
    failure is logged and reported in the detail (and stays owed), never raised."""
    try:
        posted = post_comment(ctx.posting(repo, pr), review_comment_text(record), "review")
    except KdevError as exc:
        log.warning("review comment not posted: %s [%s]", exc.message, exc.reason)
        return False, f"comment not posted [{exc.reason}]"
    note_round_link(ctx.ledger, repo, pr, record.patch_id, posted.html_url)  # D99
    return True, f"comment {posted.id} posted"
