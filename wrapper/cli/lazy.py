"""Verbs that are imported when they run, not when the command line is built (issue 19).

``kdev``'s root group knows every verb by name (``kdev -h`` and the "Did you mean"
suggestions list them all, in order) but imports a verb's module and builds its click
command only when it is looked up: ``kdev review-pr`` imports ``wrapper.cli.review`` and
none of the other verbs' modules (the author's loop, the sweep, verdicts, explain, config).

The mechanism is the engine's, shared with ``li`` (:func:`engine.clikit.lazy_group`,
issue 25); it is named here so the wrapper's command line has one place to take it from.
"""

from __future__ import annotations

from engine.clikit import LazyCommands, lazy_group, load

__all__ = ["LazyCommands", "lazy_group", "load"]
