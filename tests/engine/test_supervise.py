"""The one child supervisor (engine.run.supervise) against real processes: stdin data,
bounded output with its byte count, the two ways a group ends after its leader, spawn
failures, cancel, and nothing of the group left behind."""

from __future__ import annotations

import os
import shutil
import stat
import threading
import time
from pathlib import Path

import pytest

from engine.run.supervise import ChildSpec, Ending, SpawnFailed, supervise

SH = shutil.which("sh") or "/bin/sh"


def spec(script: str, **overrides: object) -> ChildSpec:
    fields: dict[str, object] = {
        "argv": ["sh", "-c", script],
        "executable": SH,
        "env": {"PATH": "/usr/bin:/bin"},
        "cwd": None,
        "timeout_seconds": 20.0,
        "kill_grace_seconds": 0.5,
        "stdout_limit": 4096,
        "stderr_limit": 4096,
    }
    fields.update(overrides)
    return ChildSpec(**fields)  # type: ignore[arg-type]


def is_gone(pid: int) -> bool:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return True
    return fields[0] in ("Z", "X")


def eventually_gone(pid: int, within: float = 5.0) -> bool:
    """SIGKILL is delivered asynchronously: give the kernel a moment."""
    end = time.monotonic() + within
    while not is_gone(pid) and time.monotonic() < end:
        time.sleep(0.02)
    return is_gone(pid)


def test_stdin_data_reaches_the_child_byte_for_byte() -> None:
    data = "prompt with ünïcode\nand a second line\n".encode() * 100
    result = supervise(spec("cat", stdin=data, stdout_limit=len(data) * 2))
    assert result.ending is Ending.EXITED and result.returncode == 0
    assert result.stdout.data == data
    assert result.stdout.total == len(data) and result.stdout.dropped == 0


def test_a_child_that_never_reads_a_large_stdin_is_not_blocked() -> None:
    began = time.monotonic()
    result = supervise(spec("echo done", stdin=b"x" * (8 * 1024 * 1024)))
    assert result.ending is Ending.EXITED and result.stdout.text() == "done\n"
    assert time.monotonic() - began < 10


def test_only_the_last_bytes_are_kept_and_the_rest_is_counted() -> None:
    result = supervise(
        spec("i=0; while [ $i -lt 3000 ]; do echo line$i; i=$((i+1)); done; echo END >&2")
    )
    assert result.stdout.text().endswith("line2999\n")
    assert len(result.stdout.data) == 4096
    assert result.stdout.total == sum(len(f"line{i}\n") for i in range(3000))
    assert result.stdout.dropped == result.stdout.total - 4096
    assert result.stderr.text() == "END\n" and result.stderr.dropped == 0


# The leader exits at once. One background child writes 0.3 s later (and then ends);
# another sleeps with its output elsewhere, so the pipes close after the late line.
BACKGROUND = "(sleep 0.3; echo late) & sleep 60 >/dev/null 2>&1 & echo $!"


def test_without_kill_on_exit_a_background_child_may_finish_its_last_write() -> None:
    result = supervise(spec(BACKGROUND, drain_after_exit_seconds=10.0))
    assert result.stdout.text().splitlines()[-1] == "late"
    assert eventually_gone(int(result.stdout.text().split()[0]))  # killed once drained


def test_with_kill_on_exit_the_group_is_killed_when_the_leader_exits() -> None:
    result = supervise(spec(BACKGROUND, drain_after_exit_seconds=10.0, kill_group_on_exit=True))
    assert "late" not in result.stdout.text()
    assert eventually_gone(int(result.stdout.text().split()[0]))


def test_the_deadline_terminates_the_group_and_says_so() -> None:
    result = supervise(spec("sleep 60 & sleep 60", timeout_seconds=0.3))
    assert result.ending is Ending.TIMED_OUT
    assert result.returncode is not None and result.returncode < 0


def test_a_child_ignoring_sigterm_is_killed_after_the_grace() -> None:
    began = time.monotonic()
    result = supervise(spec("trap '' TERM; sleep 60", timeout_seconds=0.3, kill_grace_seconds=0.3))
    assert result.ending is Ending.TIMED_OUT and result.returncode == -9
    assert time.monotonic() - began < 10


def test_cancel_ends_the_child_as_cancelled() -> None:
    cancel = threading.Event()
    timer = threading.Timer(0.3, cancel.set)
    timer.start()
    try:
        result = supervise(spec("sleep 60"), cancel=cancel)
    finally:
        timer.cancel()
    assert result.ending is Ending.CANCELLED


def test_a_file_that_cannot_be_executed_raises_spawn_failed(tmp_path: Path) -> None:
    script = tmp_path / "not-executable"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(stat.S_IRUSR | stat.S_IWUSR)
    with pytest.raises(SpawnFailed) as caught:
        supervise(spec("", argv=["not-executable"], executable=str(script)))
    assert "ermission" in caught.value.detail


def test_a_nul_byte_in_an_argument_raises_spawn_failed() -> None:
    with pytest.raises(SpawnFailed):
        supervise(spec("", argv=["sh", "-c", "echo \0"]))


def test_an_on_spawn_error_kills_the_group_and_propagates() -> None:
    seen: list[int] = []

    def fail(pid: int) -> None:
        seen.append(pid)
        raise RuntimeError("recording the pid failed")

    with pytest.raises(RuntimeError):
        supervise(spec("sleep 60"), on_spawn=fail)
    assert seen and eventually_gone(seen[0])


def test_no_descriptor_is_left_open_on_any_path(tmp_path: Path) -> None:
    def open_fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    def fail(pid: int) -> None:
        raise RuntimeError("on_spawn failed")

    before = open_fds()
    for _ in range(5):
        supervise(spec("echo out; echo err >&2", stdin=b"data"))
        supervise(spec("sleep 60", timeout_seconds=0.05, kill_grace_seconds=0.05))
        with pytest.raises(SpawnFailed):
            supervise(spec("", argv=["nope"], executable=str(tmp_path / "nope"), stdin=b"x"))
        with pytest.raises(RuntimeError):
            supervise(spec("sleep 60"), on_spawn=fail)
    assert open_fds() == before
