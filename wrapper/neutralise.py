"""Make text safe to post on GitHub as kdev: no mention that pings anyone the operator did
not list, no cross-reference, no raw HTML.

Why it is built this way: docs/decisions.md D14, D26 and D69.

Every body kdev posts goes through :func:`prepare_comment` (that is, :func:`escape_prose`
then :func:`neutralise`, in that order: escaping can turn an HTML block or comment into
a paragraph, whose mentions must then be neutralised too), and the gate checks the final
text once more with :func:`refuse_live_pings`.

- :func:`neutralise` rewrites the sign of every mention (``@login``, ``@org/team``) and
  every cross-reference (``#123``, ``GH-123``, ``owner/repo#123``, ``user@sha``) that
  :func:`engine.triggers.pings` finds in the rendered text (cmark-gfm, the way GitHub
  renders, entities decoded) into the sign followed by ``&#8203;`` (a zero-width space,
  decoded by GitHub into the text node, so the name no longer follows the sign): so
  ``@&#8203;login``, ``#&#8203;123``, ``GH-&#8203;123``. However the source spells the
  sign (``@``, ``\\@``, ``&#64;``, ``&#x40;``, ``&commat;``, fullwidth ``\uff20``, ``&#35;``,
  ``&num;``, ...), it is found through the rendering. A rewrite is kept only if it lowers
  the number of live pings and changes nothing in the rendering but the added zero-width
  spaces, so code, link targets and every sign that links nothing stay byte-for-byte.
  Exempt: the names of ``allow`` (``mention_allow``; never ``mention_handle``), and every
  reference when ``references`` is true (``allow_references``). Idempotent.
- :func:`escape_prose` escapes, outside fenced code, indented code and code spans, every
  ``<`` as ``&lt;`` (no raw HTML or autolink survives). Code is left as it is: GitHub
  renders no HTML there. Code blocks are located with cmark-gfm's source positions.
"""

from __future__ import annotations

import html
import logging
import re
from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING, TypedDict, Unpack

from wrapper.errors import KdevError
from wrapper.ledger.ledger import find_secrets

if TYPE_CHECKING:
    from engine.triggers import Ping

log = logging.getLogger("kdev.neutralise")

NEUTRAL_AT = "@&#8203;"
"""What a counted ``@`` becomes: ``@`` then a zero-width space (as Renovate does)."""
LT_ENTITY = "&lt;"
LIVE_PING = "live_ping"
"""Reason code: a mention or reference survived neutralising (nothing is posted)."""
ZWSP_ENTITY = "&#8203;"
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


def _neutralise_handle(body: str, handle: str) -> str:
    """``body`` with each mention of ``@handle`` that the trigger detector counts
    rewritten as ``@&#8203;handle`` (after :func:`neutralise`'s general pass, a second
    net with the detector that decides what summons kdev)."""
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
        log.warning(
            "neutralise: a mention survived; rewriting every '@' of the body"
        )  # pragma: no cover
        body = _AT_SPELLINGS.sub(NEUTRAL_AT, body)
    return body


# Every spelling of each sign, by the sign it decodes to (the sign is what is rewritten).
_SIGNS = re.compile(
    r"(?P<at>@|&#0*64;|&#[xX]0*40;|&commat;)"
    r"|(?P<wide_at>\uff20|&#0*65312;|&#[xX]0*[fF][fF]20;)"
    r"|(?P<small_at>\ufe6b|&#0*65131;|&#[xX]0*[fF][eE]6[bB];)"
    r"|(?P<hash>#|&#0*35;|&#[xX]0*23;|&num;)"
    r"|(?P<wide_hash>\uff03|&#0*65283;|&#[xX]0*[fF][fF]0*3;)"
    r"|(?P<dash>-|&#0*45;|&#[xX]0*2[dD];)"
)
_SIGN_CHARS = {
    "at": "@", "wide_at": "\uff20", "small_at": "\ufe6b",
    "hash": "#", "wide_hash": "\uff03", "dash": "-",
}  # fmt: skip
_INNER_HASH = re.compile(r"(?<=&)#(?!8203;)")
_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]+")
_DIRECT = re.compile(r"[A-Za-z0-9]|&#|\\|&[a-zA-Z]")


