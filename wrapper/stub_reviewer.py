"""A deterministic stand-in reviewer for the demo and the tests (no model, no network).

``python -m wrapper.stub_reviewer [PROMPT_FILE]`` reads the prompt from PROMPT_FILE or
stdin, finds the diff block (the ``untrusted-diff`` fence of :mod:`wrapper.review.prompt`; the
whole input when there is none), prints a short review and ends with
``VERDICT: REQUEST_CHANGES`` when the diff contains ``TODO`` or ``FIXME``, else
``VERDICT: APPROVE``.

When the prompt (outside its diff) asks for the findings contract's block (D86), the
review is one ``kdev-findings`` block instead: a P2 finding on each added line holding a
marker, at its head-side line, with that line (the marker replaced by ``DONE``) as its
replacement, and the verdict line after it.

Environment (allow-list these names in ``reviewer_env`` so they reach the stub):

- ``KDEV_STUB_SLEEP``: seconds (float) to sleep first, for concurrency and timeout tests
- ``KDEV_STUB_EXIT``: exit with this code, printing no verdict, for failure tests
- ``KDEV_STUB_PROMPTS``: a directory each prompt is also written to (``prompt-N.txt``),
  for tests that check what each leg was sent (chunked rounds, D89)
- ``KDEV_STUB_USAGE``: ``claude-json``, ``codex-jsonl`` or ``gemini-json``: print the
  review inside that CLI's JSON envelope with the fixed usage of :data:`STUB_USAGE`
  (docs/reviewers.md "Usage and cost"; the reviewer's ``usage`` names the same format)

Prefer ``python -P -m wrapper.stub_reviewer``: the reviewer's working directory is the
PR's worktree, and ``-P`` keeps Python from importing modules from it.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Sequence

MARKERS = ("TODO", "FIXME")
_DIFF_OPEN = re.compile(r"^(`{3,})untrusted-diff[ \t]*$")
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")
FINDINGS_ASK = "info string is `kdev-findings`"
# What the stub says it spent, in every envelope: prompt tokens (uncached, read from the
# cache, written to it), answer tokens, and Claude's reported cost in USD.
STUB_USAGE: dict[str, int | str] = {
    "input": 3000,
    "cache_read": 9000,
    "cache_write": 500,
    "output": 700,
    "cost_usd": "0.0417325",
}


def diff_section(prompt: str) -> str:
    """The text inside the prompt's ``untrusted-diff`` fence, or all of ``prompt``."""
    lines = prompt.splitlines()
    for start, line in enumerate(lines):
        opened = _DIFF_OPEN.match(line)
        if opened is None:
            continue
        closing = opened.group(1)
        inside: list[str] = []
        for candidate in lines[start + 1 :]:
            if candidate.strip() == closing:
                break
            inside.append(candidate)
        return "\n".join(inside)
    return prompt


def stub_review(prompt: str) -> str:
    """The stub's whole output for ``prompt``; the last line is the verdict."""
    diff = diff_section(prompt)
    findings = [
        f"- line {number}: {marker} left in the change"
        for number, line in enumerate(diff.splitlines(), start=1)
        for marker in MARKERS
        if marker in line
    ]
    summary = f"Stub review of {len(diff.splitlines())} diff lines."
    if findings:
        return "\n".join([summary, "", "Must change:", *findings, "", "VERDICT: REQUEST_CHANGES"])
    return "\n".join([summary, "", "No TODO or FIXME markers found.", "", "VERDICT: APPROVE"])


def asked_for_findings(prompt: str) -> bool:
    """Whether the prompt, outside its diff, asks for a ``kdev-findings`` block."""
    diff = diff_section(prompt)
    return FINDINGS_ASK in (prompt.replace(diff, "", 1) if diff != prompt else prompt)


