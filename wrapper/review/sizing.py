"""How many tokens a prompt costs, and how many a reviewer may take (issue 28, D89).

Pure: no I/O. The estimate is a documented one, not a tokenizer: kdev reviews with
OpenAI, Anthropic and Google models and with any command CLI, and no offline tokenizer
matches them all (tiktoken fetches its encoding files on first use, which an offline host
cannot; Anthropic and Google count tokens only through their APIs). So:

    tokens = ceil(ascii_chars / 2.5 + non_ascii_utf8_bytes / 1.2)

calibrated (D89) against cl100k_base and o200k_base on 300 real commit diffs: the
estimate is 1.18x to 1.72x the true count (median 1.46x), never below it. High-entropy
ASCII (random hex, base64, punctuation runs) tokenizes denser, down to 1.31 bytes a
token, where the estimate reads 0.53x the truth; each family's default limit is at most
half its context window, so even that worst case fits the window.

:func:`estimate_span` counts a slice of a string without copying it, so a caller can
size the pieces of a large diff one at a time. It counts a slice of the diff's raw bytes
too, as exactly as their UTF-8 decoding with replacement (D111): a diff is sized before,
and when deferred instead of, being decoded.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

ASCII_CHARS_PER_TOKEN = 2.5
NON_ASCII_BYTES_PER_TOKEN = 1.2
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
_NON_ASCII_BYTES = re.compile(rb"[\x80-\xff]+")


def estimate_span(text: str | bytes, start: int = 0, end: int | None = None) -> int:
    """The estimated tokens of ``text[start:end]`` (see the module doc), never copying
    the whole slice: only its non-ASCII runs are encoded to count their bytes.

    ``text`` may be the raw bytes of a diff: the estimate is then that of their UTF-8
    decoding with replacement, exactly. A run of bytes above 0x7f decodes alone as it
    does in place (an ASCII byte ends any sequence, valid or not), and every character
    it decodes to is non-ASCII; so only those runs are decoded."""
    stop = len(text) if end is None else end
    if stop <= start:
        return 0
    non_ascii_chars = 0  # in the decoded text
    non_ascii_bytes = 0  # in its UTF-8 encoding
    skipped = 0  # of ``text``'s own units, in those runs
    if isinstance(text, str):
        for match in _NON_ASCII.finditer(text, start, stop):
            non_ascii_chars += match.end() - match.start()
            non_ascii_bytes += len(match.group().encode("utf-8", "surrogatepass"))
        skipped = non_ascii_chars
    else:
        for found in _NON_ASCII_BYTES.finditer(text, start, stop):
            decoded = found.group().decode("utf-8", "replace")
            non_ascii_chars += len(decoded)
            non_ascii_bytes += len(decoded.encode("utf-8", "surrogatepass"))
            skipped += found.end() - found.start()
    ascii_chars = stop - start - skipped
    raw = ascii_chars / ASCII_CHARS_PER_TOKEN + non_ascii_bytes / NON_ASCII_BYTES_PER_TOKEN
    return math.ceil(raw)


def estimate_tokens(text: str) -> int:
    """The estimated prompt tokens of ``text``: an upper estimate for code and prose."""
    return estimate_span(text)


@dataclass(frozen=True)
class Family:
    """A model family: model names starting with one of ``prefixes``, its documented
    context ``window`` and the default prompt limit kdev gives it, with the source."""

    name: str
    prefixes: tuple[str, ...]
    window: int
    default_limit: int
    source: str


# The cap on any family's default: a prompt past it is chunked even where the window is
# larger, since every leg is billed and a long prompt is read less carefully (D89).
DEFAULT_CAP = 100_000
# A model kdev does not know (a command CLI's "command" included): PR-Agent's default
# budget, the peer default issue 28 names.
UNKNOWN_LIMIT = 32_000

FAMILIES: tuple[Family, ...] = (
    Family(
        "gpt-4.1",
        ("gpt-4.1",),
        1_047_576,
        DEFAULT_CAP,
        "OpenAI model page for GPT-4.1: 1,047,576-token context window",
    ),
    Family(
        "gpt-4o",
        ("gpt-4o", "chatgpt-4o"),
        128_000,
        64_000,
        "OpenAI model page for GPT-4o: 128,000-token context window",
    ),
    Family(
        "o-series",
        ("o1", "o3", "o4"),
        200_000,
        DEFAULT_CAP,
        "OpenAI model pages for o1, o3 and o4-mini: 200,000-token context window",
    ),
    Family(
        "o1-mini",
        ("o1-mini",),
        128_000,
        64_000,
        "OpenAI model page for o1-mini: 128,000-token context window",
    ),
    Family(
        "gpt-5",
        ("gpt-5",),
        400_000,
        DEFAULT_CAP,
        "OpenAI model page for GPT-5: 400,000-token context window",
    ),
    Family(
        "claude",
        ("claude",),
        200_000,
        DEFAULT_CAP,
        "Anthropic models overview: 200,000-token context window for Claude models",
    ),
    Family(
        "gemini",
        ("gemini",),
        1_048_576,
        DEFAULT_CAP,
        "Google Gemini models page: 1,048,576 input tokens for Gemini 1.5 Pro and 2.x",
    ),
)


@dataclass(frozen=True)
class Limit:
    """A reviewer's prompt limit in tokens and where it comes from (for the notice)."""

    tokens: int
    source: str


def family_of(model: str) -> Family | None:
    """The family of ``model`` (a provider prefix such as ``openai/`` is ignored),
    longest matching prefix first, or None."""
    name = model.strip().lower().rsplit("/", 1)[-1]
    best: Family | None = None
    best_length = 0
    for family in FAMILIES:
        for prefix in family.prefixes:
            if name.startswith(prefix) and len(prefix) > best_length:
                best, best_length = family, len(prefix)
    return best


def limit_for(model: str, configured: int | None = None) -> Limit:
    """The prompt limit of a reviewer on ``model``: ``configured`` when set (from
    ``size_policy`` in KDEV_CONFIG), else its family's default, else UNKNOWN_LIMIT."""
    if configured is not None:
        return Limit(configured, "size_policy.max_prompt_tokens")
    family = family_of(model)
    if family is None:
        return Limit(UNKNOWN_LIMIT, f"default for a model of no known family ({model!r})")
    return Limit(family.default_limit, f"default for the {family.name} family")
