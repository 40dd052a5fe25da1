"""What ``kdev describe-pr`` reads of a diff over the prompt limit (issue 28, D95). Pure.

A description is one text, asked for by a person and posted as one comment, so it is one
leg whatever the diff's size: :func:`plan_describe` keeps the diff whole when the prompt
fits the limit, and otherwise reads as many whole files as fit, in the diff's order
(a file too big for what is left is skipped, never cut), and names every other changed
file with its added and removed line counts. The prompt says which files it holds only
the names of (:func:`unread_note`), and the posted description says so too
(:func:`unread_footer`): never a silent truncation, never a prompt over the limit. A
limit too small even for the names of the files is refused (``budget_too_small``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from wrapper.refusal import Refusal
from wrapper.review.chunking import BUDGET_TOO_SMALL, sections
from wrapper.review.exclusions import Decision, format_exclusions
from wrapper.review.prompt import fence
from wrapper.review.review_body import code_span, listed
from wrapper.review.sizing import Limit, estimate_span, estimate_tokens

UNREAD_NOTE = (
    "The diff above holds only some of the pull request's changed files: the whole diff "
    "is over the prompt limit. These changed files are not in it (path, then lines added "
    "and removed); describe them from their names only, and say that you did:\n\n"
)


@dataclass(frozen=True)
class Unread:
    """A changed file the describer gets only the name of, with its line counts."""

    path: str
    added: int
    removed: int

    @property
    def line(self) -> str:
        return f"{self.path} (+{self.added} -{self.removed})"


@dataclass(frozen=True)
class DescribePlan:
    """The diff the describer reads, the files it does not, and the diff's estimate."""

    diff: str
    unread: tuple[Unread, ...]
    files: int
    total_tokens: int
    limit: Limit


@dataclass(frozen=True)
class DescribeRefusal(Refusal):
    """Why no describe prompt fits the limit."""

    WHAT = "the description's prompt cannot fit the prompt limit"


def unread_note(unread: Sequence[Unread]) -> str:
    """The prompt's note naming the files not in its diff (the author's paths, fenced)."""
    if not unread:
        return ""
    listing = "".join(f"- {item.line}\n" for item in unread)
    return f"{UNREAD_NOTE}{fence(listing, 'files')}\n\n"


def _unread(diff: str, path: str, start: int, end: int) -> Unread:
    """``path``'s lines added and removed: its hunk lines from ``start`` to ``end``."""
    return Unread(path, diff.count("\n+", start, end), diff.count("\n-", start, end))


def plan_describe(diff: str, limit: Limit, overhead: int) -> DescribePlan | DescribeRefusal:
    """What the describer reads of ``diff`` under ``limit`` with ``overhead`` tokens of
    prompt without it (see the module doc). Raises DiffError on an unreadable diff."""
    total = estimate_tokens(diff)
    found = list(sections(diff))
    if overhead + total <= limit.tokens:
        return DescribePlan(diff, (), len(found), total, limit)
    every = [_unread(diff, s.path, s.header_end - 1, s.end) for s in found]
    room = limit.tokens - overhead - estimate_tokens(unread_note(every))
    if room < 0:
        detail = f"the names of the diff's {len(found)} files leave no room for any diff"
        return DescribeRefusal(BUDGET_TOO_SMALL, detail)
    kept: list[str] = []
    unread: list[Unread] = []
    for section, item in zip(found, every, strict=True):
        tokens = estimate_span(diff, section.start, section.end)
        if tokens <= room:
            kept.append(diff[section.start : section.end])
            room -= tokens
        else:
            unread.append(item)
    return DescribePlan("".join(kept), tuple(unread), len(found), total, limit)


def unread_footer(plan: DescribePlan | None, excluded: Sequence[Decision]) -> str:
    """The posted description's last lines: every changed file it did not read, and why
    (an exclusion's rule, or the prompt limit); empty when it read them all."""
    lines: list[str] = []
    shown = format_exclusions(excluded)
    if shown:
        lines.append(f"- Excluded ({len(shown)}): {listed([code_span(s) for s in shown])}")
    if plan is not None and plan.unread:
        items = [code_span(item.line) for item in plan.unread]
        lines.append(
            f"- Over the prompt limit, named to the describer without their diff "
            f"({len(plan.unread)} of {plan.files} files; the diff's estimated "
            f"{plan.total_tokens} tokens, a {plan.limit.tokens}-token limit, "
            f"{plan.limit.source}; size_policy sets it): {listed(items)}"
        )
    if not lines:
        return ""
    return "\n\n**Not read for this description:**\n\n" + "\n".join(lines) + "\n"
