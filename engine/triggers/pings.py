"""Every mention of any login or team, and every cross-reference, that GitHub would link
in a comment body, the pure part.

Where :mod:`engine.triggers.mention` asks "does this body summon one handle?" (prose only,
quotes excluded), :func:`pings` asks "whom and what would this body link?", so it is
deliberately broader than GitHub, never narrower:

- The body is rendered with :func:`engine.triggers.render` (cmark-gfm, GitHub's parser)
  and walked with :mod:`html.parser`, entities decoded. Text with an ``a``, ``code``,
  ``pre``, ``script``, ``style`` or ``textarea`` ancestor never links (GitHub's mention
  filter skips ``pre``, ``code`` and ``a``); quotes do link, so they are read.
- Each text node is read alone (as GitHub's filter reads it) and also joined with its
  neighbours across inline emphasis (``@<em>x</em>``), in case a renderer joins them.
- A *mention* is ``@`` (or the fullwidth ``\\uff20`` and small ``\\ufe6b`` forms, which
  GitHub does not link, read anyway) not preceded by an ASCII word character (GitHub's
  ``\\W`` is ASCII), then any invisible format characters (soft hyphen, zero-width
  characters, word joiner, BOM, bidi controls), then a login run
  ``[A-Za-z0-9][A-Za-z0-9-]*`` and an optional ``/team-slug``. Invisible characters
  inside the name give two pings at one sign: the name as GitHub reads it (up to the
  first of them: ``@al\u2060ice`` pings ``al``) and the name without them (``alice``).
  The one exception is an ``@`` followed directly by U+200B ZERO WIDTH SPACE: that is
  the neutral form (``@&#8203;login``), linked by nobody.
- A *reference* is ``#`` (or fullwidth ``\\uff03``) before a digit (``#123``,
  ``owner/repo#123``), ``GH-`` before a digit, or ``@`` right after a word character
  before 7 to 40 hex digits (``user@sha``, ``owner/repo@sha``), the forms of GitHub's
  "Autolinked references and URLs"; again a U+200B right after the sign is neutral.
  Bare commit SHAs and full URLs are not references here (they neither notify nor
  put anything in another issue's timeline through a short form).

Public API: :func:`pings` with :class:`Ping`, its two halves :func:`linkable_runs` and
:func:`scan_pings`, :func:`validate_mention_name`, :func:`mention_names_problem` and
:data:`NEUTRAL_SPACE`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from html.parser import HTMLParser

from engine.errors import InvalidInput
from engine.triggers.mention import OpenTags, render

INVALID_MENTION_NAME = "invalid_mention_name"
NEUTRAL_SPACE = "\u200b"
"""The character right after a sign (``@``, ``#``, ``-``) that makes it link nothing."""

# Invisible format characters a name may hide behind (not U+200B right after the sign).
INVISIBLE = (
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\U000e0000-\U000e007f"
)
_HIDE = f"[{INVISIBLE}]*"
_LIVE = f"(?!{NEUTRAL_SPACE})"
_MENTION = re.compile(
    rf"(?<![A-Za-z0-9_])[@\uff20\ufe6b]{_LIVE}{_HIDE}"
    rf"(?P<name>[A-Za-z0-9][A-Za-z0-9{INVISIBLE}-]*(?:/[A-Za-z0-9_.{INVISIBLE}-]*)?)"
)
# The name as GitHub reads it: the login run and a team slug, up to the first invisible.
# A "/" after the login keeps it (``@alice/`` is no mention of alice, so never exempt).
_SHOWN = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*(?:/[A-Za-z0-9_.-]*)?")
_INVISIBLE = re.compile(f"[{INVISIBLE}]+")
_REFERENCES = (
    re.compile(rf"[#\uff03]{_LIVE}{_HIDE}\d"),
    re.compile(rf"(?i:gh)-{_LIVE}{_HIDE}\d"),
    re.compile(rf"(?<=[A-Za-z0-9_.-])@{_LIVE}{_HIDE}[0-9A-Fa-f]{{7,40}}(?![A-Za-z0-9_])"),
)
# The sign of each reference pattern is its first character but for "GH-" (the third).
_SIGN_AT = (0, 2, 0)
_LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}")
_TEAM = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,98}[A-Za-z0-9_-])?")
_SKIPPED = frozenset({"a", "code", "pre", "script", "style", "textarea"})
_INLINE = frozenset({"em", "strong", "del", "s", "strike", "b", "i", "u", "span", "sub", "sup"})
_VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
     "param", "source", "track", "wbr"}
)  # fmt: skip


