"""The ledger's format marker and the one-time upgrade to whitespace-significant
patch-ids (issue 10 item 3).

Ledgers written before this version keyed verdicts by ``git patch-id --stable``, which
ignores whitespace; kdev now uses ``--verbatim``. The two kinds of id must never be
matched against each other, so ``<reviews_dir>/ledger-format`` names the scheme, and a
ledger without it is upgraded once, under ``<reviews_dir>/.format.lock``, before any use:
every ``pr-N/patch-*.md`` and ``pr-N/index.json`` is moved (not deleted) into
``pr-N/legacy-stable/``, where no reader looks. Deferred markers and the leg log stay
(they name heads, not patch-ids). The cost is one re-review per PR on its next event, or
at once with ``kdev review-pr --force --repo R --pr N``; until then ``kdev verdicts`` and
``kdev pr-sweep`` show the PR as unreviewed, never as carrying a whitespace-blind verdict.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import tempfile
from pathlib import Path

from wrapper.errors import LedgerError

log = logging.getLogger(__name__)

FORMAT_FILE = "ledger-format"
FORMAT_TEXT = "patch-id: verbatim\n"
LEGACY_DIR = "legacy-stable"
_DIR_MODE = 0o700


def _current(marker: Path) -> bool:
    try:
        return marker.read_text(encoding="utf-8") == FORMAT_TEXT
    except (OSError, UnicodeDecodeError):
        return False


def write_format_marker(reviews_dir: Path) -> None:
    """Writes ``ledger-format`` (atomically): this ledger holds verbatim patch-ids."""
    temp = reviews_dir / f".{FORMAT_FILE}.{os.getpid()}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(FORMAT_TEXT)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, reviews_dir / FORMAT_FILE)


def create_ledger_dir(reviews_dir: Path) -> None:
    """Creates ``reviews_dir`` (its parent exists) with its marker already inside: a
    hidden sibling made 0700, the marker written into it, then renamed into place. A
    ledger directory is never seen without its marker, so a kdev starting beside the one
    that creates it never takes it for an old ledger and moves another's fresh index
    aside (:func:`upgrade_ledger`). When another process's rename won, its directory
    stands and this one's copy is removed. A kill before the rename leaves only the
    hidden ``.<name>.new-*`` sibling, which nothing reads. OSError when it cannot."""
    staging = Path(tempfile.mkdtemp(dir=reviews_dir.parent, prefix=f".{reviews_dir.name}.new-"))
    try:
        os.chmod(staging, _DIR_MODE)
        write_format_marker(staging)
        os.rename(staging, reviews_dir)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        if not reviews_dir.is_dir():
            raise


def _legacy_files(pr_dir: Path) -> list[Path]:
    files = sorted(pr_dir.glob("patch-*.md"))
    index = pr_dir / "index.json"
    return [*files, index] if index.exists() else files


def upgrade_ledger(reviews_dir: Path) -> int:
    """Makes ``reviews_dir`` a verbatim-patch-id ledger; returns how many legacy files
    were moved aside (0 when it already was one, or was new). ``LedgerError
    ledger_write_failed`` when the directory cannot be created or upgraded."""
    marker = reviews_dir / FORMAT_FILE
    if not reviews_dir.is_dir() or _current(marker):
        return 0  # a new ledger gets its marker when its directory is created
    try:
        fd = os.open(reviews_dir / ".format.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise LedgerError(
            f"cannot prepare ledger {reviews_dir}: {exc.strerror or exc}", "ledger_write_failed"
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if _current(marker):
            return 0
        moved = 0
        for pr_dir in sorted(reviews_dir.glob("*__*/pr-*")):
            files = _legacy_files(pr_dir) if pr_dir.is_dir() else []
            if not files:
                continue
            legacy = pr_dir / LEGACY_DIR
            legacy.mkdir(mode=_DIR_MODE, exist_ok=True)
            for path in files:
                os.replace(path, legacy / path.name)
                moved += 1
        write_format_marker(reviews_dir)
        if moved:
            log.warning(
                "ledger %s upgraded to whitespace-significant patch-ids: %d legacy "
                "verdict/index files moved to pr-*/%s; each PR is reviewed again",
                reviews_dir,
                moved,
                LEGACY_DIR,
            )
        return moved
    except OSError as exc:
        raise LedgerError(
            f"cannot upgrade ledger {reviews_dir}: {exc.strerror or exc}", "ledger_write_failed"
        ) from None
    finally:
        os.close(fd)