def marked_lines(diff: str) -> list[tuple[str, int, str, str]]:
    """``(path, head line, marker, text)`` of each added line of ``diff`` holding a marker."""
    found: list[tuple[str, int, str, str]] = []
    path, line = "", 0
    for text in diff.splitlines():
        hunk = _HUNK.match(text)
        if text.startswith("+++ "):
            path = text[4:].removeprefix("b/")
        elif hunk is not None:
            line = int(hunk.group(1))
        elif text.startswith("+") and path:
            marker = next((m for m in MARKERS if m in text), None)
            if marker is not None:
                found.append((path, line, marker, text[1:]))
            line += 1
        elif text.startswith(" "):
            line += 1
    return found


def stub_findings(prompt: str) -> str:
    """The stub's answer in the findings contract's form (a block, then the verdict)."""
    findings = [
        {
            "path": path,
            "line": line,
            "start_line": None,
            "severity": "P2",
            "title": f"{marker} left in the change",
            "body": f"The change still holds a {marker} marker.",
            "replacement": text.replace(marker, "DONE") + "\n",
        }
        for path, line, marker, text in marked_lines(diff_section(prompt))
    ]
    block = {"kdev_findings": 1, "summary": "Stub review.", "findings": findings}
    verdict = "REQUEST_CHANGES" if findings else "APPROVE"
    return "\n".join(["```kdev-findings", json.dumps(block), "```", "", f"VERDICT: {verdict}"])


def main(argv: Sequence[str] | None = None) -> int:
    """Run the stub; returns the process exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    delay = os.environ.get("KDEV_STUB_SLEEP")
    if delay:
        time.sleep(float(delay))
    forced_exit = os.environ.get("KDEV_STUB_EXIT")
    if forced_exit:
        print(f"stub reviewer: exiting with code {forced_exit} as asked", file=sys.stderr)
        return int(forced_exit)
    if args:
        with open(args[0], encoding="utf-8") as prompt_file:
            prompt = prompt_file.read()
    else:
        prompt = sys.stdin.read()
    keep = os.environ.get("KDEV_STUB_PROMPTS")
    if keep:
        number = len(list(os.scandir(keep)))
        with open(os.path.join(keep, f"prompt-{number}.txt"), "x", encoding="utf-8") as out:
            out.write(prompt)
    review = stub_findings(prompt) if asked_for_findings(prompt) else stub_review(prompt)
    print(enveloped(os.environ.get("KDEV_STUB_USAGE", ""), review))
    return 0


def _claude_envelope(review: str) -> str:
    u = STUB_USAGE
    usage = {
        "input_tokens": u["input"],
        "cache_read_input_tokens": u["cache_read"],
        "cache_creation_input_tokens": u["cache_write"],
        "output_tokens": u["output"],
    }
    # The cost as Claude prints it: a JSON number.
    cost = float(str(u["cost_usd"]))
    envelope = {"type": "result", "subtype": "success", "is_error": False, "result": review}
    return json.dumps({**envelope, "total_cost_usd": cost, "usage": usage})


def _codex_events(review: str, prompt: int) -> str:
    u = STUB_USAGE
    usage = {"input_tokens": prompt, "cached_input_tokens": u["cache_read"]}
    events = [
        {"type": "thread.started", "thread_id": "stub"},
        {"type": "turn.started"},
        {"type": "item.completed", "item": {"id": "i0", "type": "agent_message", "text": review}},
        {"type": "turn.completed", "usage": {**usage, "output_tokens": u["output"]}},
    ]
    return "\n".join(json.dumps(event) for event in events)


def enveloped(usage_format: str, review: str) -> str:
    """``review`` as ``usage_format``'s CLI prints it (unknown or empty: as it is)."""
    u = STUB_USAGE
    prompt = int(u["input"]) + int(u["cache_read"]) + int(u["cache_write"])
    if usage_format == "claude-json":
        return _claude_envelope(review)
    if usage_format == "codex-jsonl":
        return _codex_events(review, prompt)
    if usage_format == "gemini-json":
        tokens = {"prompt": prompt, "candidates": u["output"], "cached": u["cache_read"]}
        stats = {"models": {"stub": {"tokens": {**tokens, "thoughts": 0, "tool": 0}}}}
        return json.dumps({"response": review, "stats": stats})
    return review


if __name__ == "__main__":
    sys.exit(main())
