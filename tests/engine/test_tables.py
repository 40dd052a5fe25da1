"""Tables via rich: plain text when piped, bold headers on a terminal, none with NO_COLOR."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

from engine.tables import print_table

ROOT = Path(__file__).resolve().parents[2]

ON_A_TERMINAL = """
import os, pty, sys
from engine.tables import print_table
master, slave = pty.openpty()
os.set_blocking(master, False)
with os.fdopen(slave, "w") as terminal:
    print_table(["name", "status"], [["nightly", "FAILED"], ["x" * 300, None]], terminal)
chunks = []
while True:
    try:
        chunk = os.read(master, 65536)
    except (BlockingIOError, OSError):
        break
    if not chunk:
        break
    chunks.append(chunk)
sys.stdout.write(repr(b"".join(chunks).decode()))
"""


def on_a_terminal(no_color: bool) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM")}
    env.update({"PYTHONPATH": str(ROOT), "TERM": "xterm-256color", "COLUMNS": "80"})
    if no_color:
        env["NO_COLOR"] = "1"
    done = subprocess.run([sys.executable, "-c", ON_A_TERMINAL], env=env, capture_output=True,
                          text=True, timeout=60, check=True)  # fmt: skip
    text = eval(done.stdout)  # noqa: S307 - our own repr above
    assert isinstance(text, str)
    return text


def test_piped_output_is_plain_aligned_and_never_wrapped() -> None:
    out = io.StringIO()
    long = "x" * 300
    print_table(["name", "status"], [["nightly", "FAILED"], [long, None]], out)
    assert out.getvalue().splitlines() == [
        "NAME" + " " * (300 - 4 + 2) + "STATUS",
        "nightly" + " " * (300 - 7 + 2) + "FAILED",
        long + "  -",
    ]
    assert "\x1b" not in out.getvalue()


def test_a_terminal_gets_a_bold_header_that_no_color_removes() -> None:
    styled = on_a_terminal(no_color=False)
    assert "\x1b[1m" in styled and "NAME" in styled
    visible = re.sub(r"\x1b\[[0-9;]*m", "", styled)
    assert max(len(line) for line in visible.splitlines()) <= 80  # fits the terminal
    plain = on_a_terminal(no_color=True)
    assert "\x1b[" not in plain and "NAME" in plain and "FAILED" in plain
