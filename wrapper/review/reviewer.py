"""Reviewer backends: a command (argv, no shell) or an OpenAI-compatible HTTP endpoint.

Why it is built this way: docs/decisions.md D16.

:func:`run_reviewer` turns a rendered prompt into a :class:`ReviewResult`, or raises:

- :class:`~wrapper.errors.ReviewerSpawnError`: ``reviewer_spawn_failed`` (the command
  could not start: not found, not executable, worktree missing), ``reviewer_key_missing``
  (the API key variable is unset or empty), ``reviewer_http_error`` (network error or a
  non-2xx answer; the key never appears in the message)
- :class:`~wrapper.errors.ReviewerTimedOut`: ``reviewer_timed_out`` (the command's whole
  process group got SIGTERM, then SIGKILL after a grace; or the endpoint was too slow)
- :class:`~wrapper.errors.ReviewerFailed`: ``reviewer_failed`` (non-zero exit, killed
  by a signal, malformed HTTP answer) or ``no_verdict`` (no ``VERDICT:`` line)

A command reviewer runs in the review tree (in a :mod:`wrapper.review.sandbox` when one is
given) with an environment built by :func:`reviewer_environment` (never a GitHub token;
git hooks and submodule recursion off), under li's one child supervisor
(:mod:`engine.run.supervise`): its own session and process group, stdin from the prompt
(or /dev/null when the prompt goes by file). Its stdout is kept up to
:data:`STDOUT_LIMIT_BYTES` (the *last* bytes, since the verdict comes last) and its
stderr tail up to :data:`STDERR_TAIL_BYTES`. When the leader exits, whatever is left in
its process group is SIGKILLed at once.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

import httpx

from engine.run.supervise import ChildResult, ChildSpec, Ending, SpawnFailed, supervise
from wrapper.config import CommandReviewer, OpenAIReviewer
from wrapper.errors import ConfigError, ReviewerFailed, ReviewerSpawnError, ReviewerTimedOut
from wrapper.retrying import HttpRetryPolicy, RetryableStatus, call_with_retries, retryable_status
from wrapper.review.findings import Finding
from wrapper.review.sandbox import ProxyEndpoint, Sandbox
from wrapper.usage import UsageMeter

if TYPE_CHECKING:
    from wrapper.review.context import ReviewContext

VERDICTS = ("APPROVE", "REQUEST_CHANGES")
VERDICT_LINE = re.compile(r"^\s*VERDICT:\s*(APPROVE|REQUEST_CHANGES)\s*$", re.MULTILINE)
PROMPT_FILE_PLACEHOLDER = "{prompt_file}"
STDOUT_LIMIT_BYTES = 1024 * 1024
STDERR_TAIL_BYTES = 4096
KILL_GRACE_SECONDS = 5.0
HTTP_RESPONSE_LIMIT_BYTES = 8 * 1024 * 1024
BASE_ENV_NAMES = ("PATH", "HOME", "LANG")
# Git inside the reviewer's worktree: no hooks from the PR, no submodule fetches, no
# repository found implicitly in a bare one the PR carries (its config could name an
# fsmonitor), no fsmonitor at all, and never a credential prompt (D67).
GIT_SAFETY_ENV = {
    "GIT_CONFIG_COUNT": "4",
    "GIT_CONFIG_KEY_0": "core.hooksPath",
    "GIT_CONFIG_VALUE_0": "/dev/null",
    "GIT_CONFIG_KEY_1": "submodule.recurse",
    "GIT_CONFIG_VALUE_1": "false",
    "GIT_CONFIG_KEY_2": "safe.bareRepository",
    "GIT_CONFIG_VALUE_2": "explicit",
    "GIT_CONFIG_KEY_3": "core.fsmonitor",
    "GIT_CONFIG_VALUE_3": "false",
    "GIT_TERMINAL_PROMPT": "0",
}

_ERROR_CODE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


@dataclass(frozen=True)
class ReviewResult:
    """A finished review: the verdict, the reviewer's whole output, and who wrote it."""

    verdict: str  # "APPROVE" | "REQUEST_CHANGES"
    body: str
    model: str
    # Roster mode only: every reviewer's findings, to be posted on the PR (None: one
    # backend, nothing posted per finding).
    findings: tuple[Finding, ...] | None = None
    # Roster mode only: each roster reviewer's own verdict, in the roster's order.
    verdicts: tuple[str, ...] = ()


