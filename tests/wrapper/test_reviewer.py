"""Reviewer backends against real processes and a real loopback HTTP server."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.httpkit import serving
from wrapper.config import CommandReviewer, OpenAIReviewer
from wrapper.errors import ConfigError, ReviewerFailed, ReviewerSpawnError, ReviewerTimedOut
from wrapper.review.prompt import PromptInput, render_prompt
from wrapper.review.reviewer import (
    GIT_SAFETY_ENV,
    STDOUT_LIMIT_BYTES,
    ReviewResult,
    parse_verdict,
    reviewer_environment,
    run_reviewer,
)
from wrapper.stub_reviewer import diff_section, stub_review

# The test interpreter's directory first, so `python3` is the one running the tests.
PATH = os.pathsep.join([os.path.dirname(sys.executable), "/usr/bin", "/bin"])
API_KEY = "sk-test-0123456789abcdef"
ENVIRON = {
    "PATH": PATH,
    "HOME": "/nonexistent-home",
    "LANG": "C.UTF-8",
    "GITHUB_TOKEN": "ghp_must_never_reach_the_reviewer",
    "GH_TOKEN": "gho_must_never_reach_the_reviewer_either",
    "GITHUB_API_URL": "https://api.github.com",
    "GIT_CONFIG_PARAMETERS": "'core.hooksPath'='.githooks'",
    "REVIEWER_MODEL_DIR": "/models",
    "UNLISTED": "not for the reviewer",
    "OPENAI_API_KEY": API_KEY,
}
APPROVE_SCRIPT = "print('Looks fine.'); print('VERDICT: APPROVE')"


def write_script(tmp_path: Path, body: str, name: str = "reviewer.py") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return str(path)


def command(*argv: str, **settings: Any) -> CommandReviewer:
    return CommandReviewer(argv=list(argv), **settings)


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


def read_pid(path: Path, within: float = 5.0) -> int:
    end = time.monotonic() + within
    while time.monotonic() < end:
        if path.exists() and path.read_text().strip():
            return int(path.read_text())
        time.sleep(0.02)
    raise AssertionError(f"{path} never got a pid")


# --- parse_verdict -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        ("VERDICT: APPROVE", "APPROVE"),
        ("review\n  VERDICT:REQUEST_CHANGES  \r\n", "REQUEST_CHANGES"),
        ("VERDICT: APPROVE\nmore thoughts\nVERDICT: REQUEST_CHANGES\n", None),  # disagree
        ("VERDICT: REQUEST_CHANGES\nVERDICT: APPROVE", None),
        ("VERDICT: APPROVED", None),
        ("**VERDICT: APPROVE**", None),
        ("the VERDICT: APPROVE line", None),
        ("VERDICT: approve", None),
        ("", None),
    ],
)
def test_the_last_verdict_line_decides(text: str, verdict: str | None) -> None:
    assert parse_verdict(text) == verdict


# --- reviewer_environment ------------------------------------------------------------------


def test_the_environment_is_built_from_an_allow_list_without_github_tokens() -> None:
    env = reviewer_environment(
        ["GITHUB_TOKEN", "GH_TOKEN", "GITHUB_API_URL", "REVIEWER_MODEL_DIR", "ABSENT"],
        ENVIRON,
    )
    assert env == {
        "PATH": PATH,
        "HOME": "/nonexistent-home",
        "LANG": "C.UTF-8",
        "REVIEWER_MODEL_DIR": "/models",
        **GIT_SAFETY_ENV,
    }


def test_listed_variables_cannot_undo_the_git_safety_settings() -> None:
    environ = {**ENVIRON, "GIT_CONFIG_COUNT": "0", "GIT_TERMINAL_PROMPT": "1"}
    env = reviewer_environment(
        ["GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_TERMINAL_PROMPT"], environ
    )
    assert "GIT_CONFIG_PARAMETERS" not in env
    assert env["GIT_CONFIG_COUNT"] == "4" and env["GIT_TERMINAL_PROMPT"] == "0"
    assert env["GIT_CONFIG_KEY_0"] == "core.hooksPath"
    assert env["GIT_CONFIG_VALUE_0"] == "/dev/null"
    assert env["GIT_CONFIG_KEY_1"] == "submodule.recurse"
    assert env["GIT_CONFIG_VALUE_1"] == "false"


def test_relative_path_entries_are_dropped_so_the_worktree_is_never_searched() -> None:
    env = reviewer_environment([], {"PATH": f".:bin::{PATH}:relative/dir"})
    assert env["PATH"] == PATH


# --- command backend ---------------------------------------------------------------------


def test_a_command_reviewer_gets_no_github_token_even_when_listed(tmp_path: Path) -> None:
    dump = tmp_path / "env.json"
    script = write_script(
        tmp_path,
        f"""
        import json, os
        with open({str(dump)!r}, "w") as out:
            json.dump(dict(os.environ), out)
        print("VERDICT: APPROVE")
        """,
    )
    reviewer = command(
        "python3", script, env_passthrough=["GITHUB_TOKEN", "GH_TOKEN", "GITHUB_API_URL"]
    )
    result = run_reviewer(
        reviewer,
        "prompt",
        tmp_path,
        ENVIRON,
        extra_env_names=["REVIEWER_MODEL_DIR", "GIT_CONFIG_PARAMETERS"],
    )
    assert result == ReviewResult(verdict="APPROVE", body="VERDICT: APPROVE\n", model="command")
    seen = json.loads(dump.read_text())
    assert not any(name.startswith("GITHUB_") or name == "GH_TOKEN" for name in seen)
    assert ENVIRON["GITHUB_TOKEN"] not in json.dumps(seen)
    assert seen["REVIEWER_MODEL_DIR"] == "/models"
    assert "UNLISTED" not in seen and "OPENAI_API_KEY" not in seen
    for name, value in GIT_SAFETY_ENV.items():
        assert seen[name] == value


def test_git_hooks_from_the_worktree_never_run_inside_the_reviewer(tmp_path: Path) -> None:
    worktree = tmp_path / "worktree"
    subprocess.run(["git", "init", "-q", str(worktree)], check=True)
    hook_ran = tmp_path / "hook-ran"
    hook = worktree / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\ntouch {hook_ran}\n", encoding="utf-8")
    hook.chmod(0o755)
    script = write_script(
        tmp_path,
        """
        import subprocess
        subprocess.run(
            ["git", "-c", "user.name=r", "-c", "user.email=r@example.com",
             "commit", "-q", "--allow-empty", "-m", "reviewer commit"],
            check=True,
        )
        print("VERDICT: APPROVE")
        """,
    )
    result = run_reviewer(command("python3", script), "p", worktree, ENVIRON)
    assert result.verdict == "APPROVE"
    assert not hook_ran.exists()
    log = subprocess.run(
        ["git", "-C", str(worktree), "log", "--format=%s"],
        check=True,
        capture_output=True,
        text=True,
    )
    assert log.stdout == "reviewer commit\n"  # git really ran; only the hook did not


def test_the_reviewer_runs_in_the_worktree(tmp_path: Path) -> None:
    worktree = tmp_path / "wt"
    worktree.mkdir()
    script = write_script(tmp_path, "import os; print(os.getcwd()); print('VERDICT: APPROVE')")
    result = run_reviewer(command("python3", script), "p", worktree, ENVIRON)
    assert result.body.splitlines()[0] == str(worktree)


def test_the_prompt_arrives_on_stdin(tmp_path: Path) -> None:
    prompt = "Review this.\nünïcode ```\n" + "x" * 200_000 + "\nend\n"
    script = write_script(
        tmp_path,
        """
        import hashlib, sys
        data = sys.stdin.buffer.read()
        print(len(data), hashlib.sha256(data).hexdigest())
        print("VERDICT: REQUEST_CHANGES")
        """,
    )
    result = run_reviewer(command("python3", script), prompt, tmp_path, ENVIRON)
    encoded = prompt.encode("utf-8")
    assert result.body.splitlines()[0] == f"{len(encoded)} {hashlib.sha256(encoded).hexdigest()}"
    assert result.verdict == "REQUEST_CHANGES"


def test_the_prompt_arrives_by_file_and_the_file_is_deleted_afterwards(tmp_path: Path) -> None:
    worktree = tmp_path / "wt"
    worktree.mkdir()
    script = write_script(
        tmp_path,
        """
        import sys
        print(sys.argv[1])
        print(sys.argv[2])
        print(open(sys.argv[1], encoding="utf-8").read())
        print("stdin:", repr(sys.stdin.read()))
        print("VERDICT: APPROVE")
        """,
    )
    reviewer = command(
        "python3", script, "{prompt_file}", "--prompt={prompt_file}", prompt_via="file"
    )
    result = run_reviewer(reviewer, "the prompt text", worktree, ENVIRON)
    lines = result.body.splitlines()
    prompt_path = Path(lines[0])
    assert lines[1] == f"--prompt={prompt_path}"
    assert lines[2] == "the prompt text"
    assert "stdin: ''" in lines
    assert not prompt_path.exists() and not prompt_path.parent.exists()
    assert worktree not in prompt_path.parents
    assert list(worktree.iterdir()) == []


def test_file_mode_without_the_placeholder_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        run_reviewer(command("python3", "-c", "pass", prompt_via="file"), "p", tmp_path, ENVIRON)
    assert caught.value.reason == "invalid_config"


def test_a_timeout_kills_the_reviewer_and_its_children(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    script = write_script(
        tmp_path,
        f"""
        import subprocess, time
        child = subprocess.Popen(["sleep", "60"])
        with open({str(pid_file)!r}, "w") as out:
            out.write(str(child.pid))
        time.sleep(60)
        """,
    )
    started = time.monotonic()
    with pytest.raises(ReviewerTimedOut) as caught:
        run_reviewer(command("python3", script, timeout_seconds=1), "p", tmp_path, ENVIRON)
    assert caught.value.reason == "reviewer_timed_out"
    assert time.monotonic() - started < 10
    assert eventually_gone(read_pid(pid_file))


def test_a_reviewer_that_ignores_sigterm_is_killed_after_the_grace(tmp_path: Path) -> None:
    pid_file = tmp_path / "reviewer.pid"
    script = write_script(
        tmp_path,
        f"""
        import os, signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        with open({str(pid_file)!r}, "w") as out:
            out.write(str(os.getpid()))
        time.sleep(60)
        """,
    )
    with pytest.raises(ReviewerTimedOut):
        run_reviewer(
            command("python3", script, timeout_seconds=1),
            "p",
            tmp_path,
            ENVIRON,
            kill_grace_seconds=0.5,
        )
    assert eventually_gone(read_pid(pid_file))


def test_a_background_child_left_by_a_finished_reviewer_is_killed(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    script = write_script(
        tmp_path,
        f"""
        import subprocess
        child = subprocess.Popen(["sleep", "60"])  # inherits stdout and stderr
        with open({str(pid_file)!r}, "w") as out:
            out.write(str(child.pid))
        print("VERDICT: APPROVE", flush=True)
        """,
    )
    started = time.monotonic()
    result = run_reviewer(command("python3", script), "p", tmp_path, ENVIRON)
    assert result.verdict == "APPROVE"
    assert time.monotonic() - started < 10
    assert eventually_gone(read_pid(pid_file))


def test_a_missing_executable_cannot_spawn(tmp_path: Path) -> None:
    with pytest.raises(ReviewerSpawnError) as caught:
        run_reviewer(command("no-such-reviewer-cli"), "p", tmp_path, ENVIRON)
    assert caught.value.reason == "reviewer_spawn_failed"
    assert "no-such-reviewer-cli" in caught.value.message


def test_a_non_executable_file_cannot_spawn(tmp_path: Path) -> None:
    plain = tmp_path / "plain.txt"
    plain.write_text("not a program", encoding="utf-8")
    with pytest.raises(ReviewerSpawnError) as caught:
        run_reviewer(command(str(plain)), "p", tmp_path, ENVIRON)
    assert caught.value.reason == "reviewer_spawn_failed"


def test_a_relative_executable_path_is_refused_since_it_would_come_from_the_pr(
    tmp_path: Path,
) -> None:
    worktree = tmp_path / "wt"
    (worktree / "bin").mkdir(parents=True)
    planted = worktree / "bin" / "review"
    planted.write_text("#!/bin/sh\necho 'VERDICT: APPROVE'\n", encoding="utf-8")
    planted.chmod(0o755)
    with pytest.raises(ReviewerSpawnError) as caught:
        run_reviewer(command("bin/review"), "p", worktree, ENVIRON)
    assert caught.value.reason == "reviewer_spawn_failed"


def test_a_missing_worktree_cannot_spawn(tmp_path: Path) -> None:
    with pytest.raises(ReviewerSpawnError) as caught:
        run_reviewer(command("python3", "-c", "pass"), "p", tmp_path / "gone", ENVIRON)
    assert caught.value.reason == "reviewer_spawn_failed"


def test_a_non_zero_exit_fails_with_the_code_and_the_last_stderr_line(tmp_path: Path) -> None:
    script = write_script(
        tmp_path,
        """
        import sys
        print("VERDICT: APPROVE")
        print("warming up", file=sys.stderr)
        print("model quota exhausted", file=sys.stderr)
        sys.exit(3)
        """,
    )
    with pytest.raises(ReviewerFailed) as caught:
        run_reviewer(command("python3", script), "p", tmp_path, ENVIRON)
    assert caught.value.reason == "reviewer_failed"
    assert "exited with code 3" in caught.value.message
    assert "model quota exhausted" in caught.value.message


def test_output_without_a_verdict_line_fails(tmp_path: Path) -> None:
    script = write_script(tmp_path, "print('I think it is fine. **VERDICT: APPROVE**')")
    with pytest.raises(ReviewerFailed) as caught:
        run_reviewer(command("python3", script), "p", tmp_path, ENVIRON)
    assert caught.value.reason == "no_verdict"


def test_the_last_verdict_line_of_the_output_wins(tmp_path: Path) -> None:
    # A quoted verdict is ignored; an unquoted one that disagrees is no_verdict
    # (tests/wrapper/test_verdict_grammar.py).
    script = write_script(
        tmp_path,
        """
        print("Quoting the PR body:")
        print("> VERDICT: APPROVE")
        print("")
        print("But the change breaks the build.")
        print("VERDICT: REQUEST_CHANGES")
        """,
    )
    result = run_reviewer(command("python3", script, model="quoter"), "p", tmp_path, ENVIRON)
    assert (result.verdict, result.model) == ("REQUEST_CHANGES", "quoter")
    assert result.body.startswith("Quoting the PR body:\n")


def test_stdout_is_bounded_and_keeps_the_end_with_the_verdict(tmp_path: Path) -> None:
    script = write_script(
        tmp_path,
        """
        import sys
        for _ in range(3 * 1024):
            sys.stdout.write("y" * 1023 + "\\n")
        sys.stderr.write("e" * 100_000)
        print("VERDICT: APPROVE")
        """,
    )
    result = run_reviewer(command("python3", script), "p", tmp_path, ENVIRON)
    assert result.verdict == "APPROVE"
    first, rest = result.body.split("\n", 1)
    assert first.startswith("[kdev: the first ") and first.endswith("were dropped]")
    assert len(rest.encode()) == STDOUT_LIMIT_BYTES


# --- the stub reviewer ---------------------------------------------------------------------


def stub_prompt(diff: str, body: str = "") -> str:
    return render_prompt(
        PromptInput(
            repo="octo/widgets",
            pr=1,
            title="TODO in the title does not count",
            body=body,
            author="alice",
            base="main",
            head_sha="b" * 40,
            diff=diff,
            pr_url="https://github.com/octo/widgets/pull/1",
        )
    )


STUB = ("python3", "-P", "-m", "wrapper.stub_reviewer")


def test_the_stub_requests_changes_for_a_todo_in_the_diff(tmp_path: Path) -> None:
    prompt = stub_prompt("+def f():\n+    pass  # TODO: implement\n")
    result = run_reviewer(command(*STUB, model="stub"), prompt, tmp_path, ENVIRON)
    assert (result.verdict, result.model) == ("REQUEST_CHANGES", "stub")
    assert "TODO" in result.body


def test_the_stub_approves_a_diff_without_markers_whatever_the_body_says(tmp_path: Path) -> None:
    prompt = stub_prompt("+x = 1\n", body="FIXME: TODO everywhere")
    result = run_reviewer(command(*STUB), prompt, tmp_path, ENVIRON)
    assert result.verdict == "APPROVE"


def test_the_stub_reads_a_prompt_file_and_finds_fixme(tmp_path: Path) -> None:
    reviewer = command(*STUB, "{prompt_file}", prompt_via="file")
    result = run_reviewer(reviewer, stub_prompt("+y = 2  # FIXME\n"), tmp_path, ENVIRON)
    assert result.verdict == "REQUEST_CHANGES"


def test_the_stub_sleeps_and_exits_when_asked(tmp_path: Path) -> None:
    environ = {**ENVIRON, "KDEV_STUB_SLEEP": "0.3", "KDEV_STUB_EXIT": "9"}
    reviewer = command(*STUB, env_passthrough=["KDEV_STUB_SLEEP", "KDEV_STUB_EXIT"])
    started = time.monotonic()
    with pytest.raises(ReviewerFailed) as caught:
        run_reviewer(reviewer, stub_prompt("+x\n"), tmp_path, environ)
    assert time.monotonic() - started >= 0.3
    assert caught.value.reason == "reviewer_failed"
    assert "exited with code 9" in caught.value.message


def test_the_stub_finds_the_diff_fence_even_when_the_diff_holds_backticks() -> None:
    diff = "+```\n+TODO later\n+```\n"
    section = diff_section(stub_prompt(diff))
    assert section == diff.rstrip("\n")
    assert stub_review(stub_prompt(diff)).endswith("VERDICT: REQUEST_CHANGES")
    assert stub_review("+no fence, TODO").endswith("VERDICT: REQUEST_CHANGES")
    assert stub_review("plain").endswith("VERDICT: APPROVE")


# --- openai backend ------------------------------------------------------------------------


@dataclass
class FakeEndpoint:
    """A loopback chat-completions server: records requests, answers as configured."""

    status: int = 200
    answer: bytes = b""
    requests: list[dict[str, Any]] = field(default_factory=list)
    url: str = ""

    def completion(self, content: str | None) -> None:
        self.answer = json.dumps(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
            }
        ).encode()


@pytest.fixture
def endpoint() -> Iterator[FakeEndpoint]:
    fake = FakeEndpoint()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the http.server API
            length = int(self.headers.get("Content-Length", "0"))
            fake.requests.append(
                {
                    "path": self.path,
                    "authorization": self.headers.get("Authorization"),
                    "json": json.loads(self.rfile.read(length)),
                }
            )
            self.send_response(fake.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(fake.answer)))
            self.end_headers()
            self.wfile.write(fake.answer)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    with serving(Handler) as base:
        fake.url = f"{base}/v1"
        yield fake


def openai(base_url: str, **settings: Any) -> OpenAIReviewer:
    return OpenAIReviewer(backend="openai", base_url=base_url, model="gpt-test", **settings)


def test_the_openai_backend_posts_a_chat_completion_and_reads_the_verdict(
    tmp_path: Path, endpoint: FakeEndpoint
) -> None:
    endpoint.completion("The change is fine.\nVERDICT: APPROVE\n")
    result = run_reviewer(
        openai(endpoint.url + "/", temperature=0.2), "the prompt", tmp_path, ENVIRON
    )
    assert result == ReviewResult(
        verdict="APPROVE", body="The change is fine.\nVERDICT: APPROVE\n", model="gpt-test"
    )
    [request] = endpoint.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["authorization"] == f"Bearer {API_KEY}"
    assert request["json"] == {
        "model": "gpt-test",
        "messages": [{"role": "user", "content": "the prompt"}],
        "temperature": 0.2,
    }


def test_the_key_comes_from_the_variable_named_in_the_config(
    tmp_path: Path, endpoint: FakeEndpoint
) -> None:
    endpoint.completion("VERDICT: REQUEST_CHANGES")
    environ = {"LOCAL_LLM_KEY": "local-key"}
    result = run_reviewer(openai(endpoint.url, api_key_env="LOCAL_LLM_KEY"), "p", tmp_path, environ)
    assert result.verdict == "REQUEST_CHANGES"
    assert endpoint.requests[0]["authorization"] == "Bearer local-key"


@pytest.mark.parametrize("environ", [{}, {"OPENAI_API_KEY": ""}])
def test_a_missing_key_fails_before_any_request(
    tmp_path: Path, endpoint: FakeEndpoint, environ: dict[str, str]
) -> None:
    with pytest.raises(ReviewerSpawnError) as caught:
        run_reviewer(openai(endpoint.url), "p", tmp_path, environ)
    assert caught.value.reason == "reviewer_key_missing"
    assert endpoint.requests == []


def test_a_server_error_is_an_http_error_that_never_shows_the_key(
    tmp_path: Path, endpoint: FakeEndpoint
) -> None:
    endpoint.status = 500
    endpoint.answer = json.dumps({"error": {"message": f"boom for key {API_KEY}"}}).encode()
    with pytest.raises(ReviewerSpawnError) as caught:
        run_reviewer(openai(endpoint.url, max_attempts=1), "p", tmp_path, ENVIRON)
    assert caught.value.reason == "reviewer_http_error"
    assert "HTTP 500" in caught.value.message
    assert API_KEY not in str(caught.value) and API_KEY[:12] not in str(caught.value)


def test_a_rejected_key_reports_the_error_code_but_not_the_echoed_key(
    tmp_path: Path, endpoint: FakeEndpoint
) -> None:
    endpoint.status = 401
    endpoint.answer = json.dumps(
        {
            "error": {
                "message": f"Incorrect API key provided: {API_KEY[:8]}***{API_KEY[-4:]}",
                "type": "invalid_request_error",
                "code": "invalid_api_key",
            }
        }
    ).encode()
    with pytest.raises(ReviewerSpawnError) as caught:
        run_reviewer(openai(endpoint.url), "p", tmp_path, ENVIRON)
    assert caught.value.reason == "reviewer_http_error"
    assert "HTTP 401 (invalid_api_key)" in caught.value.message
    assert API_KEY[:8] not in str(caught.value) and API_KEY[-4:] not in str(caught.value)


def test_an_unreachable_endpoint_is_an_http_error(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(ReviewerSpawnError) as caught:
        run_reviewer(
            openai(f"http://127.0.0.1:{port}/v1", retry_wait_seconds=0), "p", tmp_path, ENVIRON
        )
    assert caught.value.reason == "reviewer_http_error"
    assert API_KEY not in str(caught.value)


def test_an_answer_without_a_verdict_fails(tmp_path: Path, endpoint: FakeEndpoint) -> None:
    endpoint.completion("I would rather not say.")
    with pytest.raises(ReviewerFailed) as caught:
        run_reviewer(openai(endpoint.url), "p", tmp_path, ENVIRON)
    assert caught.value.reason == "no_verdict"


@pytest.mark.parametrize("answer", [b"not json", b'{"choices": []}', b'{"choices": [{}]}'])
def test_a_malformed_answer_fails(tmp_path: Path, endpoint: FakeEndpoint, answer: bytes) -> None:
    endpoint.answer = answer
    with pytest.raises(ReviewerFailed) as caught:
        run_reviewer(openai(endpoint.url), "p", tmp_path, ENVIRON)
    assert caught.value.reason == "reviewer_failed"


def test_a_null_content_is_an_answer_without_a_verdict(
    tmp_path: Path, endpoint: FakeEndpoint
) -> None:
    endpoint.completion(None)
    with pytest.raises(ReviewerFailed) as caught:
        run_reviewer(openai(endpoint.url), "p", tmp_path, ENVIRON)
    assert caught.value.reason == "no_verdict"


def test_a_slow_endpoint_times_out(tmp_path: Path) -> None:
    def too_slow(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("the model is thinking", request=request)

    with pytest.raises(ReviewerTimedOut) as caught:
        run_reviewer(
            openai("https://llm.example/v1", timeout_seconds=1, retry_wait_seconds=0),
            "p",
            tmp_path,
            ENVIRON,
            transport=httpx.MockTransport(too_slow),
        )
    assert caught.value.reason == "reviewer_timed_out"
