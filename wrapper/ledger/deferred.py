"""``deferred:budget`` markers: ``pr-N/deferred-<head_sha>.json``, one per held-back leg
(when it reopens: :mod:`wrapper.ledger.deferral`), listed through the repository's PR index
(:mod:`wrapper.ledger.prindex`) rather than by opening every PR directory."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from pathlib import Path

from wrapper.errors import LedgerError
from wrapper.ledger import prindex
from wrapper.ledger.codec import marker_from_json, marker_to_json
from wrapper.ledger.files import LedgerFiles, fsync_dir, log, read_text, write_failed
from wrapper.ledger.prindex import PrSummary
from wrapper.ledger.records import DeferredMarker


class DeferredMarkers(LedgerFiles):
    """Write, list and clear the deferred markers of one ledger."""

    def write_deferred(self, repo: str, pr: int, head_sha: str, marker: DeferredMarker) -> Path:
        """Writes the ``deferred:budget`` marker of ``head_sha`` atomically; returns its path."""
        path = self._deferred_path(repo, pr, head_sha)
        if marker.head_sha != head_sha:
            raise LedgerError(f"marker head {marker.head_sha} is not {head_sha}", "invalid_record")
        try:
            text = marker_to_json(marker)
        except ValueError as exc:
            raise LedgerError(f"deferred marker: {exc}", "invalid_record") from None
        self.ensure_dir(path.parent)
        self.atomic_write(path, text)
        return path

    def list_deferred(self, repo: str | None = None) -> list[tuple[str, int, DeferredMarker]]:
        """Every deferred marker (of ``repo`` only, if given), ordered by repo, pr, time.

        Read through the repository's PR index: only PR directories changed since it was
        written are opened. A marker that does not parse is skipped with a warning.
        """
        found: list[tuple[str, int, DeferredMarker]] = []
        for name, _ in self._repos(repo):
            summaries = self.pr_summaries(name, with_index=False)
            found.extend((name, pr, marker) for pr, marker in prindex.iter_markers(summaries))
        found.sort(key=lambda t: (t[0], t[1], t[2].created_at, t[2].head_sha))
        return found

    def pr_summaries(self, repo: str, *, with_index: bool = True) -> dict[int, PrSummary]:
        """Every PR directory of ``repo`` summarised as it is now (wrapper.ledger.prindex);
        the index file is rewritten when entries had to be read again. ``with_index=False``
        when only the markers are needed (index.json's own stamp is not checked)."""
        directory = self.repo_dir(repo)
        return prindex.refresh(
            directory,
            lambda found: self._save_pr_index(directory, found),
            with_index=with_index,
        )

    def _save_pr_index(self, directory: Path, summaries: dict[int, PrSummary]) -> None:
        try:
            with self.flock(directory / prindex.PR_INDEX_LOCK, fcntl.LOCK_EX | fcntl.LOCK_NB) as ok:
                if ok:  # else another reader is writing it; this answer does not need it
                    self.atomic_write(directory / prindex.PR_INDEX_FILE, prindex.render(summaries))
        except LedgerError as exc:  # the PR directories are the truth; rebuilt later
            log.warning("cannot write the PR index in %s: %s", directory, exc)

    def clear_deferred(self, repo: str, pr: int, head_sha: str) -> bool:
        """Deletes the marker of ``head_sha``; True if there was one."""
        path = self._deferred_path(repo, pr, head_sha)
        try:
            path.unlink()
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise write_failed(path, exc) from None
        fsync_dir(path.parent)
        return True

    def markers_of(self, pr_path: Path) -> list[DeferredMarker]:
        """The markers in one PR directory, read from it (not through the PR index)."""
        return list(self._markers(pr_path))

    def _markers(self, pr_path: Path) -> Iterator[DeferredMarker]:
        for path in sorted(pr_path.glob("deferred-*.json")):
            try:
                text = read_text(path)
                if text is None:
                    continue
                marker = marker_from_json(text)
                if path.name != f"deferred-{marker.head_sha}.json":
                    raise ValueError("head_sha differs from the file name")
            except ValueError as exc:
                log.warning("ignoring corrupt deferred marker %s: %s", path, exc)
                continue
            yield marker
