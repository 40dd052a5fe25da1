"""The leak scan's cost on a large output (issue 24): ``python -m bench.leakscan``.

A 1 MB output (code-like lines with escapes, hex and numbers; ASCII) and 5 secrets as
kdev meets them (four tokens, a webhook URL), none of them in the text, so every form
is searched to the end. Timed with ``time.perf_counter``, the median of 7 runs each,
alternating:

- **raw** (the floor): ``secret in text`` for each secret;
- **views**: the three views of the text (as is, percent-decoded, escape prefixes
  dropped) and their reductions, which every scan pays once per text;
- **find_leak**: the whole scan, every form of every secret.

Printed: the three medians, find_leak/raw, and the needles per secret.
"""

from __future__ import annotations

import argparse
import random
import statistics
import string
import time
from collections.abc import Callable

from wrapper.leakscan import _needles, _reduce, _views, find_leak

WORDS = ("def", "return", "self", "import", "value", "for", "in", "0x1f", "%20", "\\x41",
         "user_id", "1234", "abcdef", "==", "(", ")", "&#39;", "sha256", "None")  # fmt: skip


def _text(size: int, rng: random.Random) -> str:
    lines, total = [], 0
    while total < size:
        line = " ".join(rng.choice(WORDS) for _ in range(12)) + "\n"
        lines.append(line)
        total += len(line)
    return "".join(lines)


def _secrets(rng: random.Random) -> list[str]:
    alphabet = string.ascii_letters + string.digits
    tokens = ["ghp_" + "".join(rng.choice(alphabet) for _ in range(36)) for _ in range(4)]
    hook = "https://hooks.slack.com/services/T0A1B2C3D/B4E5F6G7H/"
    return [*tokens, hook + "".join(rng.choice(alphabet) for _ in range(24))]


def _ms(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return (time.perf_counter() - start) * 1000


def run(size: int = 1_000_000, runs: int = 7) -> dict[str, float]:
    rng = random.Random(24)
    text, secrets = _text(size, rng), _secrets(rng)
    assert find_leak(text, secrets) is None  # warm-up: the needles are cached

    def raw() -> object:
        return [s in text for s in secrets]

    def views() -> object:
        return [_reduce(view) for view in _views(text)]

    ways = {"raw": raw, "views": views, "find_leak": lambda: find_leak(text, secrets)}
    times: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(runs):  # alternate, so that machine noise hits every way alike
        for name, work in ways.items():
            times[name].append(_ms(work))
    found = {name: statistics.median(values) for name, values in times.items()}
    found["needles_per_secret"] = statistics.mean(len(_needles(s)) for s in secrets)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.leakscan")
    parser.add_argument("--size", type=int, default=1_000_000, help="bytes of output")
    args = parser.parse_args()
    found = run(args.size)
    print(f"leak scan of {args.size:,} bytes, 5 secrets absent (median of 7 alternating runs)")
    for name in ("raw", "views", "find_leak"):
        print(f"  {name:10} {found[name]:8.1f} ms")
    print(f"  find_leak/raw {found['find_leak'] / found['raw']:.0f}x; ", end="")
    print(f"{found['needles_per_secret']:.0f} needles per secret")


if __name__ == "__main__":
    main()
