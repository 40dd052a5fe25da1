"""The one JSONL append and read of the ledger (legs.jsonl, posted-comments.jsonl,
outcomes.jsonl).

An append writes one line with a single ``write`` on a descriptor opened ``O_APPEND``
(created 0600, close-on-exec) and fsyncs it; the directory is fsync'd when the file was
new. A writer killed mid-line leaves no newline, so the next append starts on a fresh
line and the torn one is a single unparsable line that readers skip. The caller holds
the file's lock; this module takes none.
"""

from __future__ import annotations

import os
from pathlib import Path

from wrapper.errors import LedgerError
from wrapper.ledger.files import fsync_dir, write_failed
from wrapper.ledger.records import FILE_MODE


def append_line(path: Path, line: str) -> tuple[os.stat_result, os.stat_result]:
    """Appends ``line`` and a newline to ``path``, fsync'd; returns the file's stat before
    and after the append. ``LedgerError ledger_write_failed`` when it cannot."""
    if "\n" in line or "\r" in line:
        raise LedgerError(f"a line for {path} spans lines", "invalid_record")
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
        try:
            before = os.fstat(fd)
            size = before.st_size
            # A writer killed mid-line left no newline: start on a fresh line.
            torn = size > 0 and os.pread(fd, 1, size - 1) != b"\n"
            os.write(fd, (("\n" if torn else "") + line + "\n").encode("utf-8"))
            os.fsync(fd)
            after = os.fstat(fd)
        finally:
            os.close(fd)
        if size == 0:
            fsync_dir(path.parent)
    except OSError as exc:
        raise write_failed(path, exc) from None
    return before, after


def read_lines(path: Path) -> tuple[list[tuple[int, str]], os.stat_result | None]:
    """The non-blank lines of ``path`` numbered from 1 (undecodable bytes replaced), and
    the file's stat as read; ``([], None)`` when it does not exist.
    ``LedgerError ledger_read_failed`` when it cannot be read."""
    try:
        with open(path, "rb") as handle:
            stat = os.fstat(handle.fileno())
            raw = handle.read()
    except FileNotFoundError:
        return [], None
    except OSError as exc:
        raise LedgerError(f"cannot read {path}: {exc.strerror}", "ledger_read_failed") from None
    lines = raw.decode("utf-8", "replace").splitlines()
    return [(number, text) for number, text in enumerate(lines, start=1) if text.strip()], stat
