"""The simulated GitHub the polling benches run against (``bench.poll``,
``bench.mention_scale``, ``bench.installations``): ``python -m ghsim`` as a child process,
driven over its RPC route, with N repositories copied from one template and one open pull
request in each, and a transport that counts every answer.

ghsim answers each keep-alive request about 40 ms late (``bench.poll``'s module doc), so
the pull requests are opened on several threads at once.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from engine.config import Settings

PROJECT_ROOT = Path(__file__).resolve().parent.parent
OWNER = "bench"
ENGINE_TOKEN = "bench-engine-token"
BASELINE_TOKEN = "bench-baseline-token"
PULLS_PATH = re.compile(r"^/repos/[^/]+/[^/]+/pulls$")
SIM_START_TIMEOUT_SECONDS = 60.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
THREADS = Settings().max_concurrent_actions + 2  # the pool Engine.run_once polls on


class CountingTransport(httpx.HTTPTransport):
    """The normal transport, noting ``(path, status)`` of every answer."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, int]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        self.seen.append((request.url.path, response.status_code))  # list.append is atomic
        return response

    def pulls_since(self, mark: int) -> list[int]:
        """Statuses of pull-list requests answered after ``mark`` requests."""
        return [status for path, status in self.seen[mark:] if PULLS_PATH.match(path)]


class SimProcess:
    """``python -m ghsim`` in a child process, driven over ``POST /_ghsim/rpc``."""

    def __init__(self, state_dir: Path, repos: list[str], tokens: list[str]) -> None:
        self.log_path = state_dir.parent / "ghsim.log"
        self._log = self.log_path.open("w")
        argv = [sys.executable, "-m", "ghsim", "--port", "0", "--state-dir", str(state_dir)]
        for repo in repos:
            argv += ["--repo", repo]
        self.process = subprocess.Popen(
            argv,
            cwd=PROJECT_ROOT,
            env={**os.environ, "GHSIM_TOKENS": ",".join(tokens)},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline().strip()
        if not line.startswith("http"):
            self.stop()
            raise RuntimeError(f"ghsim did not start; its log:\n{self._tail()}")
        self.url = line
        self._http = httpx.Client(base_url=self.url, timeout=SIM_START_TIMEOUT_SECONDS)

    def rpc(self, method: str, *args: Any, **kwargs: Any) -> Any:
        response = self._http.post(
            "/_ghsim/rpc", json={"method": method, "args": list(args), "kwargs": kwargs}
        )
        if response.status_code != 200:
            raise RuntimeError(f"ghsim rpc {method} failed: {response.text[:500]}")
        return response.json()["result"]

    def core_used(self, token: str) -> int:
        """Rate-limit units ``token`` has used, as ghsim counts them (uncounted call)."""
        response = self._http.get("/rate_limit", headers={"Authorization": f"Bearer {token}"})
        response.raise_for_status()
        return int(response.json()["resources"]["core"]["used"])

    def cpu_seconds(self) -> float | None:
        """User + system CPU of the simulator and its reaped children (git), or None."""
        try:
            stat = Path(f"/proc/{self.process.pid}/stat").read_text()
        except OSError:
            return None
        fields = stat.rsplit(")", 1)[1].split()
        # after "pid (comm)": state is fields[0]; utime, stime, cutime, cstime are 11..14
        return sum(int(value) for value in fields[11:15]) / CLOCK_TICKS

    def _tail(self) -> str:
        self._log.flush()
        return self.log_path.read_text()[-2000:]

    def stop(self) -> None:
        if getattr(self, "_http", None) is not None:
            self._http.close()
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        self._log.close()


def _template_repo(workdir: Path) -> Path:
    """A bare repository with ``main`` and a ``feature`` branch one commit ahead, made by
    ghsim itself (in this process, briefly) so the copies are exactly what it expects."""
    from ghsim import GitHubSim

    state = workdir / "ghsim-template"
    with GitHubSim(state) as sim:
        sim.create_repo(f"{OWNER}/template")
        sim.commit_to_base(f"{OWNER}/template", {"src/app.py": "x = 1\n"}, branch="feature")
    return state / "repos" / OWNER / "template.git"


def start_world(workdir: Path, repos: list[str]) -> SimProcess:
    """ghsim with ``repos`` (bare repositories copied from one template and adopted at
    start, which is much faster than making each) and one open pull request in each."""
    template = _template_repo(workdir)
    state = workdir / "ghsim"
    for repo in repos:
        shutil.copytree(template, state / "repos" / f"{repo}.git")
    sim = SimProcess(state, repos, [ENGINE_TOKEN, BASELINE_TOKEN])
    try:
        # Several at once: ghsim answers each request ~40 ms late (see the module doc).
        with ThreadPoolExecutor(THREADS) as pool:
            opened = pool.map(
                lambda repo: sim.rpc("open_pr", repo, "feature", title=f"bench: {repo}"), repos
            )
            list(opened)
    except BaseException:
        sim.stop()
        raise
    return sim
