"""The many-installations bench's quick run (issue 30, D110), as bench/README.md shows it:
every due poll on time (within its 10 s interval) with one installation and with two,
and each installation's share of its secondary limit printed."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(600)


def test_the_quick_run_puts_every_due_poll_on_time_and_prints_each_share() -> None:
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--only", "installations"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
        timeout=540,
    )
    assert done.returncode == 0, done.stderr
    assert "target: every due poll on time in both setups: met" in done.stdout
    shares = re.findall(r"installation:\d+: [\d.]+% of 900 points/min", done.stdout)
    assert len(shares) == 3, done.stdout  # one installation, then each of two
    assert re.search(r"on time / late / missed +(\d+) / 0 / 0 +(\d+) / 0 / 0", done.stdout)
