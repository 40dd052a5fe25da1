"""One roster reviewer's prompt (roster mode, :mod:`wrapper.review.roster_review`): the
standard prompt over the reviewer's diff blocks only, with its role, instructions and
context inserted before the closing verdict instruction. Below both the roster round and
its size planning (:mod:`wrapper.review.roster_chunks`), which sizes this very prompt."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from wrapper.review.prompt import VERDICT_INSTRUCTION, PromptInput, render_prompt
from wrapper.review.roster import RosterReviewer


def reviewer_prompt(
    reviewer: RosterReviewer,
    data: PromptInput,
    blocks: Mapping[str, str],
    template_path: str | None = None,
    note: str = "",
) -> str:
    """The standard prompt over ``reviewer``'s diff blocks only, with its role,
    instructions and context inserted before the closing verdict instruction (``note``,
    a chunk's part note, D89, just before that instruction)."""
    return prompt_over(reviewer, data, reviewer_diff(reviewer, blocks), template_path, note)


def reviewer_diff(reviewer: RosterReviewer, blocks: Mapping[str, str]) -> str:
    """The diff ``reviewer`` reads: its changed files' blocks, in its order."""
    return "".join(blocks[path] for path in reviewer.changed_files if path in blocks)


def prompt_over(
    reviewer: RosterReviewer,
    data: PromptInput,
    diff: str,
    template_path: str | None = None,
    note: str = "",
) -> str:
    """:func:`reviewer_prompt` over ``diff`` as given (a chunk of the reviewer's diff,
    whose files ``reviewer.changed_files`` names)."""
    standard = render_prompt(dataclasses.replace(data, diff=diff), template_path)
    closing = f"{VERDICT_INSTRUCTION}\n"
    assert standard.endswith(closing)
    scope = reviewer.scope or "the repository root"
    role = [
        f"## Your role in this review: {reviewer.name}",
        "",
        f"You are one of several focused reviewers; your scope is {scope}, and the diff "
        f"above holds only your files: {', '.join(reviewer.changed_files)}. Mark each "
        "finding with its priority at the start of its line: P1 (must fix: broken, "
        "insecure, data loss), P2 (should fix), P3 (nit).",
        "",
        reviewer.instructions,
    ]
    for section in reviewer.context:
        role += ["", f"### Context: {section.title} (from {section.source})", "", section.text]
    return f"{standard[: -len(closing)]}{chr(10).join(role).rstrip()}\n\n{note}{closing}"
