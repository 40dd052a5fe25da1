"""Find the first mention of a handle in a comment body, the pure part.

The rule (docs/triggers.md, "What counts as a mention"): the body is rendered the way
GitHub renders a comment, with cmark-gfm (:mod:`cmarkgfm`, GitHub's own parser, with
the GFM extensions table, strikethrough, autolink, tagfilter and tasklist, raw HTML
kept), and the HTML is walked with the standard library's :mod:`html.parser`. A handle
counts only in a text node that has no ``a``, ``code`` or ``pre`` ancestor and no
``blockquote`` ancestor. So code (fenced, indented, spans, ``<code>``, ``<pre>``), links
(link text, autolinks, ``<a>``), quotes and everything that is not text (HTML comments,
attributes such as image alt text) never count, while text inside raw HTML such as
``<div>@handle</div>`` does, as on GitHub. Entities and escapes are decoded first, as
GitHub does: ``&#64;handle`` and ``\\@handle`` count.

The match is case-insensitive and word-bounded both ways, inside one text node. A word
character, ``@``, ``.``, ``-`` or ``/`` right before the ``@`` disqualifies it
(``x@handle``, a path); a word character or ``-`` right after the handle disqualifies it
(``@handlebot``, ``@handle-ci``), and so does a ``.`` followed by a word character
(``@handle.ai``), while a sentence-ending ``@handle.`` counts.

The *verb* is the word right after the first counted mention, on the same line of the
same block (spaces, tabs and ``,:;`` may sit between them; emphasis and strikethrough
are transparent, any other element ends the search). It is a whole word: a word
character, ``-``, ``/`` or ``@`` right after it, or a ``.`` and a word character, make
it none (``@handle deploy-it`` has no verb ``deploy``). A word among the schedule's
``verbs`` is taken as is (case-folded), anything else, or no word at all, gives the
schedule's ``default_verb`` (None when it has none). The engine knows no verb of its
own: they are the schedule's data (``mentions.verbs``, ``mentions.default_verb``).

Public API (what other packages may use): the detector (:func:`find_mention`,
:func:`count_mentions`, :func:`mention_pattern`, :func:`validate_handle`) and the
parser (:func:`render` with :data:`GFM_EXTENSIONS`, :func:`has_raw_html`,
:func:`prose_lines`).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field
from functools import lru_cache
from html.parser import HTMLParser

import cmarkgfm
from cmarkgfm.cmark import Options

from engine.errors import InvalidInput

INVALID_HANDLE = "invalid_handle"
INVALID_VERB = "invalid_verb"

GFM_EXTENSIONS = ("table", "strikethrough", "autolink", "tagfilter", "tasklist")
"""The cmark-gfm extensions GitHub enables for comments."""

# A GitHub login: 1-39 alphanumerics or single hyphens, no hyphen at either end.
_LOGIN_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}")
# Stands in for anything that is not counted text (code, a link, an image): it is
# neither a word character nor a handle character and it ends the search for a verb.
_OPAQUE = "\x00"
# Elements whose text never counts.
_EXCLUDING = frozenset({"a", "code", "pre", "blockquote"})
# Inline elements that do not separate words ("@handle *verb*" keeps its verb).
_TRANSPARENT = frozenset(
    {"em", "strong", "del", "s", "strike", "b", "i", "u", "span", "sub", "sup"}
)
# Elements that have no end tag.
_VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
     "param", "source", "track", "wbr"}
)  # fmt: skip
# The verb is a whole word: ``deploy-it`` or ``deploy/x`` is no ``deploy`` (D98);
# like the handle, a ``.`` ends it only when no word character follows.
_VERB_RE = re.compile(r"[ \t,:;]*(\w+)(?![\w\-/@])(?!\.\w)")
_WORD_RE = re.compile(r"\w+")
# What the result of rendering without raw HTML puts where each piece of it was.
_RAW_HTML_OMITTED = "<!-- raw HTML omitted -->"


@dataclass(frozen=True)
class Mention:
    """The first counted mention: its ``verb`` (None: no listed verb and no default), the
    ``line`` it sits on (the text of that line of its block; text that does not count
    replaced by an opaque character) and the ``word`` right after it (case-folded,
    ``""`` when there is none)."""

    verb: str | None
    line: str
    word: str = ""


def validate_handle(handle: str) -> str:
    """Return ``handle`` if it is a valid GitHub login (given without ``@``).

    Raises :class:`InvalidInput` (``invalid_handle``) otherwise.
    """
    if not isinstance(handle, str) or not _LOGIN_RE.fullmatch(handle):
        raise InvalidInput(
            f"handle {handle!r} is not a GitHub login (give it without '@')", INVALID_HANDLE
        )
    return handle


def validate_verb(verb: object) -> str:
    """``verb`` case-folded when it is one word (letters, digits, ``_``), as a mention's
    verb is read; raises :class:`InvalidInput` (``invalid_verb``) otherwise."""
    if not isinstance(verb, str) or not _WORD_RE.fullmatch(verb):
        raise InvalidInput(
            f"a verb is one word of letters, digits or '_', got {verb!r}", INVALID_VERB
        )
    return verb.casefold()


def render(body: str, *, sourcepos: bool = False, raw_html: bool = True) -> str:
    """``body`` rendered to HTML as GitHub renders a comment: raw HTML kept, or, with
    ``raw_html`` False, replaced by a placeholder (see :func:`has_raw_html`)."""
    options = (Options.CMARK_OPT_UNSAFE if raw_html else 0) | (
        Options.CMARK_OPT_SOURCEPOS if sourcepos else 0
    )
    html: str = cmarkgfm.markdown_to_html_with_extensions(
        body, options=options, extensions=list(GFM_EXTENSIONS)
    )
    return html


def has_raw_html(text: str) -> bool:
    """True when GitHub's parser finds raw HTML (a block or inline HTML) in ``text``."""
    return _RAW_HTML_OMITTED in render(text, raw_html=False)


