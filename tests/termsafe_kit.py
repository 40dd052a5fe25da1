"""Hostile text for the terminal-safety tests (engine/termsafe.py) and the check that
printed output holds none of it raw."""

from __future__ import annotations

import unicodedata

# Clear the screen; write the clipboard (OSC 52, BEL-terminated); an OSC 8 hyperlink
# (ST-terminated); the 8-bit CSI; bidi override, isolate and mark; a bare CR; a line
# separator; a zero-width space.
HOSTILE = (
    "fix\x1b[2Jthis\x1b]52;c;ZXZpbA==\x07 \x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\"
    " \x9b2J \x9d0;title\x9c \u202eevil\u202c \u2066iso\u2069 \u200f\u061c"
    " over\rwrite \u2028 zero\u200bwidth \x7f"
)
KEPT = frozenset("\t\n\u200c\u200d")


def forbidden(text: str) -> list[str]:
    """The characters of ``text`` a terminal must never receive raw: every control but
    tab and newline, every format character but the joiners, line/paragraph separators,
    lone surrogates."""
    return sorted(
        {
            char
            for char in text
            if char not in KEPT and unicodedata.category(char) in {"Cc", "Cf", "Zl", "Zp", "Cs"}
        }
    )
