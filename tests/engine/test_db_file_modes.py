"""A SQLite database li creates holds output tails of runs: owner-only (issue 25)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

LI = str(Path(sys.executable).with_name("li"))


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_fresh_database_its_wal_files_and_its_new_folder_are_owner_only(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "data" / "li"
    database = folder / "li.db"
    env = {**os.environ, "LI_DATABASE_URL": f"sqlite:///{database}"}
    # A permissive umask, as on many desktops: the modes must not depend on it.
    done = subprocess.run(
        ["sh", "-c", 'umask 022 && exec "$0" db upgrade', LI],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert mode(folder) == 0o700
    assert mode(database) == 0o600
    # A reader holding the database open keeps the -wal and -shm files in place.
    hold = (
        "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]);"
        "c.execute('PRAGMA journal_mode=WAL'); c.execute('CREATE TABLE t (x)');"
        "import pathlib; p = pathlib.Path(sys.argv[1]);"
        "print(oct(pathlib.Path(str(p) + '-wal').stat().st_mode & 0o777),"
        " oct(pathlib.Path(str(p) + '-shm').stat().st_mode & 0o777))"
    )
    shown = subprocess.run([sys.executable, "-c", hold, str(database)], capture_output=True,
                           text=True, timeout=60, check=True)  # fmt: skip
    assert shown.stdout.split() == ["0o600", "0o600"]


def test_an_existing_database_keeps_its_mode(tmp_path: Path) -> None:
    database = tmp_path / "shared.db"
    database.touch()
    database.chmod(0o640)
    env = {**os.environ, "LI_DATABASE_URL": f"sqlite:///{database}"}
    done = subprocess.run([LI, "db", "upgrade"], env=env, capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert mode(database) == 0o640


def test_a_database_file_that_cannot_be_created_is_one_line(tmp_path: Path) -> None:
    database = tmp_path / ("x" * 300 + ".db")  # longer than a file name may be
    env = {**os.environ, "LI_DATABASE_URL": f"sqlite:///{database}"}
    done = subprocess.run([LI, "db", "upgrade"], env=env, capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert done.returncode != 0
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: cannot create database ") and "too long" in line
    assert line.endswith("[database_unwritable]")
