"""Text made safe for a terminal: what li and the wrapper print for people passes here.

Both programs print text that others wrote: PR titles, comment bodies, logins, branch
and check names from GitHub, and the output tails of the commands a schedule ran. Such
text can carry terminal controls: CSI sequences that clear the screen or move the
cursor, OSC 52 (write the clipboard), OSC 8 (hyperlinks), the 8-bit C1 forms of both
(U+009B, U+009D), and bidi controls that reorder what the operator reads.

:func:`terminal_safe` escapes them *visibly*, so the operator sees that something was
there (and where), instead of silently dropping it:

- a C0 control other than tab and newline, and DEL: caret notation as ``cat -v``
  shows it (ESC ``^[``, BEL ``^G``, NUL ``^@``, DEL ``^?``); a carriage return is
  ``^M`` (a bare CR would let the rest of a line overwrite its start), except in
  ``\\r\\n``, which is printed as a newline;
- every other control or invisible format character: ``\\uXXXX`` (``\\UXXXXXXXX``
  beyond the BMP): the C1 controls U+0080..U+009F, every format character (Unicode
  category Cf: the bidi embeddings, overrides and isolates U+202A..U+202E and
  U+2066..U+2069, the marks U+200E, U+200F and U+061C, zero-width spaces, U+FEFF, the
  tag characters), the line and paragraph separators U+2028 and U+2029, and lone
  surrogates (which could not be written at all);
- kept as they are: tab, newline, the zero-width non-joiner and joiner (U+200C,
  U+200D: Persian and Indic spelling, emoji sequences; they neither reorder nor
  control anything), and every printable character.

With ESC escaped no CSI, OSC, DCS or APC sequence can start, so none needs parsing. The
escaping is for reading, not a reversible encoding (a literal ``^[`` in the text looks
the same); ``--json`` output is the exact data: ``json.dumps`` writes every non-ASCII
and control character as a ``\\u`` escape, so it holds no raw control either.
"""

from __future__ import annotations

import re
import unicodedata

import typer

_KEPT = frozenset("\u200c\u200d")
_ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
# Everything but tab, newline and printable ASCII is a candidate; CRLF is one match.
_CANDIDATE = re.compile(r"\r\n|[^\t\n\x20-\x7e]")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char == "\r\n":
        return "\n"
    code = ord(char)
    if code < 0x20 or code == 0x7F:
        return "^" + chr(code ^ 0x40)
    if char in _KEPT or unicodedata.category(char) not in _ESCAPED_CATEGORIES:
        return char
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def terminal_safe(text: str) -> str:
    """``text`` with every terminal control and invisible format character escaped
    visibly (see the module doc); printable text, tabs and newlines unchanged."""
    if text.isascii() and text.isprintable():
        return text  # the common case: nothing to look at
    return _CANDIDATE.sub(_escape, text)


def echo(message: str = "", *, err: bool = False, nl: bool = True) -> None:
    """``typer.echo`` of ``message`` made :func:`terminal_safe`: the one way li and the wrapper
    print human-readable text that may hold someone else's words."""
    typer.echo(terminal_safe(message), err=err, nl=nl)
