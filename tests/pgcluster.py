"""A throwaway PostgreSQL cluster on a unix socket, for the test session.

Binaries come from PATH or ``/usr/lib/postgresql/*/bin``. initdb refuses to run as
root, so as root the cluster runs as the ``postgres`` system user (Debian's package
creates it).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from pathlib import Path


class ClusterError(RuntimeError):
    pass


def _find_bin(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)
    if candidates:
        return candidates[0]
    raise ClusterError(
        f"{name} not found on PATH or under /usr/lib/postgresql/*/bin "
        "(install Debian's postgresql package)"
    )


class PostgresCluster:
    """Start with :meth:`start`, stop with :meth:`stop`; ``url(db)`` builds a psycopg URL."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="li-pg-"))
        self.data = self.root / "data"
        self.sock = self.root / "sock"
        self.user = "li"
        self._run_as: list[str] = []
        self._env: dict[str, str] = {}

    def _cmd(self, *args: str) -> list[str]:
        return [*self._run_as, *args]

    def start(self) -> None:
        initdb = _find_bin("initdb")
        self.sock.mkdir()
        if os.geteuid() == 0:
            try:
                pw = pwd.getpwnam("postgres")
            except KeyError:
                raise ClusterError(
                    "running as root and no 'postgres' user exists to run initdb as"
                ) from None
            for path in (self.root, self.sock):
                os.chown(path, pw.pw_uid, pw.pw_gid)
            self._run_as = [
                "setpriv",
                f"--reuid={pw.pw_uid}",
                f"--regid={pw.pw_gid}",
                "--clear-groups",
                "--",
            ]
        env = {**os.environ, "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}
        self._check(
            self._cmd(
                initdb,
                "-D",
                str(self.data),
                "-U",
                self.user,
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-sync",
                "--no-instructions",
            ),
            env,
        )
        self._env = env
        self._pg_ctl_start(env)

    def _pg_ctl_start(self, env: dict[str, str]) -> None:
        pg_ctl = _find_bin("pg_ctl")
        options = (
            f"-k {self.sock} -c listen_addresses='' -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        self._check(
            self._cmd(
                pg_ctl,
                "-D",
                str(self.data),
                "-o",
                options,
                "-l",
                str(self.root / "server.log"),
                "-w",
                "-t",
                "60",
                "start",
            ),
            env,
        )

    def _check(self, cmd: list[str], env: dict[str, str]) -> None:
        result = subprocess.run(
            cmd, env=env, capture_output=True, text=True, check=False, cwd=self.root
        )
        if result.returncode != 0:
            log = self.root / "server.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise ClusterError(
                f"{' '.join(cmd)} failed ({result.returncode}): {result.stderr.strip()} {tail}"
            )

    def restart(self, down_seconds: float) -> None:
        """Stop the server at once (connections are cut), stay down, start it again."""
        pg_ctl = _find_bin("pg_ctl")
        self._check(
            self._cmd(pg_ctl, "-D", str(self.data), "-m", "immediate", "-w", "stop"), self._env
        )
        time.sleep(down_seconds)
        self._pg_ctl_start(self._env)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://{self.user}@/{database}?host={self.sock}"

    def stop(self) -> None:
        try:
            pg_ctl = _find_bin("pg_ctl")
            subprocess.run(
                self._cmd(pg_ctl, "-D", str(self.data), "-m", "immediate", "-w", "stop"),
                capture_output=True,
                check=False,
                cwd=self.root,
            )
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