@dataclass(frozen=True)
class Ping:
    """One thing a body links: ``kind`` is ``"mention"`` (``name`` a login or
    ``org/team``, as written) or ``"reference"`` (``name`` the matched text); ``at`` is
    where its sign sits in the body's linkable text (two pings at one ``at`` share a
    sign, so neutralising that sign ends both)."""

    kind: str
    name: str
    at: int


def validate_mention_name(value: object) -> str:
    """``value`` if it is a login or ``org/team-slug`` (without ``@``); raises
    :class:`InvalidInput` (``invalid_mention_name``) otherwise."""
    if isinstance(value, str):
        org, slash, team = value.partition("/")
        if _LOGIN.fullmatch(org) and (not slash or _TEAM.fullmatch(team)):
            return value
    raise InvalidInput(
        f"{value!r} is neither a GitHub login nor org/team (give it without '@')",
        INVALID_MENTION_NAME,
    )


def mention_names_problem(names: Iterable[object], own: str | None = None) -> str | None:
    """Why ``names`` cannot be exempt from neutralising (one line), or None: a name is not
    a login or ``org/team``, or is ``own`` (the own handle is never exempt)."""
    for name in names:
        try:
            validate_mention_name(name)
        except InvalidInput as exc:
            return exc.message
        if own and str(name).lower() == own.lower():
            return f"{name!r} is the own handle, which is never exempt"
    return None


class _Runs(HTMLParser):
    """Linkable text of a rendered body: runs of text nodes joined across inline tags."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.runs: list[list[str]] = [[]]
        self.tags = OpenTags(_SKIPPED)

    def _break(self) -> None:
        if self.runs[-1]:
            self.runs.append([])

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _VOID:
            self._break()
            return
        if tag not in _INLINE:
            self._break()
        self.tags.open(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._break()

    def handle_endtag(self, tag: str) -> None:
        if not self.tags.close(tag):
            return
        if tag not in _INLINE:
            self._break()

    def handle_data(self, data: str) -> None:
        if self.tags.inside:
            self._break()
        else:
            self.runs[-1].append(data)

    def handle_comment(self, data: str) -> None:
        self._break()

    def handle_decl(self, decl: str) -> None:
        self._break()

    def handle_pi(self, data: str) -> None:
        self._break()

    def unknown_decl(self, data: str) -> None:
        self._break()


def linkable_runs(body: str) -> list[list[str]]:
    """The text GitHub could link in ``body`` as rendered: runs of text nodes (each a
    list of the nodes' decoded texts) that only inline emphasis separates."""
    parser = _Runs()
    parser.feed(render(body))
    parser.close()
    return [run for run in parser.runs if run]


def scan_pings(text: str, base: int = 0) -> list[Ping]:
    """The pings of one piece of linkable text (``at``: ``base`` plus the sign's index)."""
    found: list[Ping] = []
    for match in _MENTION.finditer(text):
        raw = match.group("name")
        shown = _SHOWN.match(raw)
        # As GitHub reads it, and as it reads once invisible characters are dropped.
        names = {_INVISIBLE.sub("", raw), shown.group() if shown else raw}
        for name in sorted(names):
            found.append(Ping("mention", name.rstrip("."), base + match.start()))
    for pattern, sign in zip(_REFERENCES, _SIGN_AT, strict=True):
        for match in pattern.finditer(text):
            found.append(Ping("reference", match.group(), base + match.start() + sign))
    return found


def pings(body: str) -> list[Ping]:
    """Every mention and reference GitHub could link in ``body`` (see the module doc),
    in text order; each text node alone and joined across inline emphasis."""
    found: dict[tuple[str, str, int], Ping] = {}
    base = 0
    for run in linkable_runs(body):
        offset = base
        for node in run:
            for ping in scan_pings(node, offset):
                found.setdefault((ping.kind, ping.name, ping.at), ping)
            offset += len(node)
        for ping in scan_pings("".join(run), base):
            found.setdefault((ping.kind, ping.name, ping.at), ping)
        base = offset + 1  # runs never touch
    return sorted(found.values(), key=lambda ping: ping.at)
