"""The strict grammar of a reviewer's verdict (issue 10 item 7).

The prompt (:data:`wrapper.review.prompt.VERDICT_INSTRUCTION`) asks for exactly one line
``VERDICT: APPROVE`` or ``VERDICT: REQUEST_CHANGES`` at the end, and nothing after it. It
asks for no header, so the end is the only place a verdict may stand. The output is read
as CommonMark (markdown-it-py) and a verdict is accepted only when:

- the last non-empty line is a verdict line (``VERDICT:``, optional spaces, one of the
  two words, nothing else on the line);
- that line is not quoted: not inside a fenced or indented code block, a blockquote
  (lazy continuation lines included) or a raw HTML block;
- no other unquoted verdict line disagrees with it.

Verdict lines inside quoted blocks are ignored wherever they are; anything else (no
verdict, a quoted last line, a trailing ``` fence, two unquoted verdicts that disagree)
is ``None``, which the reviewer turns into ``no_verdict`` (a failure), never a guess.
"""

from __future__ import annotations

import re

from markdown_it import MarkdownIt

VERDICTS = ("APPROVE", "REQUEST_CHANGES")
VERDICT_LINE = re.compile(r"^\s*VERDICT:\s*(APPROVE|REQUEST_CHANGES)\s*$")
# Block tokens whose lines are quoted material, never the reviewer's own verdict.
_QUOTED_BLOCKS = {"fence", "code_block", "html_block"}
_QUOTE_OPEN = "blockquote_open"

_PARSER = MarkdownIt("commonmark")


def _quoted_lines(text: str) -> set[int]:
    """0-based numbers of the lines inside code blocks, HTML blocks and blockquotes."""
    quoted: set[int] = set()
    for token in _PARSER.parse(text):
        if token.map is None:
            continue
        if token.type in _QUOTED_BLOCKS or token.type == _QUOTE_OPEN:
            start, end = token.map
            quoted.update(range(start, end))
    return quoted


def parse_verdict(text: str) -> str | None:
    """``APPROVE`` or ``REQUEST_CHANGES`` when ``text`` ends with an unquoted verdict
    line that no other unquoted verdict line contradicts; else None (see the module doc).
    """
    # markdown-it counts lines after normalising newlines the same way.
    normalised = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = normalised.split("\n")
    non_empty = [number for number, line in enumerate(lines) if line.strip()]
    if not non_empty:
        return None
    last = non_empty[-1]
    if VERDICT_LINE.match(lines[last]) is None:
        return None
    quoted = _quoted_lines(normalised)
    if last in quoted:
        return None
    found = {
        match.group(1)
        for number, line in enumerate(lines)
        if number not in quoted and (match := VERDICT_LINE.match(line)) is not None
    }
    return found.pop() if len(found) == 1 else None
