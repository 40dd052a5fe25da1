"""What every ``li`` verb may read of the root's options, and the shared exit code, in a
module that imports nothing: the root callback runs for ``li --help`` too (issue 25)."""

from __future__ import annotations

from dataclasses import dataclass

EXIT_RUN_NOT_SUCCEEDED = 7


@dataclass
class GlobalOptions:
    """What the root callback was given, for verbs whose defaults depend on it."""

    log_level_given: bool = False


GLOBAL_OPTIONS = GlobalOptions()
