"""The runner against real processes: refusals, exits, deadlines, tails, process groups."""

from __future__ import annotations

import os
import signal
import stat
import sys
import threading
import time
from datetime import UTC
from pathlib import Path

import pytest

from engine.run.runner import RunOutcome, RunRequest, build_environment, run_action
from engine.schedules.argv import render_argv
from engine.store.models import RunStatus

# The test interpreter's directory first, so `python3` is the one running the tests.
PATH = os.pathsep.join([os.path.dirname(sys.executable), "/usr/bin", "/bin"])
ALLOW = frozenset({"sh", "python3", "true", "false", "env"})


def request(
    *argv: str,
    timeout: float = 20.0,
    grace: float = 0.5,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
    allowlist: frozenset[str] = ALLOW,
) -> RunRequest:
    return RunRequest(
        argv=list(argv),
        cwd=cwd,
        env={"PATH": PATH} if env is None else env,
        timeout_seconds=timeout,
        allowlist=allowlist,
        kill_grace_seconds=grace,
    )


def sh(
    script: str, *, timeout: float = 20.0, grace: float = 0.5, cwd: str | None = None
) -> RunOutcome:
    return run_action(request("sh", "-c", script, timeout=timeout, grace=grace, cwd=cwd))


def is_gone(pid: int) -> bool:
    """True when ``pid`` no longer runs (absent, or a zombie nobody has reaped yet)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return True
    return fields[0] in ("Z", "X")


def eventually_gone(pid: int, within: float = 5.0) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        if is_gone(pid):
            return True
        time.sleep(0.05)
    return is_gone(pid)


def peak_rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc/self/status")


def test_exit_zero_succeeds_with_aware_utc_times() -> None:
    outcome = run_action(request("true"))
    assert outcome.status is RunStatus.SUCCEEDED
    assert outcome.reason is None and outcome.exit_code == 0 and outcome.pid is not None
    assert outcome.started_at.tzinfo is UTC
    assert outcome.started_at <= outcome.finished_at


def test_a_nonzero_exit_fails_with_its_exit_code() -> None:
    outcome = sh("echo out; echo err >&2; exit 3")
    assert (outcome.status, outcome.reason, outcome.exit_code) == (
        RunStatus.FAILED,
        "nonzero_exit",
        3,
    )
    assert outcome.stdout_tail == "out\n" and outcome.stderr_tail == "err\n"


def test_a_process_killed_by_a_signal_fails_with_the_negative_signal() -> None:
    outcome = sh("kill -9 $$")
    assert (outcome.status, outcome.reason, outcome.exit_code) == (
        RunStatus.FAILED,
        "killed_by_signal",
        -signal.SIGKILL,
    )


def test_argv_zero_stays_the_bare_name_and_args_are_not_shell_parsed() -> None:
    outcome = run_action(
        request("python3", "-c", "import sys; print(sys.argv)", "$(echo hi); rm -rf /", "a b")
    )
    assert outcome.status is RunStatus.SUCCEEDED
    assert outcome.stdout_tail == "['-c', '$(echo hi); rm -rf /', 'a b']\n"
    outcome = sh('printf %s "$0"')
    assert outcome.stdout_tail == "sh"


def test_a_path_as_the_executable_is_refused() -> None:
    outcome = run_action(request("/bin/true", allowlist=frozenset({"/bin/true", "true"})))
    assert (outcome.status, outcome.reason, outcome.pid) == (
        RunStatus.REFUSED,
        "command_not_allowlisted",
        None,
    )


def test_an_allowlist_revoked_between_build_and_spawn_refuses_the_run() -> None:
    argv = render_argv("true", [], {}, frozenset({"true"}))
    outcome = run_action(request(*argv, allowlist=frozenset({"sh"})))
    assert (outcome.status, outcome.reason, outcome.pid) == (
        RunStatus.REFUSED,
        "command_not_allowlisted",
        None,
    )


def test_an_empty_argv_is_refused() -> None:
    outcome = run_action(request())
    assert (outcome.status, outcome.reason) == (RunStatus.REFUSED, "command_not_allowlisted")


def test_a_command_missing_from_path_is_refused() -> None:
    outcome = run_action(request("no-such-command-li", allowlist=frozenset({"no-such-command-li"})))
    assert (outcome.status, outcome.reason, outcome.pid) == (
        RunStatus.REFUSED,
        "command_not_found",
        None,
    )


def test_relative_path_entries_are_never_searched(tmp_path: Path) -> None:
    fake = tmp_path / "true"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    outcome = run_action(request("true", cwd=str(tmp_path), env={"PATH": ".:"}))
    assert (outcome.status, outcome.reason) == (RunStatus.REFUSED, "command_not_found")


def test_a_missing_working_directory_is_refused(tmp_path: Path) -> None:
    outcome = run_action(request("true", cwd=str(tmp_path / "gone")))
    assert (outcome.status, outcome.reason, outcome.pid) == (RunStatus.REFUSED, "cwd_missing", None)


def test_the_child_runs_in_the_given_working_directory(tmp_path: Path) -> None:
    outcome = sh("pwd", cwd=str(tmp_path))
    assert outcome.stdout_tail == f"{tmp_path}\n"


def test_an_executable_that_cannot_be_executed_is_refused_as_spawn_failed(tmp_path: Path) -> None:
    broken = tmp_path / "broken-tool"
    broken.write_bytes(b"\x00\x01 not a program")
    broken.chmod(broken.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    outcome = run_action(
        request("broken-tool", env={"PATH": str(tmp_path)}, allowlist=frozenset({"broken-tool"}))
    )
    assert (outcome.status, outcome.reason, outcome.pid) == (
        RunStatus.REFUSED,
        "spawn_failed",
        None,
    )
    assert "format" in outcome.stderr_tail.lower()


def test_the_child_sees_only_the_environment_it_was_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LI_TEST_CANARY", "leaked")
    outcome = run_action(request("env", env={"PATH": PATH, "ONLY_THIS": "1"}))
    assert outcome.status is RunStatus.SUCCEEDED
    assert set(outcome.stdout_tail.splitlines()) == {f"PATH={PATH}", "ONLY_THIS=1"}


def test_build_environment_adds_only_present_passthrough_names() -> None:
    base = {"PATH": "/usr/bin", "LANG": "C.UTF-8"}
    source = {"GITHUB_TOKEN": "t", "SECRET": "s", "PATH": "/evil"}
    env = build_environment(base, ["GITHUB_TOKEN", "ABSENT"], source)
    assert env == {"PATH": "/usr/bin", "LANG": "C.UTF-8", "GITHUB_TOKEN": "t"}
    assert base == {"PATH": "/usr/bin", "LANG": "C.UTF-8"}


def test_on_spawn_receives_the_real_pid() -> None:
    seen: list[int] = []
    outcome = run_action(request("sh", "-c", "echo $$"), on_spawn=seen.append)
    assert seen == [outcome.pid]
    assert outcome.stdout_tail == f"{outcome.pid}\n"


def test_the_child_leads_its_own_process_group() -> None:
    outcome = run_action(request("python3", "-c", "import os; print(os.getpgid(0), os.getpid())"))
    pgid, pid = outcome.stdout_tail.split()
    assert pgid == pid == str(outcome.pid)
    assert int(pgid) != os.getpgid(0)


def test_a_command_that_ignores_sigterm_is_killed_after_the_grace() -> None:
    began = time.monotonic()
    outcome = sh("trap '' TERM; sleep 60", timeout=0.5, grace=0.5)
    elapsed = time.monotonic() - began
    assert (outcome.status, outcome.reason) == (RunStatus.TIMED_OUT, "deadline_exceeded")
    assert outcome.exit_code == -signal.SIGKILL
    assert elapsed < 10


def test_a_command_that_honours_sigterm_stops_at_the_deadline() -> None:
    outcome = sh("sleep 60", timeout=0.3, grace=5.0)
    assert (outcome.status, outcome.reason) == (RunStatus.TIMED_OUT, "deadline_exceeded")
    assert outcome.exit_code == -signal.SIGTERM


def test_setting_cancel_terminates_the_run_as_cancelled() -> None:
    cancel = threading.Event()
    spawned = threading.Event()
    result: list[RunOutcome] = []
    worker = threading.Thread(
        target=lambda: result.append(
            run_action(
                request("sh", "-c", "sleep 60"), on_spawn=lambda pid: spawned.set(), cancel=cancel
            )
        )
    )
    worker.start()
    assert spawned.wait(10)
    cancel.set()
    worker.join(10)
    assert not worker.is_alive()
    assert (result[0].status, result[0].reason) == (RunStatus.CANCELLED, "engine_shutdown")


def test_an_already_set_cancel_spawns_nothing() -> None:
    cancel = threading.Event()
    cancel.set()
    outcome = run_action(request("true"), cancel=cancel)
    assert (outcome.status, outcome.reason, outcome.pid) == (
        RunStatus.CANCELLED,
        "engine_shutdown",
        None,
    )


def test_a_hundred_megabytes_of_output_keep_only_the_last_tail_bytes() -> None:
    script = (
        "import sys\n"
        "out = sys.stdout.buffer\n"
        "block = bytes(range(48, 58)) * 6553 + b'!!'\n"  # 65532 bytes
        "total = 0\n"
        "while total < 100 * 1024 * 1024:\n"
        "    out.write(block); total += len(block)\n"
        "out.write(b'END' * 2000)\n"
    )
    before = peak_rss_kib()
    outcome = run_action(request("python3", "-c", script, timeout=60))
    growth_kib = peak_rss_kib() - before
    assert outcome.status is RunStatus.SUCCEEDED
    assert outcome.stdout_tail == ("END" * 2000)[-4096:]
    assert len(outcome.stdout_tail.encode()) == 4096
    assert growth_kib < 50 * 1024


def test_a_tail_cut_inside_a_character_is_decoded_with_a_replacement() -> None:
    outcome = run_action(
        RunRequest(
            argv=["python3", "-c", "print('é' * 10, end='')"],
            cwd=None,
            env={"PATH": PATH},
            timeout_seconds=20,
            allowlist=ALLOW,
            tail_bytes=5,
        )
    )
    assert outcome.stdout_tail == "\ufffdéé"


def test_a_background_grandchild_holding_stdout_does_not_hang_the_run() -> None:
    began = time.monotonic()
    outcome = sh("sleep 60 & echo $!")
    elapsed = time.monotonic() - began
    assert outcome.status is RunStatus.SUCCEEDED
    assert elapsed < 10
    assert eventually_gone(int(outcome.stdout_tail))


def test_a_grandchild_that_escaped_the_group_does_not_hang_the_run() -> None:
    began = time.monotonic()
    outcome = sh("setsid sleep 60 & echo $!")
    elapsed = time.monotonic() - began
    escaped = int(outcome.stdout_tail)
    try:
        assert outcome.status is RunStatus.SUCCEEDED
        assert elapsed < 10
        readers = {f"stdout-{outcome.pid}", f"stderr-{outcome.pid}"}
        assert not [t for t in threading.enumerate() if t.name in readers]
    finally:
        os.kill(escaped, signal.SIGKILL)


def test_a_timed_out_run_takes_its_background_children_down_too() -> None:
    outcome = sh("sleep 60 & echo $!; sleep 60", timeout=0.5, grace=0.5)
    assert outcome.status is RunStatus.TIMED_OUT
    assert eventually_gone(int(outcome.stdout_tail))


def test_if_on_spawn_raises_the_process_is_killed_and_the_error_propagates() -> None:
    pids: list[int] = []

    def fail(pid: int) -> None:
        pids.append(pid)
        raise RuntimeError("cannot record the run")

    with pytest.raises(RuntimeError):
        run_action(request("sh", "-c", "sleep 60"), on_spawn=fail)
    assert eventually_gone(pids[0])