def parse_verdict(text: str) -> str | None:
    """The verdict under the strict grammar of :mod:`wrapper.review.verdict_grammar` (one
    unquoted ``VERDICT:`` line, last, not contradicted); None for anything else."""
    from wrapper.review.verdict_grammar import parse_verdict as strict_parse_verdict

    return strict_parse_verdict(text)


def _refused_name(name: str) -> bool:
    # The reviewer must never hold a GitHub token, and must not be able to undo the git
    # safety settings through an allow-listed GIT_CONFIG* variable.
    return name in ("GITHUB_TOKEN", "GH_TOKEN") or name.startswith(("GITHUB_", "GIT_CONFIG"))


def _absolute_path_entries(path: str) -> str:
    # A relative PATH entry would resolve inside the worktree, i.e. in the PR's files.
    return os.pathsep.join(entry for entry in path.split(os.pathsep) if os.path.isabs(entry))


def reviewer_environment(
    names: Iterable[str], environ: Mapping[str, str], *, withheld: Iterable[str] = ()
) -> dict[str, str]:
    """The complete environment of a command reviewer, built from nothing.

    PATH (absolute entries only), HOME and LANG, then each name in ``names`` that is set
    in ``environ``, except ``GITHUB_TOKEN``, ``GH_TOKEN``, any ``GITHUB_*`` and any
    ``GIT_CONFIG*`` name, and the ``withheld`` names (an API proxy's ``key_env``), which
    are dropped even when listed; then :data:`GIT_SAFETY_ENV` (hooks off, no submodule
    recursion, no terminal prompt), which always wins.
    """
    environment: dict[str, str] = {}
    refused = set(withheld)
    for name in (*BASE_ENV_NAMES, *names):
        if name in environ and not _refused_name(name) and name not in refused:
            environment[name] = environ[name]
    environment["PATH"] = _absolute_path_entries(environment.get("PATH", os.defpath))
    environment.update(GIT_SAFETY_ENV)
    return environment


class RunOptions(TypedDict, total=False):
    """The keyword options :func:`run_reviewer` passes on to :func:`run_reviewer_text`
    (whose signature holds their defaults)."""

    extra_env_names: Iterable[str]
    transport: httpx.BaseTransport | None
    kill_grace_seconds: float
    sandbox: Sandbox | None
    meter: UsageMeter | None


def leg_options(ctx: ReviewContext) -> RunOptions:
    """A review run's :class:`RunOptions` for its reviewer legs: the config's
    ``reviewer_env``, the run's reviewer transport, sandbox and usage meter."""
    return RunOptions(
        extra_env_names=ctx.config.reviewer_env,
        transport=ctx.reviewer_transport,
        sandbox=ctx.sandbox,
        meter=ctx.meter,
    )


def run_reviewer(
    reviewer: CommandReviewer | OpenAIReviewer,
    prompt: str,
    worktree: Path,
    environ: Mapping[str, str],
    **options: Unpack[RunOptions],
) -> ReviewResult:
    """Run one review of ``prompt`` and return its verdict; raises as the module says.

    ``environ`` is where allow-listed variables and the API key are read from (the caller
    passes ``os.environ``). A command reviewer sees ``reviewer.env_passthrough`` plus
    ``extra_env_names`` (typically ``KdevConfig.reviewer_env``), filtered by
    :func:`reviewer_environment`. ``transport`` replaces httpx's network transport for
    the openai backend (tests); ``kill_grace_seconds`` is the wait between SIGTERM and
    SIGKILL of a command reviewer's process group after its timeout. ``sandbox``
    (:mod:`wrapper.review.sandbox`; None: none) is where a command reviewer runs;
    ``meter`` (None: not counted) gets the leg's usage (:mod:`wrapper.usage`, D103).
    """
    output = run_reviewer_text(reviewer, prompt, worktree, environ, **options)
    verdict = parse_verdict(output)
    if verdict is None:
        raise ReviewerFailed(
            f"reviewer {reviewer.model} gave no line 'VERDICT: APPROVE' or "
            "'VERDICT: REQUEST_CHANGES'",
            "no_verdict",
        )
    return ReviewResult(verdict=verdict, body=output, model=reviewer.model)


