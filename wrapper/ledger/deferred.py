"""``deferred:budget`` markers: ``pr-N/deferred-<head_sha>.json``, one per held-back leg
(when it reopens: :mod:`wrapper.ledger.deferral`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from wrapper.errors import LedgerError
from wrapper.ledger.codec import marker_from_json, marker_to_json
from wrapper.ledger.files import LedgerFiles, fsync_dir, log, read_text, write_failed
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

        A marker that does not parse is skipped with a warning.
        """
        found: list[tuple[str, int, DeferredMarker]] = []
        for name, repo_path in self._repos(repo):
            for pr, pr_path in self._prs(repo_path):
                found.extend((name, pr, marker) for marker in self._markers(pr_path))
        found.sort(key=lambda t: (t[0], t[1], t[2].created_at, t[2].head_sha))
        return found

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