@lru_cache(maxsize=64)
def mention_pattern(handle: str) -> re.Pattern[str]:
    """The pattern of a mention of ``handle`` inside one text node (word-bounded both
    ways, case-insensitive; see the module doc). ``handle`` is not validated here."""
    return re.compile(
        rf"(?<![\w@.\-/])@{re.escape(handle)}(?![\w-])(?!\.\w)",
        re.IGNORECASE,
    )


@dataclass
class TextWalk:
    """The walk of one rendered body: ``flat`` is its text, blocks and lines separated
    by ``\\n``, with text that cannot count replaced by :data:`_OPAQUE`; ``nodes`` are
    the ``(start, text)`` of every text node that can count (``flat[start:]`` begins
    with it)."""

    flat: list[str] = field(default_factory=list)
    nodes: list[tuple[int, str]] = field(default_factory=list)
    size: int = 0

    def add(self, text: str) -> None:
        self.flat.append(text)
        self.size += len(text)


class OpenTags:
    """The open elements of a walk over rendered HTML, and how many of them are in
    ``counted`` (the elements whose text the walk leaves out)."""

    def __init__(self, counted: frozenset[str]) -> None:
        self._stack: list[str] = []
        self._counted = counted
        self.inside = 0

    def open(self, tag: str) -> None:
        self._stack.append(tag)
        self.inside += tag in self._counted

    def close(self, tag: str) -> bool:
        """Close ``tag`` and every element still open inside it; False for a stray end
        tag, which closes nothing."""
        if tag not in self._stack:
            return False
        while self._stack:
            top = self._stack.pop()
            self.inside -= top in self._counted
            if top == tag:
                break
        return True


class _Walker(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.walk = TextWalk()
        self.tags = OpenTags(_EXCLUDING)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _VOID:
            self.walk.add("\n" if tag == "br" else _OPAQUE)
            return
        if tag not in _TRANSPARENT:
            self.walk.add("\n" if tag not in _EXCLUDING else _OPAQUE)
        self.tags.open(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.walk.add("\n" if tag == "br" else _OPAQUE)

    def handle_endtag(self, tag: str) -> None:
        if not self.tags.close(tag):
            return
        if tag not in _TRANSPARENT:
            self.walk.add("\n" if tag not in _EXCLUDING else _OPAQUE)

    def handle_data(self, data: str) -> None:
        if self.tags.inside:
            self.walk.add(_OPAQUE)
            return
        self.walk.nodes.append((self.walk.size, data))
        self.walk.add(data)

    def handle_comment(self, data: str) -> None:
        self.walk.add(_OPAQUE)


def walk(body: str) -> TextWalk:
    """The text nodes of ``body`` as GitHub renders it (see the module doc)."""
    walker = _Walker()
    walker.feed(render(body))
    walker.close()
    return walker.walk


def count_mentions(body: str, handle: str) -> int:
    """How many mentions of ``@handle`` in ``body`` count."""
    pattern = mention_pattern(validate_handle(handle))
    return sum(len(pattern.findall(text)) for _, text in walk(body).nodes)


def prose_lines(body: str) -> list[str]:
    """The counted text of ``body``, one string per line of each block (text that does
    not count replaced by an opaque character)."""
    return [line for line in "".join(walk(body).flat).split("\n") if line]


def find_mention(
    body: str,
    handle: str,
    *,
    verbs: Collection[str] = (),
    default_verb: str | None = None,
) -> Mention | None:
    """The first mention of ``@handle`` in ``body`` that counts, or None.

    ``handle`` is a GitHub login without ``@`` (:func:`validate_handle`); the match is
    case-insensitive. See the module docstring for what counts. The mention's verb is
    the word after it when that word (case-folded) is in ``verbs``, else
    ``default_verb``.
    """
    pattern = mention_pattern(validate_handle(handle))
    result = walk(body)
    for start, text in result.nodes:
        match = pattern.search(text)
        if match is None:
            continue
        flat = "".join(result.flat)
        end = start + match.end()
        line_start = flat.rfind("\n", 0, end) + 1
        line_end = flat.find("\n", end)
        line = flat[line_start : line_end if line_end >= 0 else len(flat)]
        verb_match = _VERB_RE.match(line, end - line_start)
        word = verb_match.group(1).casefold() if verb_match else ""
        verb = word if word and word in verbs else default_verb
        return Mention(verb=verb, line=line, word=word)
    return None