def run_reviewer_text(
    reviewer: CommandReviewer | OpenAIReviewer,
    prompt: str,
    worktree: Path,
    environ: Mapping[str, str],
    *,
    extra_env_names: Iterable[str] = (),
    transport: httpx.BaseTransport | None = None,
    kill_grace_seconds: float = KILL_GRACE_SECONDS,
    sandbox: Sandbox | None = None,
    response_format: dict[str, Any] | None = None,
    meter: UsageMeter | None = None,
) -> str:
    """The backend's whole output for ``prompt``, with no verdict required (``kdev
    describe-pr``, the findings contract). Same sandbox, environment and errors as
    :func:`run_reviewer`, minus ``no_verdict``; ``response_format`` is sent to an openai
    backend as the request's ``response_format`` (structured outputs, D86). A command
    reviewer's ``usage`` format other than ``none`` reads the review and its usage out of
    the CLI's JSON (:func:`wrapper.usage_shapes.command_output`)."""
    from wrapper.usage_shapes import command_output, openai_usage

    if isinstance(reviewer, OpenAIReviewer):
        payload = _run_openai(reviewer, prompt, environ, transport, response_format)
        if meter is not None:
            meter.add(reviewer.model, openai_usage(payload))
        return _completion_text(payload)
    names = [*reviewer.env_passthrough, *extra_env_names]
    proxy = reviewer.api_proxy
    env = reviewer_environment(names, environ, withheld=[proxy.key_env] if proxy else [])
    output = _run_command(
        reviewer,
        prompt,
        worktree,
        env,
        kill_grace_seconds,
        sandbox or Sandbox("off"),
        environ,
        transport,
    )
    text, reported = command_output(reviewer.usage, output)
    if meter is not None:
        meter.add(reviewer.model, reported)
    return text


# --- command backend -------------------------------------------------------------------


def _resolve_executable(command: str, env: Mapping[str, str]) -> str:
    if "/" in command:
        if not os.path.isabs(command):
            # Relative to the worktree would mean a file from the PR.
            raise ReviewerSpawnError(
                f"reviewer executable {command!r} must be a bare name or an absolute path",
                "reviewer_spawn_failed",
            )
        return command
    found = shutil.which(command, path=env.get("PATH", ""))
    if found is None:
        raise ReviewerSpawnError(
            f"reviewer executable {command!r} is not on PATH {env.get('PATH', '')!r}",
            "reviewer_spawn_failed",
        )
    return found


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else "(no stderr)"


def _check_command(reviewer: CommandReviewer, worktree: Path, env: Mapping[str, str]) -> str:
    """The reviewer's executable, once its config and worktree are fit to run."""
    if reviewer.prompt_via == "file" and not any(
        PROMPT_FILE_PLACEHOLDER in arg for arg in reviewer.argv
    ):
        raise ConfigError(
            f"reviewer.prompt_via is 'file' but no argument of reviewer.argv contains "
            f"{PROMPT_FILE_PLACEHOLDER}",
            "invalid_config",
        )
    if not worktree.is_dir():
        raise ReviewerSpawnError(f"worktree {worktree} is not a directory", "reviewer_spawn_failed")
    return _resolve_executable(reviewer.argv[0], env)


