"""``li`` prints a run's output tails terminal-safe (a command's stdout may hold
controls, though li refuses them in argv), and ``--json`` keeps them exact (issue 24)."""

from __future__ import annotations

from sqlalchemy import Engine

from tests.engine.test_cli import Li
from tests.termsafe_kit import HOSTILE, forbidden


def printf_format(text: str) -> str:
    """``text`` as a printf format of printable ASCII (li refuses controls in argv)."""
    out = []
    for byte in text.encode("utf-8"):
        char = chr(byte)
        if char in "\\%" or not 0x20 <= byte < 0x7F:
            out.append(f"\\{byte:03o}")
        else:
            out.append(char)
    return "".join(out)


def test_run_show_escapes_the_output_tails_and_json_keeps_them(db: Engine, db_url: str) -> None:
    li = Li(db_url, allow="printf")
    li(
        "schedule",
        "add",
        "noisy",
        "--every",
        "1h",
        "--command",
        "printf",
        "--",
        printf_format(HOSTILE),
    )
    li("schedule", "trigger", "noisy", "--wait")
    runs = li.json("schedule", "runs")
    assert isinstance(runs, list)
    run_id = str(runs[0]["id"])
    _, shown, _ = li("schedule", "run", run_id)
    assert "--- stdout_tail ---" in shown and "fix^[[2Jthis" in shown
    assert forbidden(shown) == []
    detail = li.json("schedule", "run", run_id)
    assert isinstance(detail, dict) and detail["stdout_tail"] == HOSTILE
