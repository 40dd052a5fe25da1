"""The console scripts harden first (D66): ``li`` and ``kdev`` become non-dumpable before
they import their command line, so a token variable is never in a dumpable process for
the second or so those imports take. Checked on the real scripts with the interpreter's
own import log (``PYTHONPROFILEIMPORTTIME``): ctypes (the prctl) is imported before typer
and before the command-line module."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


def _imports(script: str) -> list[str]:
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    result = subprocess.run(
        [str(BIN / script), "--version"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    names = []
    for line in result.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.append(line.rsplit("|", 1)[1].strip())
    return names


@pytest.mark.parametrize(("script", "cli"), [("li", "engine.cli.app"), ("kdev", "wrapper.cli.app")])
def test_the_script_is_non_dumpable_before_it_imports_its_command_line(
    script: str, cli: str
) -> None:
    names = _imports(script)
    assert "ctypes" in names and cli in names and "typer" in names
    assert names.index("ctypes") < names.index("typer") < names.index(cli)
