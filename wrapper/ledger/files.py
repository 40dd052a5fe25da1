"""The ledger's file handling: paths, directories, atomic writes, flocks.

:class:`LedgerFiles` is the base of :class:`wrapper.ledger.ledger.Ledger`; the parts
(:mod:`~wrapper.ledger.locks`, :mod:`~wrapper.ledger.deferred`, :mod:`~wrapper.ledger.legs`,
:mod:`~wrapper.ledger.posted`) build on it. Crash safety and lock semantics: the
docstring of :mod:`wrapper.ledger.ledger`.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import tempfile
import threading
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

from wrapper.config import check_repo
from wrapper.errors import ConfigError, LedgerError
from wrapper.ledger.format import create_ledger_dir, upgrade_ledger
from wrapper.ledger.records import (
    DIR_MODE,
    FILE_MODE,
    PR_DIR_RE,
    check_pr,
    check_sha,
    utcnow,
)

# Every part of the ledger logs under the name it had as one module.
log = logging.getLogger("wrapper.ledger.ledger")


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def open_lock_file(path: Path) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)


def write_failed(path: Path, exc: OSError) -> LedgerError:
    return LedgerError(f"cannot write {path}: {exc.strerror or exc}", "ledger_write_failed")


def read_text(path: Path) -> str | None:
    """The file's text, None if it does not exist; LedgerError if it cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8: {exc.reason}") from None
    except OSError as exc:
        raise LedgerError(f"cannot read {path}: {exc.strerror}", "ledger_read_failed") from None


class LedgerFiles:
    """The ledger's directory ``reviews_dir`` (layout: :mod:`wrapper.ledger.ledger`).

    ``clock`` gives aware UTC datetimes (leg starts, default timestamps).
    ``before_replace``, if given, is called with the temp file's path after it is
    fsync'd and before it is renamed into place: a seam for crash tests.
    """

    def __init__(
        self,
        reviews_dir: Path,
        *,
        clock: Callable[[], datetime] = utcnow,
        before_replace: Callable[[Path], None] | None = None,
    ) -> None:
        self.reviews_dir = Path(reviews_dir)
        upgrade_ledger(self.reviews_dir)  # never match --stable ids against --verbatim ones
        self.clock = clock
        self._before_replace = before_replace
        self._held = threading.local()  # re-entrant legs_lock bookkeeping, per thread

    # --- paths --------------------------------------------------------------------------

    def repo_dir(self, repo: str) -> Path:
        """``<reviews_dir>/<owner>__<name>``; ``ConfigError invalid_repo`` for a bad name."""
        owner, name = check_repo(repo)
        return self.reviews_dir / f"{owner}__{name}"

    def pr_dir(self, repo: str, pr: int) -> Path:
        """``<reviews_dir>/<owner>__<name>/pr-<N>`` (not created)."""
        return self.repo_dir(repo) / f"pr-{check_pr(pr)}"

    def verdict_path(self, repo: str, pr: int, patch_id: str) -> Path:
        """Where the verdict for ``patch_id`` lives (whether or not it exists)."""
        return self.pr_dir(repo, pr) / f"patch-{check_sha(patch_id, 'patch_id')}.md"

    def _deferred_path(self, repo: str, pr: int, head_sha: str) -> Path:
        return self.pr_dir(repo, pr) / f"deferred-{check_sha(head_sha, 'head_sha')}.json"

    def ensure_dir(self, directory: Path) -> None:
        """Creates ``directory`` and any missing ancestor with mode 0700."""
        missing: list[Path] = []
        current = directory
        while not current.is_dir() and current != current.parent:
            missing.append(current)
            current = current.parent
        for path in reversed(missing):
            try:
                if path == self.reviews_dir:
                    create_ledger_dir(path)  # born with its format marker
                else:
                    os.mkdir(path, DIR_MODE)
            except FileExistsError:
                if not path.is_dir():
                    raise LedgerError(
                        f"{path} exists and is not a directory", "ledger_write_failed"
                    ) from None
            except OSError as exc:
                raise write_failed(path, exc) from None

    def atomic_write(self, path: Path, text: str) -> None:
        """temp file in the same directory -> flush + fsync -> os.replace -> fsync dir."""
        try:
            fd, temp_name = tempfile.mkstemp(
                dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"
            )
        except OSError as exc:
            raise write_failed(path, exc) from None
        temp = Path(temp_name)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(text.encode("utf-8"))
                handle.flush()
                os.fsync(handle.fileno())
            if self._before_replace is not None:
                self._before_replace(temp)
            os.replace(temp, path)
            fsync_dir(path.parent)
        except OSError as exc:
            temp.unlink(missing_ok=True)
            raise write_failed(path, exc) from None
        except BaseException:
            temp.unlink(missing_ok=True)
            raise

    @contextlib.contextmanager
    def flock(self, path: Path, operation: int) -> Iterator[bool]:
        """Holds flock ``operation`` on ``path``; yields False if LOCK_NB found it busy."""
        try:
            fd = open_lock_file(path)
        except OSError as exc:
            raise write_failed(path, exc) from None
        try:
            try:
                fcntl.flock(fd, operation)
                acquired = True
            except BlockingIOError:
                acquired = False
            except OSError as exc:
                raise LedgerError(
                    f"cannot lock {path}: {exc.strerror}", "ledger_write_failed"
                ) from None
            yield acquired
        finally:
            os.close(fd)  # closing the only descriptor releases the lock

    # --- walking the tree --------------------------------------------------------------

    def iter_repos(self, repo: str | None) -> Iterator[tuple[str, Path]]:
        """``(OWNER/NAME, directory)`` of ``repo`` (if it has one) or of every repository."""
        return self._repos(repo)

    def _repos(self, repo: str | None) -> Iterator[tuple[str, Path]]:
        if repo is not None:
            path = self.repo_dir(repo)
            if path.is_dir():
                yield repo, path
            return
        if not self.reviews_dir.is_dir():
            return
        for path in sorted(self.reviews_dir.iterdir()):
            owner, sep, name = path.name.partition("__")
            if not sep or not path.is_dir():
                continue
            try:
                check_repo(f"{owner}/{name}")
            except ConfigError:
                continue
            yield f"{owner}/{name}", path

    @staticmethod
    def _prs(repo_path: Path) -> Iterator[tuple[int, Path]]:
        found = []
        for path in repo_path.iterdir():
            match = PR_DIR_RE.match(path.name)
            if match and path.is_dir():
                found.append((int(match.group(1)), path))
        yield from sorted(found)
