"""The ledger's locks: the per-PR lock, the repository's concurrency slots and the
re-entrant leg-log lock. All are ``fcntl.flock`` on close-on-exec files, released by the
kernel when the holder dies (:meth:`wrapper.ledger.files.LedgerFiles.flock`)."""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path

from wrapper.errors import ConfigError
from wrapper.ledger.files import LedgerFiles
from wrapper.ledger.records import LOCK_FILE


class LedgerLocks(LedgerFiles):
    """The locks of one ledger."""

    @contextlib.contextmanager
    def pr_lock(self, repo: str, pr: int) -> Iterator[None]:
        """Holds the PR's advisory lock (``pr-N/.lock``), blocking until it is free.

        Exclusive across processes; the kernel releases it when the holder exits or is
        killed. Not re-entrant: do not nest it for the same PR.
        """
        directory = self.pr_dir(repo, pr)
        self.ensure_dir(directory)
        with self.flock(directory / LOCK_FILE, fcntl.LOCK_EX):
            yield

    @contextlib.contextmanager
    def concurrency_slot(self, repo: str, cap: int) -> Iterator[int | None]:
        """Takes the first free slot of ``cap`` for the repository, without waiting.

        Yields the slot index held (released on exit from the block or when the process
        dies), or None when all ``cap`` slots are busy.
        """
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
            raise ConfigError(f"concurrency cap {cap!r} is not a positive integer", "invalid_cap")
        slots = self.repo_dir(repo) / ".slots"
        self.ensure_dir(slots)
        for index in range(cap):
            with self.flock(
                slots / f"slot-{index}.lock", fcntl.LOCK_EX | fcntl.LOCK_NB
            ) as acquired:
                if acquired:
                    yield index
                    return
        yield None

    @contextlib.contextmanager
    def legs_lock(self, repo: str) -> Iterator[None]:
        """Holds the repository's leg-log lock (``.legs.lock``), blocking.

        Re-entrant within one thread, so a caller can read the log, decide the budget
        and record the leg start as one step that no other process interleaves with.
        """
        directory = self.repo_dir(repo)
        held: dict[Path, int] | None = getattr(self._held, "counts", None)
        if held is None:
            held = self._held.counts = {}
        if held.get(directory, 0):
            held[directory] += 1
            try:
                yield
            finally:
                held[directory] -= 1
            return
        self.ensure_dir(directory)
        with self.flock(directory / ".legs.lock", fcntl.LOCK_EX):
            held[directory] = 1
            try:
                yield
            finally:
                held[directory] = 0
