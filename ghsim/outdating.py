"""What a push does to the line comments of a pull request (issue 28).

GitHub's facts (docs: ``pulls/create-review`` and GraphQL ``PullRequestReviewThread``):

- A review comment's ``commit_id`` note: a stale SHA "may render your review comment
  outdated if a subsequent commit modifies the line" (GitHub's OpenAPI description).
- GraphQL ``PullRequestReviewThread.isOutdated: Boolean!``, "outdated by newer changes";
  the thread and its comments have ``line`` (nullable) and ``originalLine``.
- Observed (vitali87/croft#454, prontolabs/pronto#93): once a comment is outdated its
  REST ``line`` and ``position`` turn null while ``original_line`` is kept. GitHub's own
  OpenAPI description types ``line`` and ``position`` of a pull request review comment
  as integers (not nullable), so ghsim leaves the two keys out of an outdated comment's
  REST answer: the answer stays valid against the description, and a reader's
  ``.get("line")`` sees the same absence as GitHub's null.

The exact algorithm GitHub uses is not documented. ghsim's, on every synchronize: the
commented lines (``start_line``..``line`` on the RIGHT side) are mapped from the commit
the comment was last placed on to the new head by a line diff of the file; a line that
was changed or deleted, a file gone, or a line the new diff no longer shows makes the
comment outdated (for good: a later push never brings it back); a line that moved (lines
added or removed above it) moves the comment's ``line``, ``start_line`` and ``position``.
A LEFT-side comment (the base's lines) is left alone. Replies follow their thread's root.
"""

from __future__ import annotations

import difflib

from ghsim.anchors import FileDiff
from ghsim.model import Comment, Pull
from ghsim.reviews import ReviewSim


def _line_map(old: list[bytes], new: list[bytes]) -> dict[int, int]:
    """Old line number -> new line number, for the lines a line diff keeps (1-based)."""
    mapped: dict[int, int] = {}
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, _ in matcher.get_opcodes():
        if tag == "equal":
            for offset in range(i2 - i1):
                mapped[i1 + offset + 1] = j1 + offset + 1
    return mapped


class OutdatingSim(ReviewSim):
    """Line comments moved or outdated when the head moves (see the module doc)."""

    def _after_synchronize(self, pr: Pull) -> None:
        roots = [
            c
            for c in self._comments
            if c.repo is pr.repo
            and c.pull_number == pr.number
            and c.kind == "review"
            and c.in_reply_to_id is None
            and not c.outdated
            and c.side == "RIGHT"
            and c.line is not None
        ]
        base = self._pull_merge_base(pr) if roots else ""
        for root in roots:
            self._follow(pr, root, base)

    def _follow(self, pr: Pull, root: Comment, base: str) -> None:
        assert root.path is not None and root.line is not None
        placed_on = root.placed_on or root.commit_id or pr.head_sha
        old = self.git.file_at(pr.repo.path, placed_on, root.path)
        new = self.git.file_at(pr.repo.path, pr.head_sha, root.path)
        spot = None
        if old is not None and new is not None:
            mapped = _line_map(old.splitlines(), new.splitlines())
            first = root.start_line if root.start_line is not None else root.line
            span = [mapped.get(n) for n in range(first, root.line + 1)]
            contiguous = all(s is not None for s in span) and span == list(
                range(span[0] or 0, (span[0] or 0) + len(span))
            )
            if contiguous and span[-1] is not None:
                diff = FileDiff.parse(
                    self.git.file_diff(pr.repo.path, base, pr.head_sha, root.path)
                )
                where = diff.spots.get(("RIGHT", span[-1])) if diff is not None else None
                if where is not None:
                    spot = (span[0], span[-1], where.position)
        members = [root] + [c for c in self._comments if c.in_reply_to_id == root.id]
        for comment in members:
            if comment.original_line is None:
                comment.original_line = comment.line
                comment.original_start_line = comment.start_line
                comment.original_position = comment.position
            if spot is None:
                comment.outdated = True
                comment.line = comment.start_line = comment.position = None
                continue
            start, line, position = spot
            comment.line, comment.position = line, position
            comment.start_line = start if comment.start_line is not None else None
            comment.placed_on = pr.head_sha
