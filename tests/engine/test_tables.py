"""Tables via rich: plain text when piped, bold headers on a terminal, none with NO_COLOR."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from engine.tables import print_table

ROOT = Path(__file__).resolve().parents[2]

ON_A_TERMINAL = """
import json, os, pty, sys
from engine.tables import print_table
headers, rows = json.loads(sys.argv[1])
master, slave = pty.openpty()
os.set_blocking(master, False)
with os.fdopen(slave, "w") as terminal:
    print_table(headers, rows, terminal)
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


NAME_STATUS = (["name", "status"], [["nightly", "FAILED"], ["x" * 300, None]])


def on_a_terminal(no_color: bool, table: tuple[list[str], list[list[object]]] = NAME_STATUS) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM")}
    env.update({"PYTHONPATH": str(ROOT), "TERM": "xterm-256color", "COLUMNS": "80"})
    if no_color:
        env["NO_COLOR"] = "1"
    argv = [sys.executable, "-c", ON_A_TERMINAL, json.dumps(table)]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60,
                          check=True)  # fmt: skip
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
    assert "x" * 300 + "  -" in [line.rstrip() for line in visible.splitlines()]  # whole
    plain = on_a_terminal(no_color=True)
    assert "\x1b[" not in plain and "NAME" in plain and "FAILED" in plain


SHA = "0123456789abcdef0123456789abcdef01234567"
WHEN = "2026-12-01T22:25:47Z"


def test_at_80_columns_values_stay_whole_and_only_prose_wraps() -> None:
    """Issue 25: names, SHAs, reason codes and timestamps were split across lines."""
    causes = "no poll recorded for 3h12m, longer than 3 intervals; the engine may be down"
    headers = ["name", "head", "causes"]
    row = ["widgets-nightly", SHA, causes]
    lines = on_a_terminal(no_color=True, table=(headers, [row])).splitlines()
    assert all(len(line.rstrip()) <= 80 for line in lines), lines  # fits: causes wrapped
    assert len(lines) > 2, lines
    for value in row[:2]:
        assert value in lines[1], (value, lines)
    words = [word for line in lines[1:] for word in line.split()]
    assert " ".join(words).endswith(causes), lines  # wrapped at spaces, no word split


def test_short_phrases_stay_whole_and_a_table_too_wide_gets_wider_not_split() -> None:
    headers = ["repo", "pr", "head_sha", "patch_id", "verdict", "reviewed_at", "kind"]
    row = ["octo/widgets-with-a-long-name", "4242", SHA, SHA, "request_changes", WHEN,
           "2 of fire 17"]  # fmt: skip
    lines = on_a_terminal(no_color=True, table=(headers, [row, row])).splitlines()
    assert len(lines) == 3, lines  # the header and one line a row
    assert all(value in lines[1] for value in row), lines
