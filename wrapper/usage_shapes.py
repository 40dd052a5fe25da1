"""The usage shapes reviewers print, parsed (issue 31, docs/reviewers.md "Usage and cost").

Pure. Each parser fails closed: a block that is missing gives a :class:`Reported` with no
tokens and no cost and the reason ``usage_not_reported``; a block that is there but not
as documented (a count that is not a whole number >= 0, a cached count above the prompt,
a cost that is not a sum of money) gives ``usage_malformed`` and no number at all, never
a guess.

- :func:`openai_usage`: an OpenAI-compatible ``/chat/completions`` answer's ``usage``:
  ``prompt_tokens``, ``completion_tokens`` and ``prompt_tokens_details.cached_tokens``.
- :func:`command_output`: a command reviewer's stdout under its ``usage`` format
  (``reviewer.usage`` in kdev.yaml): ``none`` (prose; nothing reported), ``claude-json``
  (``claude -p --output-format json``: one object, the review in ``result``),
  ``codex-jsonl`` (``codex exec --json``: JSON lines, the review in the last
  ``item.completed`` agent message, usage in each ``turn.completed``), ``gemini-json``
  (``gemini -p --output-format json``: the review in ``response``, tokens per model in
  ``stats.models``). Stdout that is not the format's envelope is kept whole as the review
  (so the verdict grammar judges it) with usage ``usage_envelope_unreadable``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from wrapper.usage import NOT_REPORTED, UNREPORTED, Reported, Tokens

MALFORMED = "usage_malformed"
UNREADABLE = "usage_envelope_unreadable"
FORMATS = ("none", "claude-json", "codex-jsonl", "gemini-json")


class _Malformed(ValueError):
    """A usage block that is not as its reviewer documents it."""


def _count(block: Mapping[str, Any], key: str, *, optional: bool = False) -> int:
    value = block.get(key)
    if value is None and optional:
        return 0
    if type(value) is not int or value < 0:
        raise _Malformed(f"{key} is {value!r}")
    return value


_UNREADABLE = Reported(None, None, UNREADABLE)
_NOT_REPORTED = Reported(None, None, NOT_REPORTED)
_MALFORMED = Reported(None, None, MALFORMED)


def _tokens(tokens_in: int, tokens_out: int, cached: int | None) -> Tokens:
    if cached is not None and cached > tokens_in:
        raise _Malformed(f"{cached} cached of {tokens_in} prompt tokens")
    return Tokens(tokens_in, tokens_out, cached)


def _guarded(read: Callable[[], Reported]) -> Reported:
    try:
        return read()
    except (_Malformed, AttributeError, KeyError, TypeError):
        return _MALFORMED


def openai_usage(payload: Any) -> Reported:
    """The ``usage`` of a parsed chat-completions answer."""
    usage = payload.get("usage") if isinstance(payload, dict) else None
    if usage is None:
        return _NOT_REPORTED

    def read() -> Reported:
        if not isinstance(usage, dict):
            raise _Malformed("usage is not an object")
        details = usage.get("prompt_tokens_details")
        cached = None
        if details is not None:
            if not isinstance(details, dict):
                raise _Malformed("prompt_tokens_details is not an object")
            if details.get("cached_tokens") is not None:
                cached = _count(details, "cached_tokens")
        prompt = _count(usage, "prompt_tokens")
        return Reported(_tokens(prompt, _count(usage, "completion_tokens"), cached))

    return _guarded(read)


def _money(value: Any) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
        raise _Malformed(f"cost {value!r}")
    cost = Decimal(value)
    if not cost.is_finite() or cost < 0:
        raise _Malformed(f"cost {value!r}")
    return cost


def _object(text: str) -> dict[str, Any] | None:
    """``text`` as one JSON object, floats kept as their decimal text; else None."""
    try:
        value = json.loads(text, parse_float=Decimal)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _enveloped(
    text_key: str, usage: Callable[[dict[str, Any]], Reported]
) -> Callable[[str], tuple[str, Reported]]:
    """The reader of an answer that is one JSON object whose ``text_key`` is the
    reviewer's text, its usage read by ``usage`` from that object."""

    def reader(stdout: str) -> tuple[str, Reported]:
        envelope = _object(stdout)
        if envelope is None or not isinstance(envelope.get(text_key), str):
            return stdout, _UNREADABLE
        return envelope[text_key], _guarded(lambda: usage(envelope))

    return reader


def _claude_usage(envelope: dict[str, Any]) -> Reported:
    usage = envelope.get("usage")
    cost = envelope.get("total_cost_usd")
    if usage is None and cost is None:
        return _NOT_REPORTED
    tokens = None
    if usage is not None:
        if not isinstance(usage, dict):
            raise _Malformed("usage is not an object")
        read_cache = _count(usage, "cache_read_input_tokens", optional=True)
        written = _count(usage, "cache_creation_input_tokens", optional=True)
        prompt = _count(usage, "input_tokens") + read_cache + written
        tokens = _tokens(prompt, _count(usage, "output_tokens"), read_cache)
    return Reported(tokens, None if cost is None else _money(cost))


def _codex(stdout: str) -> tuple[str, Reported]:
    events = [_object(line) for line in stdout.splitlines() if line.strip()]
    if not events or any(event is None for event in events):
        return stdout, _UNREADABLE
    texts = [
        event["item"]["text"]
        for event in events
        if event is not None
        and event.get("type") == "item.completed"
        and isinstance(event.get("item"), dict)
        and event["item"].get("type") == "agent_message"
        and isinstance(event["item"].get("text"), str)
    ]
    if not texts:
        return stdout, _UNREADABLE
    turns = [e.get("usage") for e in events if e is not None and e.get("type") == "turn.completed"]

    def read() -> Reported:
        if not turns:
            return _NOT_REPORTED
        total_in = total_out = total_cached = 0
        for usage in turns:
            if not isinstance(usage, dict):
                raise _Malformed("turn.completed usage is not an object")
            total_in += _count(usage, "input_tokens")
            total_out += _count(usage, "output_tokens")
            total_cached += _count(usage, "cached_input_tokens", optional=True)
        return Reported(_tokens(total_in, total_out, total_cached))

    return texts[-1], _guarded(read)


def _gemini_usage(envelope: dict[str, Any]) -> Reported:
    stats = envelope.get("stats")
    if stats is None:
        return _NOT_REPORTED
    models = stats["models"]
    if not isinstance(models, dict) or not models:
        raise _Malformed("stats.models is not a non-empty object")
    total_in = total_out = total_cached = 0
    for entry in models.values():
        tokens = entry["tokens"]
        if not isinstance(tokens, dict):
            raise _Malformed("tokens is not an object")
        total_in += _count(tokens, "prompt")
        # Thinking tokens are billed as output (Gemini API pricing).
        total_out += _count(tokens, "candidates") + _count(tokens, "thoughts", optional=True)
        total_cached += _count(tokens, "cached", optional=True)
    return Reported(_tokens(total_in, total_out, total_cached))


_READERS: dict[str, Callable[[str], tuple[str, Reported]]] = {
    "claude-json": _enveloped("result", _claude_usage),
    "codex-jsonl": _codex,
    "gemini-json": _enveloped("response", _gemini_usage),
}


def command_output(usage_format: str, stdout: str) -> tuple[str, Reported]:
    """The review text in a command reviewer's ``stdout`` and what it reported."""
    reader = _READERS.get(usage_format)
    if reader is None:
        return stdout, UNREPORTED
    return reader(stdout)
