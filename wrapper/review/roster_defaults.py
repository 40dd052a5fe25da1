"""The default reviewers of roster mode (they sit at the root of the checkout), and the
Markdown parser roster files are read with."""

from __future__ import annotations

from functools import lru_cache

from markdown_it import MarkdownIt

# The version of the built-in reviewer set below. A root AGENT-REVIEWERS.md may pin the
# version its authors last checked (``defaults_version_checked``); bump this whenever a
# default reviewer is added, removed or its instructions change meaning.
DEFAULTS_VERSION = "1.0.0"

DEFAULT_REVIEWERS: dict[str, str] = {
    "code-reviewer": (
        "Review the change for correctness: logic errors, broken edge cases, wrong API "
        "use, races, resource leaks and regressions in behaviour callers rely on. Point "
        "at the exact lines and say what goes wrong and when."
    ),
    "silent-failure-hunter": (
        "Hunt for failures that pass silently: swallowed exceptions, broad except "
        "clauses, ignored return codes, fallbacks that hide errors, missing logging on "
        "error paths, and defaults that turn a failure into wrong data."
    ),
    "pr-test-analyzer": (
        "Judge the tests of the change: is every new behaviour and failure path "
        "covered, do the tests assert outcomes rather than implementation details, and "
        "which missing test would most likely catch a real bug."
    ),
    "comment-analyzer": (
        "Check comments and docstrings against the code: stale or wrong statements, "
        "comments that restate the code instead of saying why, and public functions "
        "whose contract is not written down."
    ),
    "type-design-analyzer": (
        "Review the types the change introduces or alters: do they make invalid states "
        "unrepresentable, are invariants enforced at construction, are names precise, "
        "and is anything typed looser than it needs to be."
    ),
    "code-simplifier": (
        "Look for needless complexity: duplicated logic, dead code, abstractions with "
        "one user, deep nesting and long functions that a simpler shape would make "
        "easier to read, without changing behaviour."
    ),
}
"""The default reviewers (name -> instructions); they sit at the root of the checkout."""


@lru_cache(maxsize=1)
def markdown_parser() -> MarkdownIt:
    """The CommonMark parser every roster file is read with."""
    return MarkdownIt("commonmark")
