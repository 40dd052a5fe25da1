"""``bounds``: peak memory and wall time of one GitHub answer past the client's bounds.

Each case is one ``GET /repos/octo/widgets/pulls`` through ``engine.github``'s client in
a fresh interpreter, so its peak RSS is that case's alone (reset before the request and
read as ``VmHWM``: a spawned child's ``ru_maxrss`` starts at the spawning parent's peak):
a normal answer (the baseline), a 1 GiB gzip bomb, a 100 MB plain body, a body dripped a
byte every 0.5 s under a 2 s deadline, and a redirect to another origin (ghsim faults,
issue 24). Each is printed as a ratio to the normal answer measured in the same run.
For the bomb and the 100 MB body, the same request through a plain ``httpx.Client``
(``response.read()``, redirects followed) shows what the bounds save.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ghsim import GitHubSim

REPO = "octo/widgets"
TOKEN = "tok-bench-bounds"
PATH = f"repos/{REPO}/pulls"
DRIP_SECONDS = 0.5
DEADLINE = "2"

# One request: its reason, seconds, peak RSS and its growth over the start (MiB).
_CHILD = """
import json, sys, time

def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise LookupError(field)

def reset_peak():
    # ru_maxrss of a spawned child carries its parent's peak (the exec folds it in), so
    # the peak is reset here and read as VmHWM, the figure ru_maxrss reports otherwise.
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")
    return status("VmRSS")

def peak():
    return status("VmHWM")

mode, url, token = sys.argv[1], sys.argv[2], sys.argv[3]
if mode == "bounded":
    from engine.config import Settings
    from engine.github import GitHubError, github_client
    client = github_client(Settings.from_env(), record_rates=False)
    before, start = reset_peak(), time.monotonic()
    try:
        client.request("GET", url, expect=list)
        reason = "ok"
    except GitHubError as exc:
        reason = exc.reason
else:
    import httpx
    client = httpx.Client(headers={"Authorization": f"Bearer {token}"}, follow_redirects=True)
    before, start = reset_peak(), time.monotonic()
    response = client.get(url)
    reason = f"read {len(response.content) // (1 << 20)} MiB"
seconds = time.monotonic() - start
print(json.dumps({"reason": reason, "seconds": seconds, "peak": peak(), "growth": peak() - before}))
"""


@dataclass(frozen=True)
class Case:
    name: str
    reason: str
    seconds: float
    peak_mib: float
    growth_mib: float


def _run(sim: GitHubSim, name: str, mode: str = "bounded", **env: str) -> Case:
    environ = {**os.environ, "GITHUB_API_URL": sim.url, "GITHUB_TOKEN": TOKEN, **env}
    target = PATH if mode == "bounded" else f"{sim.url}/{PATH}"
    result = subprocess.run(
        [sys.executable, "-c", _CHILD, mode, target, TOKEN],
        env=environ,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    got: dict[str, Any] = json.loads(result.stdout)
    return Case(name, got["reason"], got["seconds"], got["peak"], got["growth"])


def measure(workdir: Path) -> list[Case]:
    """The cases in order, the normal answer first."""
    with (
        GitHubSim(workdir / "bounds-sim") as sim,
        GitHubSim(workdir / "bounds-other", host="127.0.0.2", anonymous=True) as other,
    ):
        sim.add_token(TOKEN)
        for made in (sim, other):
            made.create_repo(REPO)
            made.open_pr(REPO, "feature", {"a.txt": "hi\n"})
        cases = [_run(sim, "normal answer")]
        sim.inject_body_fault("gzip_bomb", "GET", r"/pulls$")
        cases.append(_run(sim, "gzip bomb (1 MB -> 1 GiB)"))
        sim.inject_body_fault("huge", "GET", r"/pulls$")
        cases.append(_run(sim, "100 MB body"))
        sim.inject_body_fault("drip", "GET", r"/pulls$", drip_seconds=DRIP_SECONDS)
        cases.append(_run(sim, f"drip, 1 B / {DRIP_SECONDS:g} s", LI_GITHUB_DEADLINE=DEADLINE))
        sim.inject_redirect(f"{other.url}/{PATH}", "GET", r"/pulls$")
        cases.append(_run(sim, "redirect to another origin"))
        sim.inject_body_fault("gzip_bomb", "GET", r"/pulls$")
        cases.append(_run(sim, "gzip bomb, plain httpx", mode="raw"))
        sim.inject_body_fault("huge", "GET", r"/pulls$")
        cases.append(_run(sim, "100 MB body, plain httpx", mode="raw"))
    return cases


def report(cases: list[Case]) -> list[str]:
    base = cases[0]
    lines = [
        "bounds: one GitHub answer per fresh process (peak RSS, wall time of the request)",
        f"  {'case':<30} {'outcome':<18} {'peak MiB':>9} {'x':>6} {'+MiB':>7} "
        f"{'seconds':>8} {'x':>7}",
    ]
    for case in cases:
        lines.append(
            f"  {case.name:<30} {case.reason:<18} {case.peak_mib:>9.1f} "
            f"{case.peak_mib / base.peak_mib:>6.2f} {case.growth_mib:>7.1f} "
            f"{case.seconds:>8.3f} {case.seconds / max(base.seconds, 1e-6):>7.1f}"
        )
    lines.append(
        f"  (deadline {DEADLINE} s for the drip; default cap 32 MiB; x = ratio to the normal "
        "answer; +MiB = peak growth during the request)"
    )
    return lines