class _Ping:
    """Which pings of a body are live for one set of exemptions."""

    def __init__(self, handle: str | None, allow: Collection[str], references: bool) -> None:
        from engine.triggers import validate_handle, validate_mention_name

        own = validate_handle(handle).lower() if handle else None
        self.allowed = {validate_mention_name(name).lower() for name in allow} - {own}
        self.references = references

    def is_live(self, ping: Ping) -> bool:
        if ping.kind == "mention":
            return ping.name.lower() not in self.allowed
        return not self.references

    def live(self, body: str) -> list[str]:
        """The names (``@login``, ``#1``, ...) of every live ping of ``body``."""
        from engine.triggers import pings

        return [
            f"@{p.name}" if p.kind == "mention" else p.name for p in pings(body) if self.is_live(p)
        ]

    def count(self, body: str) -> int:
        """How many signs of ``body`` start a live ping."""
        from engine.triggers import pings

        return len({ping.at for ping in pings(body) if self.is_live(ping)})


def _meaning(body: str) -> str:
    """What ``body`` renders to, entities decoded and zero-width spaces dropped: a
    rewrite that only adds zero-width spaces to text leaves it as it is."""
    from engine.triggers import NEUTRAL_SPACE, render

    return html.unescape(render(body)).replace(NEUTRAL_SPACE, "")


Spot = tuple[int, int, str]
"""A spelling of a sign in the source: ``(start, end, sign)``."""


def _candidates(body: str) -> list[Spot]:
    """Every spelling of a sign that could start a ping and is not neutral yet, the
    ones right before a name first. A ``-`` counts only after ``gh`` (``GH-123``),
    however the letters are dressed."""
    direct: list[Spot] = []
    rest: list[Spot] = []
    for match in _SIGNS.finditer(body):
        kind = match.lastgroup or "at"
        end = match.end()
        if body.startswith(ZWSP_ENTITY, end) or body.startswith("\u200b", end):
            continue
        if kind == "dash":
            before = html.unescape(body[max(0, match.start() - 40) : match.start()])
            if not _NOT_ALNUM.sub("", before).lower().endswith("gh"):
                continue
        spot = (match.start(), end, _SIGN_CHARS[kind])
        (direct if _DIRECT.match(body, end) else rest).append(spot)
    return direct + rest


def _apply(body: str, spots: Iterable[Spot]) -> str:
    """``body`` with each of ``spots`` (not overlapping) rewritten as its sign then
    ``&#8203;``."""
    out: list[str] = []
    position = 0
    for start, end, sign in sorted(spots):
        out.append(body[position:start] + sign + ZWSP_ENTITY)
        position = end
    return "".join(out) + body[position:]


def neutralise(
    body: str,
    handle: str | None = None,
    *,
    allow: Collection[str] = (),
    references: bool = False,
) -> str:
    """``body`` with the sign of every live mention and cross-reference rewritten as
    the sign then ``&#8203;`` (see the module doc); ``handle`` (kdev's own) is never
    exempt, and its mentions as the trigger detector counts them are rewritten too.

    Raises KdevError ``live_ping`` when a ping survives every rewrite (fail closed)."""
    checker = _Ping(handle, allow, references)
    if checker.count(body):
        body = _rewrite(body, checker)
    if handle is not None:
        body = _neutralise_handle(body, handle)
    refuse_live_pings(body, handle, allow=allow, references=references)
    return body


def _rewrite(body: str, checker: _Ping) -> str:
    """Three passes, each only as slow as the one before it failed: the signs that
    start a live ping, found in one rendering (each sign's spelling replaced by a
    private-use marker); the meaning kept, group by group; then one sign at a time
    (at most :data:`MAX_TRIALS`); last, every candidate sign at once."""
    meaning = _meaning(body)
    spots = sorted(_candidates(body))
    chosen = _marked_live(body, checker, spots)
    body = _keep_meaning(body, [spots[i] for i in sorted(chosen)], meaning)
    count = checker.count(body)
    if count:
        body, count = _one_at_a_time(body, checker, count, meaning)
    if count:  # pragma: no cover - a safety net only
        log.warning("neutralise: %s ping(s) survived; rewriting every sign of the body", count)
        body = _apply(body, _candidates(body))
    return body


MAX_TRIALS = 200
"""One-sign trials :func:`neutralise` makes before rewriting every candidate sign."""
# Markers come from a private-use plane the body does not use (65534 code points each).
_MARK_PLANES = (0xF0000, 0x100000)


