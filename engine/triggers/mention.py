"""Find the first mention of a handle in a comment body, the pure part.

A comment *mentions a handle* when ``@handle`` appears in prose as CommonMark
(markdown-it-py) parses it. Prose excludes:

- fenced code (backticks or tildes, fences indented up to 3 spaces, a fence nested in a
  longer fence, an unclosed fence running to the end) and indented code;
- code spans of any backtick run, autolinks and image alt text;
- blockquotes, however nested or indented (lazy continuation lines included);
- HTML blocks and inline HTML (so HTML comments), and an ``@`` written as an entity
  (``&#64;handle``) or escaped (``\\@handle``): that is how a text says "not a mention".

The match is case-insensitive and word-bounded both ways. A word character, ``@``,
``.``, ``-`` or ``/`` right before the ``@`` disqualifies it (``user@handle.ai``,
``x@handle``, a URL path); a word character or ``-`` right after the handle disqualifies
it (``@handlebot``, ``@handle-ci``), and so does a ``.`` followed by a word character
(``@handle.ai``), while a sentence-ending ``@handle.`` counts.

The *verb* is the word right after the first counted mention, on the same source line
(spaces, tabs and ``,:;`` may sit between them): a word in :data:`KNOWN_VERBS` is taken
as is (case-folded), anything else, or no word at all, gives :data:`FALLBACK_VERB`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from markdown_it import MarkdownIt
from markdown_it.token import Token

from engine.errors import InvalidInput

FALLBACK_VERB = "review"
"""The verb of a mention followed by no known verb."""
KNOWN_VERBS = frozenset({"review", "describe"})
"""Verbs a mention may name explicitly; any other word falls back to FALLBACK_VERB."""

INVALID_HANDLE = "invalid_handle"

# A GitHub login: 1-39 alphanumerics or single hyphens, no hyphen at either end.
_LOGIN_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}")
# Stands in for anything that is not prose (a code span, inline HTML, an entity "@"):
# it is neither a word character nor a handle character, so it can neither be part of a
# mention nor disqualify one, and it ends the search for a verb.
_OPAQUE = "\x00"
# Inline tokens whose own text is not prose.
_OPAQUE_INLINE = frozenset({"code_inline", "html_inline", "image"})
_VERB_RE = re.compile(r"[ \t,:;]*(\w+)")


@dataclass(frozen=True)
class Mention:
    """The first counted mention: its ``verb`` and the source ``line`` it sits on
    (prose only, non-prose parts replaced)."""

    verb: str
    line: str


def validate_handle(handle: str) -> str:
    """Return ``handle`` if it is a valid GitHub login (given without ``@``).

    Raises :class:`InvalidInput` (``invalid_handle``) otherwise.
    """
    if not isinstance(handle, str) or not _LOGIN_RE.fullmatch(handle):
        raise InvalidInput(
            f"handle {handle!r} is not a GitHub login (give it without '@')", INVALID_HANDLE
        )
    return handle


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    # text_join would fold entities and escapes into plain text; keeping them apart
    # lets "&#64;handle" and "\@handle" stay non-mentions.
    return MarkdownIt("commonmark").disable("text_join")


@lru_cache(maxsize=64)
def _mention_re(handle: str) -> re.Pattern[str]:
    return re.compile(
        rf"(?<![\w@.\-/])@{re.escape(handle)}(?![\w-])(?!\.\w)",
        re.IGNORECASE,
    )


def prose_lines(body: str) -> list[str]:
    """The prose of ``body``, one string per source line of each paragraph or heading.

    Code, quotes and HTML are left out; inside a line, non-prose inline parts are
    replaced by an opaque character so that words on either side stay apart.
    """
    lines: list[str] = []
    quote_depth = 0
    for token in _parser().parse(body):
        if token.type == "blockquote_open":
            quote_depth += 1
        elif token.type == "blockquote_close":
            quote_depth -= 1
        elif token.type == "inline" and quote_depth == 0:
            lines.extend(_inline_prose(token.children or []).split("\n"))
    return lines


def _inline_prose(children: list[Token]) -> str:
    parts: list[str] = []
    autolink_depth = 0
    for child in children:
        if child.type == "link_open" and child.markup == "autolink":
            autolink_depth += 1
        elif child.type == "link_close" and child.markup == "autolink":
            autolink_depth -= 1
        elif child.type in ("softbreak", "hardbreak"):
            parts.append("\n")
        elif autolink_depth or child.type in _OPAQUE_INLINE:
            parts.append(_OPAQUE)
        elif child.type == "text":
            parts.append(child.content)
        elif child.type == "text_special":
            # An entity or escape spelling "@" is a deliberate non-mention.
            parts.append(_OPAQUE if "@" in child.content else child.content)
        # Emphasis and link markers add nothing: "@handle *describe*" keeps its verb.
    return "".join(parts)


def find_mention(body: str, handle: str) -> Mention | None:
    """The first mention of ``@handle`` in the prose of ``body``, or None.

    ``handle`` is a GitHub login without ``@`` (:func:`validate_handle`); the match is
    case-insensitive. See the module docstring for what counts.
    """
    pattern = _mention_re(validate_handle(handle))
    for line in prose_lines(body):
        match = pattern.search(line)
        if match is None:
            continue
        verb_match = _VERB_RE.match(line, match.end())
        word = verb_match.group(1).casefold() if verb_match else ""
        return Mention(verb=word if word in KNOWN_VERBS else FALLBACK_VERB, line=line)
    return None
