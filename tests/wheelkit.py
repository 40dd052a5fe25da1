"""The wheel, built and installed into a fresh venv once per test session.

The wheel is built offline (``--no-build-isolation`` with the test venv's setuptools)
from a copy of just the packaged sources, installed ``--no-deps`` into a new venv made
``--without-pip``; that venv reaches the third-party dependencies through a ``.pth``
line naming the test venv's site-packages (a plain path entry: the test venv's editable
finder is not run). Its users run every command from a scratch cwd with a scrubbed
environment (:func:`scrubbed_env`), so nothing of the checkout is importable
(docs/decisions.md, D18-D20). The session fixture ``installed_wheel`` (tests/conftest.py)
is the one place that builds it: tests/test_install.py and tests/e2e/test_newcomer.py
share it, and under pytest-xdist the workers of one run share it too
(:func:`install_wheel_once`).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGED = ("pyproject.toml", "README.md", "engine", "wrapper", "ghsim")
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")


@dataclass(frozen=True)
class InstalledWheel:
    venv: Path
    bin: Path
    wheel: Path


def build_wheel(dest: Path) -> Path:
    source = dest / "src"
    for name in PACKAGED:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=IGNORED)
        else:
            source.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, source / name)
    wheels = dest / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-index"]
        + ["--no-build-isolation", "--wheel-dir", str(wheels), str(source)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    (wheel,) = wheels.glob("pr_review_pipeline-*.whl")
    return wheel


def install_wheel(base: Path) -> InstalledWheel:
    """Build the wheel under ``base`` and install it into the new venv ``base/venv``."""
    wheel = build_wheel(base)
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet"]
        + ["--no-deps", "--no-index", str(wheel)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (Path(purelib) / "test-dependencies.pth").write_text("\n".join(sorted(ours)) + "\n")
    return InstalledWheel(venv, venv / "bin", wheel)


def install_wheel_once(shared: Path) -> InstalledWheel:
    """:func:`install_wheel` into ``shared/wheel``, unless a process of this run already
    did: the first one builds under an exclusive lock, the others wait for it and reuse
    it. A build that failed left no marker, so the next one tries again."""
    base = shared / "wheel"
    marker = base / "installed"
    with (shared / "wheel.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if marker.is_file():
            venv = base / "venv"
            return InstalledWheel(venv, venv / "bin", Path(marker.read_text(encoding="utf-8")))
        base.mkdir(exist_ok=True)
        installed = install_wheel(base)
        marker.write_text(str(installed.wheel), encoding="utf-8")
        return installed


def scrubbed_env(installed: InstalledWheel, home: Path) -> dict[str, str]:
    """A newcomer's environment: the venv's scripts first on PATH, ``home`` as HOME."""
    return {
        "PATH": f"{installed.bin}{os.pathsep}/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
    }
