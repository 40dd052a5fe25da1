"""An action dies with its engine (D28): the supervisor's ``die_with_parent`` SIGKILLs the
child when the process that started it is killed with ``kill -9``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from engine.run.parentdeath import chained

ROOT = Path(__file__).resolve().parents[2]

# A parent that starts `sleep 60` through the one supervisor from a worker thread (as the
# engine does), prints the child's pid, then waits to be killed.
PARENT = textwrap.dedent(
    """
    import sys, threading, time
    from engine.run.runner import RunRequest, run_action
    from engine.run.supervise import ChildSpec, supervise

    mode = sys.argv[1]
    announce = lambda pid: print(pid, flush=True)
    if mode == "runner":
        request = RunRequest(
            argv=["sleep", "60"], cwd=None, env={"PATH": "/usr/bin:/bin"},
            timeout_seconds=120, allowlist=frozenset({"sleep"}),
        )
        run = lambda: run_action(request, on_spawn=announce)
    else:
        spec = ChildSpec(
            argv=["sleep", "60"], executable="/bin/sleep", env={"PATH": "/usr/bin:/bin"},
            cwd=None, timeout_seconds=120, kill_grace_seconds=1, stdout_limit=100,
            stderr_limit=100, die_with_parent=mode == "tied",
        )
        run = lambda: supervise(spec, on_spawn=announce)
    threading.Thread(target=run, daemon=True).start()
    time.sleep(120)
    """
)


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _child_after_parent_kill(mode: str) -> tuple[int, bool]:
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, mode],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert _alive(child)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and _alive(child):
            time.sleep(0.05)
        return child, _alive(child)
    finally:
        parent.kill()
        parent.wait()
        if parent.stdout is not None:
            parent.stdout.close()


def test_a_child_dies_with_a_parent_killed_by_sigkill() -> None:
    child, alive = _child_after_parent_kill("tied")
    assert not alive, f"child {child} outlived its killed parent"


def test_without_it_the_child_outlives_its_killed_parent() -> None:
    # The control: what the engine did before, and why an action could complete twice.
    child, alive = _child_after_parent_kill("untied")
    try:
        assert alive
    finally:
        if alive:
            os.kill(child, signal.SIGKILL)


def test_an_action_dies_with_its_killed_engine() -> None:
    # The engine's runner asks for it on every action (a worker thread starts it).
    child, alive = _child_after_parent_kill("runner")
    assert not alive, f"action {child} outlived its killed engine"


def test_chained_steps_run_in_order_and_none_are_skipped() -> None:
    calls: list[str] = []
    step = chained(None, lambda: calls.append("a"), None, lambda: calls.append("b"))
    assert step is not None
    step()
    assert calls == ["a", "b"]
    assert chained(None, None) is None


def test_a_parent_that_died_before_the_prctl_is_noticed() -> None:
    # The race the getppid() check closes: a child whose parent is already gone when the
    # step runs kills itself instead of running unwatched. Emulated by running the step
    # in a grandchild whose recorded parent (this process) is not its parent.
    from engine.run.parentdeath import killed_with_parent

    step = killed_with_parent()
    assert step is not None
    pid = os.fork()
    if pid == 0:  # child: fork again, so the step's recorded parent is not the parent
        grandchild = os.fork()
        if grandchild == 0:
            step()
            os._exit(0)
        _, status = os.waitpid(grandchild, 0)
        os._exit(100 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 100 + signal.SIGKILL
