"""Where a round's findings go (:class:`PostTarget`), shared by the posting of findings
(:mod:`wrapper.review.findings_post`) and their withdrawal
(:mod:`wrapper.review.findings_withdraw`), so neither imports the other for it."""

from __future__ import annotations

from dataclasses import dataclass

from wrapper.post import PostingContext


@dataclass(frozen=True)
class PostTarget(PostingContext):
    """Where findings go: the posting context of the round's pull request, and the head
    the round reviewed (line comments anchor on it)."""

    head_sha: str
