"""Real git for tests that build small repositories: an environment that reads no user or
system config, a ``git`` that returns stdout, and numbered text lines."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "a",
    "GIT_AUTHOR_EMAIL": "a@example.invalid",
    "GIT_COMMITTER_NAME": "a",
    "GIT_COMMITTER_EMAIL": "a@example.invalid",
    "PATH": os.environ["PATH"],
}


def git(cwd: Path, *args: str, ok: tuple[int, ...] = (0,)) -> str:
    """``git ARGS`` in ``cwd``; its exit code must be one of ``ok``; its stdout."""
    done = subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, capture_output=True, check=False)
    assert done.returncode in ok, done.stderr
    return done.stdout.decode("utf-8")


def numbered(count: int, word: str = "line") -> str:
    """``count`` lines ``word 1`` .. ``word count``."""
    return "".join(f"{word} {n}\n" for n in range(1, count + 1))
