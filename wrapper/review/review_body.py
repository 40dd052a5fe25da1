"""What one review round posts, rendered (issue 27; docs/decisions.md D84). Pure: no I/O.

:func:`render_round` turns a parsed review (:mod:`wrapper.review.findings_contract`) and
its findings' places (:mod:`wrapper.review.anchoring`) into

- the review's summary body: the verdict and the findings' count by severity; the
  disagreement of the reviewer's own verdict line, if any; for a carried-forward round,
  which diff it carries; the files reviewed and those not reviewed, with why; the
  reviewer's summary; and every finding that stands in the summary, with its
  ``path:line``, severity, title, why it is not on a line, and its text;
- the review's line comments, as GitHub's create-review API takes them
  (``path``, ``line``, ``side: RIGHT``, ``start_line``/``start_side`` only for a range,
  ``body``), each body holding the severity, the title, the text and, where anchoring
  allows it, a ```` ```suggestion ```` block with the replacement.

The text is plain Markdown without mentions or HTML; the posting gate
(:mod:`wrapper.post`) neutralises it as every posted body. Reviewer text is kept inside
a container (a blockquote, a list item) or closed off, so an unclosed fence in it cannot
swallow what follows; fences around a replacement are longer than any backtick run in
it. The summary stays under :data:`BODY_BUDGET` characters: the texts of summary
findings are cut to share what is left (to nothing at worst), never their
``path:line``, severity or title.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from markdown_it import MarkdownIt

from wrapper.review.anchoring import Placement
from wrapper.review.findings_contract import SEVERITIES, Finding, ParsedReview

BODY_BUDGET = 50_000  # GitHub takes 65536; the gate's neutralising may lengthen a body
MAX_FILES_LISTED = 100
MAX_FILES_CHARS = 6000
MIN_PROSE = 200
CUT_NOTE = "… (cut)"
_FENCE_ROOM = 16

_BACKTICKS = re.compile(r"`+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_PARSER = MarkdownIt("commonmark")


@dataclass(frozen=True)
class NotReviewed:
    """A file of the diff the reviewer did not see, and why (``binary``, ``too large``)."""

    path: str
    why: str


@dataclass(frozen=True)
class Carried:
    """A carried-forward round: the diff (patch-id) and the head it was reviewed at."""

    patch_id: str
    reviewed_head: str


@dataclass(frozen=True)
class RenderedRound:
    """The review's summary body and its line comments (create-review ``comments``)."""

    body: str
    comments: tuple[dict[str, Any], ...]


def render_round(
    review: ParsedReview,
    placements: Sequence[Placement],
    files_reviewed: Sequence[str],
    files_not_reviewed: Sequence[NotReviewed] = (),
    carried: Carried | None = None,
) -> RenderedRound:
    """The round's summary body and line comments (see the module doc)."""
    comments = tuple(line_comment(p) for p in placements if p.inline)
    head = [_verdict_line(review)]
    if review.contradiction:
        head.append(review.contradiction)
    if carried is not None:
        head.append(carried_line(carried))
    head.append(files_section(files_reviewed, files_not_reviewed))
    if review.mode == "prose":
        return RenderedRound(_with_prose(head, review.summary), comments)
    if review.summary.strip():
        head.append(_quoted(review.summary))
    unplaced = [p for p in placements if not p.inline]
    return RenderedRound(_with_unplaced(head, unplaced), comments)


def carried_line(carried: Carried) -> str:
    """The summary's line for a round posted at a head that carries its diff."""
    return (
        f"Carried forward: this diff (patch-id {code_span(carried.patch_id)}) was "
        f"reviewed at {code_span(carried.reviewed_head)}; its review stands."
    )


def _verdict_line(review: ParsedReview) -> str:
    counts = ", ".join(
        f"{sum(1 for f in review.findings if f.severity == s)} {s}" for s in SEVERITIES
    )
    if review.mode == "prose":
        return f"**Review: {review.verdict}** (prose: no findings in the contract's form)"
    return f"**Review: {review.verdict}** ({counts})"


def files_section(reviewed: Sequence[str], not_reviewed: Sequence[NotReviewed]) -> str:
    lines = [f"Files reviewed ({len(reviewed)}): {_listed([code_span(p) for p in reviewed])}"]
    if not_reviewed:
        items = [f"{code_span(f.path)} ({_one_line(f.why)})" for f in not_reviewed]
        lines.append(f"Files not reviewed ({len(not_reviewed)}): {_listed(items)}")
    return "\n".join(f"- {line}" for line in lines)


def _listed(items: Sequence[str]) -> str:
    if not items:
        return "none"
    shown: list[str] = []
    size = 0
    for item in items[:MAX_FILES_LISTED]:
        if shown and size + len(item) > MAX_FILES_CHARS:
            break
        shown.append(item)
        size += len(item) + 2
    more = len(items) - len(shown)
    return ", ".join(shown) + (f" and {more} more" if more else "")


def _with_prose(head: list[str], prose: str) -> str:
    fixed = "\n\n".join(head) + "\n\n"
    return fixed + _cut(prose, max(MIN_PROSE, BODY_BUDGET - len(fixed)))


