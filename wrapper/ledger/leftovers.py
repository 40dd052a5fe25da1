"""Crash leftovers, pruned by the next run (issue 10 item 9c).

A kdev killed mid-leg leaves its scratch directory (``kdev-pr*``, ``kdev-describe-pr*``,
``kdev-sweep-*``: a worktree of the PR head), the reviewer's prompt directory
(``kdev-prompt-*``: the diff), hidden ``.*.tmp`` files in the ledger, and the worktree's
registration in the checkout. :func:`prune_leftovers`, run at the start of every
``review-pr``, removes them without touching a live run's files:

- a scratch directory made by :func:`make_scratch` holds ``.kdev-owner.lock``, flocked by
  its run until that process dies; it is removed once the lock can be taken. One without
  the lock file (an older kdev, or a kill between mkdtemp and the lock) is removed when
  older than ``max_age`` and no process has it as its working directory or a file in it
  open (``/proc``);
- a prompt directory is removed on the same two conditions (the caller passes the
  reviewer's timeout plus a margin as ``max_age``; a kdev with another configuration may
  run longer, but while it runs it holds the prompt file open);
- a ledger temp file is removed when older than :data:`TMP_MAX_AGE` (a live write lasts
  milliseconds);
- ``git worktree prune`` then drops registrations whose directory is gone (under the
  checkout lock, so it never races a ``worktree add``).
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from wrapper.config import KdevConfig
from wrapper.git import Git

log = logging.getLogger("kdev.leftovers")

SCRATCH_NAME = re.compile(r"^(?:kdev-pr[0-9]+-|kdev-describe-pr[0-9]+-|kdev-sweep-)")
PROMPT_PREFIX = "kdev-prompt-"
OWNER_LOCK = ".kdev-owner.lock"
TMP_MAX_AGE = 600.0  # seconds
SWEEP_STAMP = ".leftovers-swept"  # in the reviews dir: when the whole ledger was swept
_held: list[int] = []  # lock descriptors of this process's scratch dirs (freed at exit)


LEFTOVER_MARGIN = 600.0  # seconds on top of the reviewer's timeout


def leftover_age(config: KdevConfig) -> float:
    """Seconds after which an unlocked scratch or prompt directory is a leftover: no
    live leg runs longer than its reviewer's timeout (plus git and notify time)."""
    timeout = config.reviewer.timeout_seconds if config.reviewer is not None else 3600
    return float(timeout) + LEFTOVER_MARGIN


def make_scratch(prefix: str) -> Path:
    """A new private temp directory whose owner lock this process holds until it exits."""
    scratch = Path(tempfile.mkdtemp(prefix=prefix))
    fd = os.open(scratch / OWNER_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    _held.append(fd)
    return scratch


@dataclass
class Pruned:
    """What one pass removed."""

    scratch: int = 0
    prompts: int = 0
    temp_files: int = 0


def _owner_dead(directory: Path, max_age: float, now: float) -> bool:
    lock = directory / OWNER_LOCK
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        return _age(directory, now) > max_age and not _in_use(directory)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False  # its run is alive
    finally:
        os.close(fd)
    return True


def _in_use(directory: Path) -> bool:
    """True when a process (that we may inspect) has ``directory`` or a path under it as
    its working directory or an open file. Without ``/proc``, nothing is known: False."""
    prefix = f"{directory}/"
    proc = Path("/proc")
    for pid in proc.iterdir() if proc.is_dir() else []:
        if not pid.name.isdigit():
            continue
        links = [pid / "cwd"]
        try:
            links += list((pid / "fd").iterdir())
        except OSError:
            pass
        for link in links:
            try:
                target = os.readlink(link)
            except OSError:
                continue
            if target == str(directory) or target.startswith(prefix):
                return True
    return False


def _age(path: Path, now: float) -> float:
    try:
        return now - path.lstat().st_mtime
    except OSError:
        return 0.0


def _remove(path: Path) -> bool:
    shutil.rmtree(path, ignore_errors=True)
    return not path.exists()


def _sweep_temp_files(reviews_dir: Path, own_dir: Path | None, moment: float) -> int:
    """Removes ledger temp files older than TMP_MAX_AGE: those of ``own_dir`` on every
    run, those of the whole ledger when its last whole sweep (the mtime of
    :data:`SWEEP_STAMP`) is TMP_MAX_AGE old. Walking every PR's directory on every run
    cost 250 ms at 10k PRs; a temp file cannot be removed before that age anyway."""
    stamp = reviews_dir / SWEEP_STAMP
    # A missing stamp, an old one, or one from the future (a clock set back) all sweep.
    whole = not stamp.exists() or not 0.0 <= _age(stamp, moment) <= TMP_MAX_AGE
    if whole:
        candidates = list(reviews_dir.rglob(".*.tmp"))
    elif own_dir is not None and own_dir.is_dir():
        candidates = list(own_dir.glob(".*.tmp"))
    else:
        candidates = []
    removed = 0
    for temp in candidates:
        if temp.is_file() and _age(temp, moment) > TMP_MAX_AGE:
            temp.unlink(missing_ok=True)
            removed += 1
    if whole:
        try:
            stamp.touch()
            os.utime(stamp, (moment, moment))
        except OSError as exc:  # the next run sweeps the whole ledger again
            log.warning("cannot stamp the ledger sweep %s: %s", stamp, exc.strerror)
    return removed


def prune_leftovers(
    git: Git | None,
    reviews_dir: Path | None,
    *,
    max_age: float,
    temp_dir: Path | None = None,
    now: float | None = None,
    own_dir: Path | None = None,
) -> Pruned:
    """Removes crash leftovers (see the module doc); never raises for one it cannot
    remove (it is logged and left for the next run). ``own_dir``: the ledger directory
    of the PR this run is for, whose temp files are swept on every run."""
    moment = time.time() if now is None else now
    pruned = Pruned()
    base = Path(temp_dir or tempfile.gettempdir())
    for entry in sorted(base.iterdir()) if base.is_dir() else []:
        if not entry.is_dir() or entry.is_symlink():
            continue
        if SCRATCH_NAME.match(entry.name) and _owner_dead(entry, max_age, moment):
            pruned.scratch += _remove(entry)
        elif (
            entry.name.startswith(PROMPT_PREFIX)
            and _age(entry, moment) > max_age
            and not _in_use(entry)
        ):
            pruned.prompts += _remove(entry)
    if reviews_dir is not None and reviews_dir.is_dir():
        pruned.temp_files = _sweep_temp_files(reviews_dir, own_dir, moment)
    if git is not None:
        git.prune_worktrees()
    if pruned.scratch or pruned.prompts or pruned.temp_files:
        log.warning(
            "pruned crash leftovers: %d scratch dirs, %d prompt dirs, %d ledger temp files",
            pruned.scratch,
            pruned.prompts,
            pruned.temp_files,
        )
    return pruned
