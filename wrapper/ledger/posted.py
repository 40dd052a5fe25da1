"""``posted-comments.jsonl``: the id of every comment kdev posted, so a comment of kdev's
fired back at it is ``skipped_self_comment`` (recorded by :mod:`wrapper.post`). The
records of a pull request kdev has not posted on for 365 days are pruned
(:mod:`wrapper.ledger.logprune`)."""

from __future__ import annotations

import fcntl
import json
from pathlib import Path
from typing import Any

from wrapper.errors import LedgerError
from wrapper.ledger import jsonl, logprune
from wrapper.ledger.files import LedgerFiles, log
from wrapper.ledger.logprune import Compacted
from wrapper.ledger.records import POSTED_COMMENTS_FILE, check_pr, format_timestamp


class PostedComments(LedgerFiles):
    """Record and read the comments kdev posted."""

    def record_posted_comment(self, repo: str, pr: int, comment_id: int, purpose: str) -> None:
        """Appends ``{id, pr, purpose, posted_at}`` to posted-comments.jsonl, fsync'd, under
        its lock: every comment kdev posts is recorded, so ``--comment-id`` of one of them
        is ``skipped_self_comment`` (the self-loop closure)."""
        check_pr(pr)
        if isinstance(comment_id, bool) or not isinstance(comment_id, int) or comment_id < 1:
            raise LedgerError(f"comment id {comment_id!r} is not positive", "invalid_record")
        line = json.dumps(
            {
                "id": comment_id,
                "pr": pr,
                "purpose": purpose,
                "posted_at": format_timestamp(self.clock()),
            }
        )
        directory = self.repo_dir(repo)
        self.ensure_dir(directory)
        path = directory / POSTED_COMMENTS_FILE
        with self.flock(directory / ".posted.lock", fcntl.LOCK_EX):
            _before, after = jsonl.append_line(path, line)
            logprune.after_append(
                path, after.st_size, self.clock(), lambda: self._prune_posted(path)
            )

    def prune_posted(self, repo: str) -> Compacted:
        """Drops the records of pull requests kdev has not posted on for
        ``logprune.POSTED_KEEP`` (temp file + rename, under the posted-comments lock)."""
        directory = self.repo_dir(repo)
        self.ensure_dir(directory)
        with self.flock(directory / ".posted.lock", fcntl.LOCK_EX):
            return self._prune_posted(directory / POSTED_COMMENTS_FILE)

    def _prune_posted(self, path: Path) -> Compacted:
        now = self.clock()
        done = logprune.compact(
            path, lambda lines: logprune.kept_posted(lines, now), self.atomic_write
        )
        if done.kept or done.dropped:
            logprune.mark(path, now, self.atomic_write)
        return done

    def posted_comment_ids(self, repo: str) -> frozenset[int]:
        """The ids of every comment kdev recorded posting on ``repo`` (unparsable lines,
        e.g. a writer killed mid-append, are skipped with a warning)."""
        path = self.repo_dir(repo) / POSTED_COMMENTS_FILE
        lines, _stat = jsonl.read_lines(path)
        ids: set[int] = set()
        for number, text in lines:
            try:
                data: Any = json.loads(text)
                value = data.get("id") if isinstance(data, dict) else None
                if type(value) is not int or value < 1:
                    raise ValueError("id is not a positive integer")
            except ValueError as exc:
                log.warning("ignoring line %d of %s: %s", number, path, exc)
                continue
            ids.add(value)
        return frozenset(ids)