def _run_command(
    reviewer: CommandReviewer,
    prompt: str,
    worktree: Path,
    env: dict[str, str],
    grace_seconds: float,
    sandbox: Sandbox,
    environ: Mapping[str, str],
    transport: httpx.BaseTransport | None,
) -> str:
    executable = _check_command(reviewer, worktree, env)
    # The prompt lives in a private directory outside the worktree and is deleted on
    # every path; in stdin mode the child's stdin is a regular file holding it, so a
    # reviewer that never reads its stdin cannot block us.
    with (
        tempfile.TemporaryDirectory(prefix="kdev-prompt-") as prompt_dir,
        _leg_proxy(reviewer, environ, Path(prompt_dir), sandbox, transport) as (added, endpoint),
    ):
        env = {**env, **added}
        prompt_path = Path(prompt_dir) / "prompt.md"
        prompt_path.write_text(prompt, encoding="utf-8")
        if reviewer.prompt_via == "file":
            argv = [arg.replace(PROMPT_FILE_PLACEHOLDER, str(prompt_path)) for arg in reviewer.argv]
        else:
            argv = list(reviewer.argv)
        launch = sandbox.launch(
            executable,
            argv,
            worktree,
            env,
            Path(prompt_dir),
            readonly=[prompt_path],
            network=reviewer.network,
            proxy=endpoint,
        )
        spec = ChildSpec(
            **asdict(launch),  # what Popen gets: ChildSpec's fields of the same names
            timeout_seconds=reviewer.timeout_seconds,
            kill_grace_seconds=grace_seconds,
            stdout_limit=STDOUT_LIMIT_BYTES,
            stderr_limit=STDERR_TAIL_BYTES,
            stdin=prompt.encode("utf-8") if reviewer.prompt_via == "stdin" else None,
            kill_group_on_exit=True,
        )
        try:
            result = supervise(spec)
        except SpawnFailed as exc:
            raise ReviewerSpawnError(
                f"cannot start reviewer {executable}: {exc.detail}", "reviewer_spawn_failed"
            ) from None
    return _command_output(reviewer, result)


@contextmanager
def _leg_proxy(
    reviewer: CommandReviewer,
    environ: Mapping[str, str],
    private: Path,
    sandbox: Sandbox,
    transport: httpx.BaseTransport | None,
) -> Iterator[tuple[dict[str, str], ProxyEndpoint | None]]:
    """The leg's API proxy (:mod:`wrapper.review.proxy`) while the block runs, if any."""
    if reviewer.api_proxy is None:
        yield {}, None
        return
    from wrapper.review.proxy import leg_proxy

    with leg_proxy(reviewer.api_proxy, environ, private, sandbox, transport=transport) as got:
        yield got


def _command_output(reviewer: CommandReviewer, result: ChildResult) -> str:
    """The reviewer's stdout, or the error its ending calls for."""
    if result.ending is not Ending.EXITED:
        raise ReviewerTimedOut(
            f"reviewer {reviewer.argv[0]} passed its {reviewer.timeout_seconds} s timeout; "
            "its process group was killed",
            "reviewer_timed_out",
        )
    code = result.returncode
    if code != 0:
        how = (
            f"was killed by signal {-code}"
            if code is not None and code < 0
            else (f"exited with code {code}")
        )
        raise ReviewerFailed(
            f"reviewer {reviewer.argv[0]} {how}: {_last_line(result.stderr.text())}",
            "reviewer_failed",
        )
    output = result.stdout.text()
    if result.stdout.dropped > 0:
        output = (
            f"[kdev: the first {result.stdout.dropped} bytes of reviewer output were dropped]\n"
            f"{output}"
        )
    return output


# --- openai backend --------------------------------------------------------------------


def _scrub(text: str, secret: str) -> str:
    return text.replace(secret, "***") if secret else text


def _error_code(response_bytes: bytes) -> str | None:
    """A short machine code from an OpenAI-style error body (never its free text, which
    may echo part of the key)."""
    try:
        error = json.loads(response_bytes).get("error")
    except (ValueError, AttributeError):
        return None
    if not isinstance(error, dict):
        return None
    for field in ("code", "type"):
        value = error.get(field)
        if isinstance(value, str) and _ERROR_CODE.match(value):
            return value
    return None


