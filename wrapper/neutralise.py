"""Make text safe to post on GitHub as kdev: no mention that summons kdev, no cross-reference,
no raw HTML.

Why it is built this way: docs/decisions.md D14.

Every body kdev posts goes through :func:`prepare_comment` (that is, :func:`escape_prose`
then :func:`neutralise`, in that order: escaping can turn an HTML block into a paragraph,
whose mentions must then be neutralised too).

- :func:`neutralise` rewrites exactly the mentions that
  :func:`engine.triggers.find_mention` would count into ``&#64;handle``: an ``@`` written as
  an entity is, by the detector's rules, a deliberate non-mention. Code spans, fenced and
  indented code, quotes, HTML and every non-counted ``@`` are left byte-for-byte as they
  were, and the function is idempotent.
- :func:`escape_prose` escapes, outside fenced code, indented code and code spans, every
  ``<`` as ``&lt;`` (no raw HTML or autolink survives) and the ``#`` of every
  cross-reference (``#123``, ``owner/repo#123``) as ``&#35;``. Code is left as it is:
  GitHub renders neither HTML nor references there.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

from engine.triggers import find_mention, prose_lines, validate_handle
from engine.triggers.mention import _mention_re, _parser
from wrapper.ledger import find_secrets

log = logging.getLogger("kdev.neutralise")

AT_ENTITY = "&#64;"
HASH_ENTITY = "&#35;"
LT_ENTITY = "&lt;"

# ``#123`` as GitHub links it: not preceded by a word character (``a#1`` is no
# reference; ``owner/repo#1`` is, through its name, so ``#`` is escaped there too).
_REFERENCE = re.compile(r"#(?=\d)")
_BACKTICKS = re.compile(r"`+")


def _count(body: str, pattern: re.Pattern[str]) -> int:
    return sum(len(pattern.findall(line)) for line in prose_lines(body))


def _at_positions(body: str, handle: str) -> list[int]:
    """Every literal ``@`` of ``body``: those right before the handle first (the usual
    mention), then the rest (a mention may be split by emphasis or an entity letter)."""
    direct = [
        m.start() for m in re.finditer(rf"@(?={re.escape(handle)})", body, flags=re.IGNORECASE)
    ]
    chosen = set(direct)
    return direct + [i for i, char in enumerate(body) if char == "@" and i not in chosen]


def neutralise(body: str, handle: str) -> str:
    """``body`` with each mention of ``@handle`` that the detector counts rewritten as
    ``&#64;handle`` (its ``@`` becomes the entity); everything else is unchanged.

    A literal ``@`` is rewritten only if that lowers the number of counted mentions, so
    an ``@`` in code, in a link target or in a quote is never touched. Idempotent.
    """
    validate_handle(handle)
    if find_mention(body, handle) is None:
        return body
    pattern = _mention_re(handle)
    count = _count(body, pattern)
    rewritten: list[int] = []
    for position in _at_positions(body, handle):
        if count == 0:
            break
        shift = sum(len(AT_ENTITY) - 1 for done in rewritten if done < position)
        at = position + shift
        candidate = body[:at] + AT_ENTITY + body[at + 1 :]
        lowered = _count(candidate, pattern)
        if lowered < count:
            body, count = candidate, lowered
            rewritten.append(position)
    if find_mention(body, handle) is not None:  # pragma: no cover - a safety net only
        log.warning("neutralise: a mention survived; rewriting every '@' of the body")
        body = body.replace("@", AT_ENTITY)
    return body


def _code_block_lines(body: str) -> set[int]:
    """0-based line numbers of fenced and indented code blocks (fences included)."""
    lines: set[int] = set()
    for token in _parser().parse(body):
        if token.type in ("fence", "code_block") and token.map is not None:
            start, end = token.map
            lines.update(range(start, end))
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


def has_html(text: str) -> bool:
    """True when CommonMark finds raw HTML (a block, inline HTML or an autolink) in ``text``."""
    for token in _parser().parse(text):
        if token.type == "html_block":
            return True
        for child in token.children or []:
            if child.type == "html_inline" or (
                child.type == "link_open" and child.markup == "autolink"
            ):
                return True
    return False


def escape_prose(text: str) -> str:
    """``text`` with raw HTML (``<`` -> ``&lt;``) and cross-references (``#123`` and
    ``owner/repo#123``: ``#`` -> ``&#35;``) escaped outside code blocks and code spans.

    The result is checked with the parser: should any raw HTML remain (a code span the
    scanner misjudged), every ``<`` outside code blocks is escaped, code spans included.
    """
    escaped = _escape(text, spans=True)
    return escaped if not has_html(escaped) else _escape(text, spans=False)


def _escape(text: str, *, spans: bool) -> str:
    lines = text.splitlines(keepends=True)
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
