"""Make text safe to post on GitHub as kdev: no mention that summons kdev, no cross-reference,
no raw HTML.

Why it is built this way: docs/decisions.md D14.

Every body kdev posts goes through :func:`prepare_comment` (that is, :func:`escape_prose`
then :func:`neutralise`, in that order: escaping can turn an HTML block into a paragraph,
whose mentions must then be neutralised too).

- :func:`neutralise` rewrites exactly the mentions that
  :func:`engine.triggers.find_mention` would count into ``@&#8203;handle`` (a zero-width
  space after the ``@``, decoded by GitHub into the text node, so the handle no longer
  follows the ``@``). It uses the detector itself (cmark-gfm, the way GitHub renders),
  so "no mention survives neutralising" is checked with the same parser. Code spans,
  fenced and indented code, quotes, HTML comments and every non-counted ``@`` are left
  byte-for-byte as they were, and the function is idempotent.
- :func:`escape_prose` escapes, outside fenced code, indented code and code spans, every
  ``<`` as ``&lt;`` (no raw HTML or autolink survives) and the ``#`` of every
  cross-reference (``#123``, ``owner/repo#123``) as ``&#35;``. Code is left as it is:
  GitHub renders neither HTML nor references there. Code blocks are located with
  cmark-gfm's source positions.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

from wrapper.ledger.ledger import find_secrets

log = logging.getLogger("kdev.neutralise")

NEUTRAL_AT = "@&#8203;"
"""What a counted ``@`` becomes: ``@`` then a zero-width space (as Renovate does)."""
HASH_ENTITY = "&#35;"
LT_ENTITY = "&lt;"

# ``#123`` as GitHub links it: not preceded by a word character (``a#1`` is no
# reference; ``owner/repo#1`` is, through its name, so ``#`` is escaped there too).
_REFERENCE = re.compile(r"#(?=\d)")
_BACKTICKS = re.compile(r"`+")
# A source line as cmark-gfm counts lines (LF, CRLF or CR), with its ending.
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
_PRE_SOURCEPOS = re.compile(r'<pre data-sourcepos="(\d+):\d+-(\d+):\d+"')


# The ways a source can write the "@" of a mention: the character, a backslash escape,
# and the numeric and named character references that decode to it.
_AT_SPELLINGS = re.compile(r"\\@|@|&#0*64;|&#[xX]0*40;|&commat;")


def _at_spans(body: str, handle: str) -> list[tuple[int, int]]:
    """Every spelling of ``@`` in ``body``: those right before the handle first (the
    usual mention), then the rest (a mention may be split by emphasis or an entity)."""
    spans = [(m.start(), m.end()) for m in _AT_SPELLINGS.finditer(body)]
    lowered = body.lower()
    direct = [s for s in spans if lowered.startswith(handle.lower(), s[1])]
    chosen = set(direct)
    return direct + [s for s in spans if s not in chosen]


def neutralise(body: str, handle: str) -> str:
    """``body`` with each mention of ``@handle`` that the detector counts rewritten as
    ``@&#8203;handle``; everything else is unchanged.

    An ``@`` (or a spelling of it) is rewritten only if that lowers the number of
    counted mentions, so an ``@`` in code, in a link or in a quote is never touched.
    Idempotent.
    """
    from engine.triggers import count_mentions, find_mention, validate_handle

    validate_handle(handle)
    count = count_mentions(body, handle)
    if count == 0:
        return body
    done: list[tuple[int, int]] = []  # (source start, length change) of each rewrite
    for start, end in _at_spans(body, handle):
        if count == 0:
            break
        shift = sum(delta for position, delta in done if position < start)
        candidate = body[: start + shift] + NEUTRAL_AT + body[end + shift :]
        lowered = count_mentions(candidate, handle)
        if lowered < count:
            body, count = candidate, lowered
            done.append((start, len(NEUTRAL_AT) - (end - start)))
    if find_mention(body, handle) is not None:  # pragma: no cover - a safety net only
        log.warning("neutralise: a mention survived; rewriting every '@' of the body")
        body = _AT_SPELLINGS.sub(NEUTRAL_AT, body)
    return body


def _code_block_lines(body: str) -> set[int]:
    """0-based line numbers of fenced and indented code blocks (fences included), from
    the source positions cmark-gfm gives each ``<pre>``."""
    from engine.triggers import render

    lines: set[int] = set()
    for match in _PRE_SOURCEPOS.finditer(render(body, sourcepos=True)):
        lines.update(range(int(match.group(1)) - 1, int(match.group(2))))
    return lines


def _escape_text(text: str) -> str:
    return _REFERENCE.sub(HASH_ENTITY, text.replace("<", LT_ENTITY))


def _escape_outside_spans(segment: str) -> str:
    """Escape ``segment`` (the prose lines of one block) except inside code spans.

    A backtick run opens a code span when a run of the same length follows it (the
    CommonMark rule); an unmatched run is literal text.
    """
    out: list[str] = []
    position = 0
    runs = list(_BACKTICKS.finditer(segment))
    index = 0
    while index < len(runs):
        opening = runs[index]
        if opening.start() > 0 and segment[opening.start() - 1] == "\\":
            index += 1  # an escaped backtick is literal (the rest of its run may open)
            continue
        closing_index = next(
            (
                j
                for j in range(index + 1, len(runs))
                if len(runs[j].group()) == len(opening.group())
            ),
            None,
        )
        if closing_index is None:
            index += 1
            continue
        closing = runs[closing_index]
        out.append(_escape_text(segment[position : opening.start()]))
        out.append(segment[opening.start() : closing.end()])
        position = closing.end()
        index = closing_index + 1
    out.append(_escape_text(segment[position:]))
    return "".join(out)


def escape_prose(text: str) -> str:
    """``text`` with raw HTML (``<`` -> ``&lt;``) and cross-references (``#123`` and
    ``owner/repo#123``: ``#`` -> ``&#35;``) escaped outside code blocks and code spans.

    The result is checked with the parser: should any raw HTML remain (a code span the
    scanner misjudged), every ``<`` outside code blocks is escaped, code spans included.
    """
    from engine.triggers import has_raw_html

    escaped = _escape(text, spans=True)
    return escaped if not has_raw_html(escaped) else _escape(text, spans=False)


def _escape(text: str, *, spans: bool) -> str:
    lines = _LINE.findall(text)
    code = _code_block_lines(text)
    out: list[str] = []
    block: list[str] = []

    def flush() -> None:
        if block:
            joined = "".join(block)
            out.append(_escape_outside_spans(joined) if spans else _escape_text(joined))
            block.clear()

    for number, line in enumerate(lines):
        if number in code:
            flush()
            out.append(line)
        elif not line.strip():
            flush()  # a blank line ends a paragraph, so code spans cannot cross it
            out.append(line)
        else:
            block.append(line)
    flush()
    return "".join(out)


def prepare_comment(body: str, handle: str) -> str:
    """What kdev posts for ``body``: :func:`escape_prose`, then :func:`neutralise`."""
    return neutralise(escape_prose(body), handle)


def contains_secret(texts: Iterable[str], secrets: Iterable[str]) -> bool:
    """True when any of ``texts`` holds a secret value (the ledger's canary rule)."""
    values = list(secrets)
    return any(find_secrets(text, values) for text in texts)