def _marked_live(body: str, checker: _Ping, spots: list[Spot]) -> set[int]:
    """The indexes of ``spots`` that start a live ping: every spot replaced by its own
    marker, rendered once, each marker read back as its sign. Every spot when markers
    cannot be used (too many spots, or the body uses both private-use planes)."""
    from engine.triggers import linkable_runs, scan_pings

    free = [b for b in _MARK_PLANES if not any(b <= ord(ch) <= b + 0xFFFD for ch in body)]
    if len(spots) > 0xFFFD or not free:
        return set(range(len(spots)))
    base = free[0]
    marks = re.compile(f"[{chr(base)}-{chr(base + 0xFFFD)}]")
    pieces: list[str] = []
    position = 0
    for index, (start, end, _sign) in enumerate(spots):
        pieces += [body[position:start], chr(base + index)]
        position = end
    marked = "".join(pieces) + body[position:]

    def sign(match: re.Match[str]) -> str:
        return spots[ord(match.group()) - base][2]

    chosen: set[int] = set()
    for run in linkable_runs(marked):
        for text in [*run, "".join(run)]:
            for ping in scan_pings(marks.sub(sign, text)):
                if checker.is_live(ping) and marks.match(text, ping.at):
                    chosen.add(ord(text[ping.at]) - base)
    return chosen


def _keep_meaning(body: str, spots: list[Spot], meaning: str) -> str:
    """``body`` with ``spots`` rewritten, but for those whose rewrite changes the
    meaning (a marker can render otherwise than its sign): groups are halved until
    each rewrite kept leaves the meaning as it is."""
    kept: list[Spot] = []

    def attempt(group: list[Spot]) -> None:
        if not group:
            return
        if _meaning(_apply(body, kept + group)) == meaning:
            kept.extend(group)
        elif len(group) > 1:
            attempt(group[: len(group) // 2])
            attempt(group[len(group) // 2 :])

    attempt(spots)
    return _apply(body, kept)


def _one_at_a_time(body: str, checker: _Ping, count: int, meaning: str) -> tuple[str, int]:
    """Each candidate sign in text order (the ``#`` inside a character reference too,
    which a backslash before its ``&`` leaves as text) rewritten alone, kept if that
    lowers ``count`` and keeps the meaning; at most :data:`MAX_TRIALS` trials. Returns
    the body and its count."""
    resume = 0
    for _trial in range(MAX_TRIALS):
        spots = _candidates(body) + [(m.start(), m.end(), "#") for m in _INNER_HASH.finditer(body)]
        spot = min((s for s in spots if s[0] >= resume), default=None)
        if count == 0 or spot is None:
            break
        start, end, sign = spot
        candidate = body[:start] + sign + ZWSP_ENTITY + body[end:]
        lowered = checker.count(candidate)
        if lowered < count and _meaning(candidate) == meaning:
            body, count = candidate, lowered
        resume = start + 1
    return body, count


def mentions_in(text: str) -> list[str]:
    """The logins and teams ``text`` mentions (an operator's own text, such as a review
    bot's configured trigger: the names its post may ping)."""
    from engine.triggers import pings

    return sorted({ping.name for ping in pings(text) if ping.kind == "mention"})


def refuse_live_pings(
    body: str,
    handle: str | None,
    *,
    allow: Collection[str] = (),
    references: bool = False,
) -> None:
    """Raise KdevError ``live_ping`` when ``body`` (the final text, as it is posted)
    still mentions or references anything not exempt, or mentions ``handle`` the way
    the trigger detector counts it."""
    from engine.triggers import find_mention

    live = _Ping(handle, allow, references).live(body)
    if handle is not None and find_mention(body, handle) is not None:
        live.append(f"@{handle}")
    if live:
        shown = ", ".join(sorted(set(live))[:5])
        raise KdevError(
            f"the text to post still links {len(live)} mention(s) or reference(s) "
            f"({shown}); nothing was posted",
            LIVE_PING,
        )


def _code_block_lines(body: str) -> set[int]:
    """0-based line numbers of fenced and indented code blocks (fences included), from
    the source positions cmark-gfm gives each ``<pre>``."""
    from engine.triggers import render

    lines: set[int] = set()
    for match in _PRE_SOURCEPOS.finditer(render(body, sourcepos=True)):
        lines.update(range(int(match.group(1)) - 1, int(match.group(2))))
    return lines


def _escape_text(text: str) -> str:
    return text.replace("<", LT_ENTITY)


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


class Exempt(TypedDict, total=False):
    """What :func:`neutralise` leaves live, by keyword (its signature holds the defaults)."""

    allow: Collection[str]
    references: bool


def prepare_comment(body: str, handle: str | None, **exempt: Unpack[Exempt]) -> str:
    """What kdev posts for ``body``: :func:`escape_prose`, then :func:`neutralise`."""
    return neutralise(escape_prose(body), handle, **exempt)


def contains_secret(texts: Iterable[str], secrets: Iterable[str]) -> bool:
    """True when any of ``texts`` holds a secret value (the ledger's canary rule)."""
    values = list(secrets)
    return any(find_secrets(text, values) for text in texts)