def _completion_text(payload: Any) -> str:
    try:
        content = payload["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise ReviewerFailed(
            "the reviewer endpoint answered without choices[0].message.content",
            "reviewer_failed",
        ) from None
    if content is None:
        return ""
    if not isinstance(content, str):
        raise ReviewerFailed(
            "the reviewer endpoint's choices[0].message.content is not a string",
            "reviewer_failed",
        )
    return content


def _run_openai(
    reviewer: OpenAIReviewer,
    prompt: str,
    environ: Mapping[str, str],
    transport: httpx.BaseTransport | None,
    response_format: dict[str, Any] | None = None,
) -> Any:
    """The endpoint's answer, parsed (its text: :func:`_completion_text`)."""
    key = environ.get(reviewer.api_key_env, "")
    if not key:
        raise ReviewerSpawnError(
            f"the API key variable {reviewer.api_key_env} is not set", "reviewer_key_missing"
        )
    url = f"{reviewer.base_url.rstrip('/')}/chat/completions"
    request_body = {
        "model": reviewer.model,
        "messages": [{"role": "user", "content": prompt}],
        "temperature": reviewer.temperature,
    }
    if response_format is not None:
        request_body["response_format"] = response_format
    timed_out = ReviewerTimedOut(
        f"reviewer endpoint {url} passed the {reviewer.timeout_seconds} s timeout",
        "reviewer_timed_out",
    )
    headers = {"Authorization": f"Bearer {key}"}
    policy = HttpRetryPolicy(
        max_attempts=reviewer.max_attempts, initial_wait_seconds=reviewer.retry_wait_seconds
    )
    try:
        with httpx.Client(transport=transport, timeout=reviewer.timeout_seconds) as client:
            status, received = call_with_retries(
                lambda: _post_completion(client, url, request_body, headers, reviewer, timed_out),
                what=f"reviewer request to {httpx.URL(url).host}",
                policy=policy,
            )
    except RetryableStatus as exc:  # the last attempt still answered 429/5xx
        status, received = exc.status, bytearray(exc.body)
    except httpx.TimeoutException:
        raise timed_out from None
    except httpx.HTTPError as exc:
        raise ReviewerSpawnError(
            _scrub(f"reviewer endpoint {url} unreachable: {type(exc).__name__}: {exc}", key),
            "reviewer_http_error",
        ) from None
    if not 200 <= status < 300:
        code = _error_code(bytes(received))
        raise ReviewerSpawnError(
            _scrub(
                f"reviewer endpoint {url} answered HTTP {status}" + (f" ({code})" if code else ""),
                key,
            ),
            "reviewer_http_error",
        )
    try:
        return json.loads(bytes(received))
    except ValueError:
        raise ReviewerFailed(
            "the reviewer endpoint's answer is not JSON", "reviewer_failed"
        ) from None


def _post_completion(
    client: httpx.Client,
    url: str,
    body: dict[str, Any],
    headers: dict[str, str],
    reviewer: OpenAIReviewer,
    timed_out: ReviewerTimedOut,
) -> tuple[int, bytearray]:
    """One attempt: the status and the bounded answer; a 429/5xx raises
    :class:`~wrapper.retrying.RetryableStatus` so that it is tried again."""
    deadline = time.monotonic() + reviewer.timeout_seconds
    with client.stream("POST", url, json=body, headers=headers) as response:
        received = bytearray()
        for chunk in response.iter_bytes():
            received += chunk
            if len(received) > HTTP_RESPONSE_LIMIT_BYTES:
                raise ReviewerFailed(
                    f"the reviewer endpoint's answer passed {HTTP_RESPONSE_LIMIT_BYTES} bytes",
                    "reviewer_failed",
                )
            if time.monotonic() > deadline:
                raise timed_out
        retry = retryable_status(response, bytes(received))
        if retry is not None:
            raise retry
        return response.status_code, received
