"""``ghsim --port N [--state-dir DIR]``: serve until SIGINT/SIGTERM.

``ghsim`` is the wheel's console script (``ghsim.__main__:main``), so a pipx install,
whose Python is out of reach, can start it; ``python -m ghsim`` is the same program.

The first stdout line is the base URL. Tokens come from the environment variable named
by ``--token-env`` (default ``GHSIM_TOKENS``, comma-separated), never from argv.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from types import FrameType

from ghsim.sim import GitHubSim


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="ghsim", description=__doc__)
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--state-dir", default=None, help="bare repos live here (kept)")
    parser.add_argument(
        "--repo",
        action="append",
        default=[],
        metavar="OWNER/NAME",
        help="create this repository at start (repeatable)",
    )
    parser.add_argument(
        "--token-env",
        default="GHSIM_TOKENS",
        help="environment variable holding comma-separated tokens",
    )
    parser.add_argument("--anonymous", action="store_true", help="allow requests without a token")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sim = GitHubSim(args.state_dir, host=args.host, port=args.port, anonymous=args.anonymous)
    for token in os.environ.get(args.token_env, "").split(","):
        if token.strip():
            sim.add_token(token.strip())
    for name in args.repo:
        sim.create_repo(name)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    sim.start()
    print(sim.url, flush=True)
    print(f"ghsim: state in {sim.state_dir}; Ctrl-C stops", file=sys.stderr, flush=True)
    try:
        while not stop.wait(0.2):
            pass
    finally:
        sim.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