def _with_unplaced(head: list[str], unplaced: Sequence[Placement]) -> str:
    fixed = "\n\n".join(head)
    if not unplaced:
        return fixed
    title = f"Findings not on a line ({len(unplaced)}):"
    headers = [_unplaced_header(p) for p in unplaced]
    details = [_unplaced_detail(p.finding) for p in unplaced]
    room = BODY_BUDGET - len(fixed) - len(title) - sum(len(h) + 8 for h in headers)
    share = max(0, room // len(unplaced))
    while True:
        items = [h + _indented(_cut(d, share)) for h, d in zip(headers, details, strict=True)]
        body = f"{fixed}\n\n{title}\n\n" + "\n".join(items)
        if len(body) <= BODY_BUDGET or share == 0:
            return body
        # Indenting lengthens a text of many short lines: shrink the share and retry.
        share = max(0, share * BODY_BUDGET // len(body) - 1)


def _unplaced_header(placement: Placement) -> str:
    finding = placement.finding
    why = placement.detail or placement.reason or "not on a line"
    return (
        f"- **{finding.severity}** {code_span(finding.location)}: "
        f"{_one_line(finding.title)} (not on a line: {_one_line(why)})"
    )


def _unplaced_detail(finding: Finding) -> str:
    parts = [finding.body.strip()] if finding.body.strip() else []
    if finding.replacement is not None:
        parts.append("Proposed replacement:\n\n" + fenced(finding.replacement, "text"))
    return "\n\n".join(parts)


def line_comment(placement: Placement) -> dict[str, Any]:
    """The create-review comment of an inline placement (``start_line`` only when a
    range: strictly below ``line``)."""
    finding = placement.finding
    comment: dict[str, Any] = {"path": finding.path, "line": finding.line, "side": "RIGHT"}
    if placement.kind == "range" and finding.start_line is not None:
        if finding.start_line < finding.line:
            comment["start_line"] = finding.start_line
            comment["start_side"] = "RIGHT"
    comment["body"] = comment_body(finding, placement.suggestion)
    return comment


def comment_body(finding: Finding, suggestion: bool) -> str:
    """A line comment's text: severity and title, the text, then the replacement (a
    ```` ```suggestion ```` when ``suggestion``, else a plain code block)."""
    parts = [f"**{finding.severity}: {_one_line(finding.title)}**"]
    if finding.body.strip():
        parts.append(close_fences(finding.body.strip()))
    if finding.replacement is not None:
        if suggestion:
            parts.append(fenced(finding.replacement, "suggestion"))
        else:
            parts.append("Proposed replacement:\n\n" + fenced(finding.replacement, "text"))
    return "\n\n".join(parts)


def fenced(text: str, info: str) -> str:
    """``text`` in a backtick fence longer than any backtick run in it (at least three):
    CommonMark (and GitHub) closes a fence only with a run at least as long. One
    trailing newline of ``text`` is the fence's own."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    marker = "`" * max(3, longest + 1)
    content = text.removesuffix("\n")
    inner = f"{content}\n" if content or text else ""
    return f"{marker}{info}\n{inner}{marker}"


def code_span(text: str) -> str:
    """``text`` as one inline code span, whatever backticks it holds."""
    text = _CONTROL.sub("?", text)
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    marker = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{marker}{pad}{text}{pad}{marker}"


def close_fences(text: str) -> str:
    """``text`` with a closing fence added when it ends inside a top-level fenced code
    block that it never closes (which would swallow whatever follows it)."""
    if "```" not in text and "~~~" not in text:
        return text  # no fence can open without one of these
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    fences = [t for t in _PARSER.parse(text) if t.type == "fence" and t.level == 0]
    last = fences[-1] if fences else None
    if last is None or last.map is None:
        return text
    closing = lines[last.map[1] - 1].strip() if last.map[1] - 1 > last.map[0] else ""
    char = last.markup[0]
    closed = len(closing) >= len(last.markup) and closing == char * len(closing)
    return text if closed else f"{text}\n{last.markup}"


def _quoted(text: str) -> str:
    return "\n".join(f"> {line}" if line.strip() else ">" for line in text.strip().split("\n"))


def _indented(text: str) -> str:
    if not text:
        return ""
    body = "\n".join(f"  {line}" if line.strip() else "" for line in text.split("\n"))
    return f"\n\n{body}\n"


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    # Room for the note, its blank line and a closing fence of a cut code block.
    keep = max(0, limit - len(CUT_NOTE) - 2 - _FENCE_ROOM)
    return close_fences(text[:keep].rstrip()) + "\n\n" + CUT_NOTE


def _one_line(text: str) -> str:
    return " ".join(_CONTROL.sub(" ", text).split())


def listed(items: Sequence[str]) -> str:
    """``items`` joined with commas, at most MAX_FILES_LISTED and MAX_FILES_CHARS of them,
    the rest counted ("and N more"); "none" for none (a summary's file lists, and
    describe-pr's list of what it did not read, D95)."""
    return _listed(items)
