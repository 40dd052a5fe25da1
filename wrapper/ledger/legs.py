"""The leg log: ``legs.jsonl``, one line per reviewer leg *started*, and its budget
window ``legs.window.json`` (:mod:`wrapper.ledger.legwindow`), both under ``.legs.lock``.
Legs older than 7 days are pruned (:mod:`wrapper.ledger.logprune`)."""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path

from wrapper.errors import LedgerError
from wrapper.ledger import jsonl, legwindow, logprune
from wrapper.ledger.codec import leg_from_json, leg_to_json
from wrapper.ledger.files import log
from wrapper.ledger.legwindow import LogStamp, Window
from wrapper.ledger.locks import LedgerLocks
from wrapper.ledger.logprune import Compacted
from wrapper.ledger.records import LEGS_FILE, LegRecord, check_pr, check_sha


class LegLog(LedgerLocks):
    """Record and read the legs of one ledger."""

    def record_leg_start(self, repo: str, pr: int, head_sha: str) -> None:
        """Appends ``{pr, head_sha, started_at: clock()}`` to legs.jsonl, fsync'd, under
        the leg-log lock."""
        check_pr(pr)
        check_sha(head_sha, "head_sha")
        line = json.dumps(leg_to_json(LegRecord(pr, head_sha, self.clock())))
        path = self.repo_dir(repo) / LEGS_FILE
        with self.legs_lock(repo):
            before, after = jsonl.append_line(path, line)
            self._window_after_append(repo, before, after, leg_from_json(line))
            logprune.after_append(path, after.st_size, self.clock(), lambda: self.prune_legs(repo))

    def prune_legs(self, repo: str) -> Compacted:
        """Drops the legs older than ``logprune.LEGS_KEEP`` from legs.jsonl (temp file +
        rename, under the leg-log lock) and rebuilds the budget window for the new log."""
        directory = self.repo_dir(repo)
        path = directory / LEGS_FILE
        now = self.clock()
        kept: list[LegRecord] = []

        def keep(lines: list[str]) -> list[str]:
            chosen, legs = logprune.kept_legs(lines, now)
            kept.extend(legs)
            return chosen

        with self.legs_lock(repo):
            done = logprune.compact(path, keep, self.atomic_write)
            if done.dropped:
                stamp = legwindow.stamp_of(path)
                if stamp is not None:
                    self._save_window(directory, legwindow.build(stamp, kept, now))
            if done.kept or done.dropped:
                logprune.mark(path, now, self.atomic_write)
        return done

    def _window_after_append(
        self, repo: str, before: os.stat_result, after: os.stat_result, leg: LegRecord
    ) -> None:
        """Brings legs.window.json up to the log just appended to (wrapper.ledger.legwindow),
        under the leg-log lock; rebuilt from the log when it did not match before."""
        directory = self.repo_dir(repo)
        now = self.clock()
        old = legwindow.load(directory, LogStamp.of(before))
        if old is not None:
            window = legwindow.extend(old, LogStamp.of(after), leg, now)
        else:
            legs, stamp = self._read_legs(directory / LEGS_FILE)
            window = legwindow.build(stamp or LogStamp.of(after), legs, now)
        self._save_window(directory, window)

    def _save_window(self, directory: Path, window: Window) -> None:
        try:
            legwindow.save(directory, window, self.atomic_write)
        except LedgerError as exc:  # the log is the truth; the window is rebuilt later
            log.warning("cannot write the leg window in %s: %s", directory, exc)

    def legs_since(self, repo: str, since: datetime) -> list[LegRecord]:
        """The legs of ``repo`` started at or after ``since``, in log order.

        Read from legs.window.json when it matches the log and covers ``since``
        (wrapper.ledger.legwindow); otherwise from the whole log, and the window is rebuilt.
        A line that does not parse (a writer killed mid-append) is skipped with a warning.
        """
        directory = self.repo_dir(repo)
        path = directory / LEGS_FILE
        if not directory.is_dir():
            return []
        with self.legs_lock(repo):
            stamp = legwindow.stamp_of(path)
            if stamp is None:
                return []
            window = legwindow.load(directory, stamp)
            found = window.since(since) if window is not None else None
            if found is not None:
                return found
            legs, stamp = self._read_legs(path)
            if stamp is not None:
                self._save_window(directory, legwindow.build(stamp, legs, self.clock()))
        return [leg for leg in legs if leg.started_at >= since]

    def _read_legs(self, path: Path) -> tuple[list[LegRecord], LogStamp | None]:
        """Every parseable leg of the log, in order, and the log's stamp as read."""
        lines, stat = jsonl.read_lines(path)
        legs: list[LegRecord] = []
        for number, line in lines:
            try:
                legs.append(leg_from_json(line))
            except ValueError as exc:
                log.warning("ignoring line %d of %s: %s", number, path, exc)
        stamp = None if stat is None else LogStamp.of(stat)
        return legs, stamp
