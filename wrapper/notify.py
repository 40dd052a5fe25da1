"""Notifications (docs/decisions.md D5): sent by the wrapper when a leg ends, never from the prompt.

A :class:`Notification` goes to every configured target; :func:`send` never raises and
returns one error string per target that failed, so one broken target never hides the
others (each failure is also logged at WARNING on ``kdev.notify``). Targets:

- ``log``: one INFO record on the ``kdev.notify`` logger
- ``file``: one JSON line ``{subject, body, fields, sent_at}`` appended and fsync'd
  (the parent directory is created, mode 0700; the file, mode 0600)
- ``command``: argv (no shell) with the notification JSON on stdin, environment PATH,
  HOME and LANG only, own process group, killed after 30 s; non-zero exit is a failure
- ``webhook``: a JSON POST of the same object plus ``text`` (subject and body, for chat
  incoming webhooks); any answer other than 2xx is a failure. HTTP 408/425/429/5xx,
  timeouts and refused connections are tried again (:data:`WEBHOOK_RETRY_POLICY`,
  :mod:`wrapper.retrying`, honouring ``Retry-After``). Error strings name the host
  only, since webhook URLs often carry a secret.
- ``github-comment``: nothing here; ``kdev review-pr`` posts each review round as one PR
  comment itself, after the verdict is written (:mod:`wrapper.post`).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from wrapper.config import (
    CommandTarget,
    FileTarget,
    GithubCommentTarget,
    KdevConfig,
    LogTarget,
    NotifyTarget,
    WebhookTarget,
)
from wrapper.leakscan import SECRET_LEAK, find_leak
from wrapper.retrying import HttpRetryPolicy, RetryableStatus, call_with_retries, retryable_status

log = logging.getLogger("kdev.notify")

COMMAND_TIMEOUT_SECONDS = 30.0
# Three tries, waiting about 1 s then 2 s (or what Retry-After asks, up to 10 s).
WEBHOOK_RETRY_POLICY = HttpRetryPolicy(
    max_attempts=3, initial_wait_seconds=1.0, max_wait_seconds=10.0
)
COMMAND_ENV_NAMES = ("PATH", "HOME", "LANG")
_STDERR_TAIL_BYTES = 2048
_REAP_SECONDS = 10.0

FieldValue = str | int | None


@dataclass(frozen=True)
class Notification:
    """One notice: a subject line, a plain-text body, and machine-readable fields
    (repo, pr, head_sha, verdict or outcome, pr_url, artifact, and what else applies)."""

    subject: str
    body: str
    fields: dict[str, FieldValue] = field(default_factory=dict)

    def as_json(self, sent_at: datetime) -> dict[str, Any]:
        """The object the file, command and webhook targets receive."""
        return {
            "subject": self.subject,
            "body": self.body,
            "fields": dict(self.fields),
            "sent_at": sent_at.isoformat(),
        }


def route(
    config: KdevConfig,
    repo: str,
    author: str | None,
    *,
    notify_to: str | None = None,
    schedule_targets: Sequence[NotifyTarget] | None = None,
) -> list[NotifyTarget]:
    """Where a notice about a PR of ``repo`` by ``author`` goes, the first that applies:

    1. the schedule's own recipient: ``schedule_targets`` (a repos.yaml entry's
       ``notify`` in ``kdev pr-sweep``), else ``notify_to`` (``review-pr --notify-to``),
       else ``repositories.<repo>.notify_to`` of kdev.yaml;
    2. the recipient ``notify_authors`` maps the PR author's login to;
    3. ``notify``, the global targets.

    Repository names and logins match case-insensitively. An unknown ``notify_to`` is
    ``ConfigError unknown_recipient`` (the config validator refuses the others)."""
    if schedule_targets is not None:
        return list(schedule_targets)
    if notify_to is not None:
        return config.recipient(notify_to)
    settings = config.repositories.get(repo.lower())
    if settings is not None and settings.notify_to is not None:
        return config.recipient(settings.notify_to)
    name = config.notify_authors.get(author.lower()) if author else None
    if name is not None:
        return config.recipient(name)
    return list(config.notify)


def _pr_notice(
    repo: str, pr: int, head_sha: str, word: str, body: str, **fields: Any
) -> Notification:
    """``PR review: {repo} #{pr} {word}`` with ``body``; its fields are the PR's (repo, pr,
    head) and then ``fields``, in that order."""
    return Notification(
        subject=f"PR review: {repo} #{pr} {word}",
        body=body,
        fields={"repo": repo, "pr": pr, "head_sha": head_sha, **fields},
    )


def verdict_notification(
    repo: str,
    pr: int,
    verdict: str,
    pr_url: str,
    head_sha: str,
    artifact: str | Path,
    excluded: Sequence[str] = (),
) -> Notification:
    """``PR review: {repo} #{pr} {VERDICT}``; body: the verdict file's header lines
    (verdict, PR number, PR URL, head), the artifact, and one ``EXCLUDED: path (rule:
    detail)`` line per path the reviewer did not read (D87; also the ``excluded`` field)."""
    body = "\n".join(
        (
            f"VERDICT: {verdict}",
            f"PR: {pr}",
            f"PR_URL: {pr_url}",
            f"HEAD_SHA: {head_sha}",
            f"ARTIFACT: {artifact}",
            *(f"EXCLUDED: {line}" for line in excluded),
        )
    )
    fields: dict[str, Any] = {"verdict": verdict, "pr_url": pr_url, "artifact": str(artifact)}
    if excluded:
        fields["excluded"] = list(excluded)
    return _pr_notice(repo, pr, head_sha, verdict, body, **fields)


def failure_notification(
    repo: str, pr: int, reason: str, message: str, pr_url: str, head_sha: str
) -> Notification:
    """``PR review: {repo} #{pr} FAILURE``: a failed or timed-out leg is never silent."""
    body = "\n".join(
        (f"FAILURE: {reason}", message, f"PR: {pr}", f"PR_URL: {pr_url}", f"HEAD_SHA: {head_sha}")
    )
    fields = {"outcome": "failure", "reason": reason, "message": message, "pr_url": pr_url}
    return _pr_notice(repo, pr, head_sha, "FAILURE", body, **fields, artifact=None)


def deferred_notification(
    repo: str,
    pr: int,
    budget: str,
    count: int,
    limit: int,
    reopens_at: datetime | None,
    pr_url: str,
    head_sha: str,
    why: str | None = None,
    shown: str | None = None,
) -> Notification:
    """``PR review: {repo} #{pr} DEFERRED``: over ``budget`` (``count`` of ``limit``);
    ``reopens_at`` None means the budget reopens when a running leg ends; ``why``, a
    line saying more (``diff_too_large``: the estimate, the limit and the setting);
    ``shown``, the figures in place of ``count/limit`` (a money budget's, D106)."""
    reopens = reopens_at.isoformat() if reopens_at is not None else None
    lines = [
        f"DEFERRED: budget {budget} ({shown or f'{count}/{limit}'})",
        f"REOPENS_AT: {reopens or 'when a running leg ends'}",
        f"PR: {pr}",
        f"PR_URL: {pr_url}",
        f"HEAD_SHA: {head_sha}",
    ]
    if why:
        lines.insert(1, f"WHY: {why}")
    body = "\n".join(lines)
    fields = {
        "outcome": "deferred_budget",
        "budget": budget,
        "count": count,
        "limit": limit,
        "reopens_at": reopens,
        "pr_url": pr_url,
    }
    return _pr_notice(repo, pr, head_sha, "DEFERRED", body, **fields, artifact=None)


def withhold_leaking_note(note: Notification, secrets: Sequence[str]) -> Notification:
    """``note``, or a ``secret_leak`` FAILURE notice in its place when it holds a secret."""
    form = find_leak(json.dumps(note.as_json(datetime.now(UTC)), ensure_ascii=False), secrets)
    if form is None:
        return note
    log.warning("a notification held a known secret (%s form); sent a FAILURE notice instead", form)
    keep = {k: note.fields.get(k) for k in ("repo", "pr", "head_sha", "pr_url")}
    if find_leak(json.dumps(keep), secrets) is not None:
        keep = {}
    where = f"{keep.get('repo') or '?'} #{keep.get('pr') or '?'}"
    message = f"a notification was withheld: it contained a known secret ({form} form)"
    return Notification(
        subject=f"PR review: {where} FAILURE",
        body=f"FAILURE: {SECRET_LEAK}\n{message}",
        fields={**keep, "outcome": "failure", "reason": SECRET_LEAK, "message": message},
    )


def send(
    targets: Sequence[NotifyTarget],
    note: Notification,
    *,
    environ: Mapping[str, str],
    transport: httpx.BaseTransport | None = None,
    command_timeout_seconds: float = COMMAND_TIMEOUT_SECONDS,
    now: datetime | None = None,
    secrets: Sequence[str] = (),
) -> list[str]:
    """Deliver ``note`` to every target in order; one error string per failed target.

    Never raises for a target's failure. ``environ`` supplies PATH, HOME and LANG of
    command targets; ``transport`` replaces httpx's network transport for webhooks;
    ``now`` is the ``sent_at`` stamp (default: the current UTC time). A note holding
    one of ``secrets`` in any form :func:`wrapper.leakscan.find_leak` knows is never
    sent: a ``secret_leak`` FAILURE notice without its text goes in its place.
    """
    note = withhold_leaking_note(note, secrets)
    payload = note.as_json(now or datetime.now(UTC))
    errors: list[str] = []
    for index, target in enumerate(targets):
        try:
            problem = _deliver(target, note, payload, environ, transport, command_timeout_seconds)
        except Exception as exc:  # a bug in one target must not silence the others
            problem = f"{type(exc).__name__}: {exc}"
        if problem is not None:
            error = f"notify target {index} ({target.type}): {problem}"
            log.warning("%s", error)
            errors.append(error)
    return errors


def _deliver(
    target: NotifyTarget,
    note: Notification,
    payload: dict[str, Any],
    environ: Mapping[str, str],
    transport: httpx.BaseTransport | None,
    command_timeout_seconds: float,
) -> str | None:
    if isinstance(target, LogTarget):
        log.info("%s | %s", note.subject, note.body.replace("\n", " | "))
        return None
    if isinstance(target, FileTarget):
        return _append_line(Path(target.path).expanduser(), payload)
    if isinstance(target, CommandTarget):
        return _run_command(target.argv, payload, environ, command_timeout_seconds)
    if isinstance(target, WebhookTarget):
        return _post(target, payload, transport)
    if isinstance(target, GithubCommentTarget):
        return None  # review-pr posts the review itself (wrapper.post); nothing to send
    return f"unknown target {target!r}"  # pragma: no cover - the config union is closed


def _append_line(path: Path, payload: dict[str, Any]) -> str | None:
    line = (json.dumps(payload, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            # One write of the whole line, so concurrent writers never interleave lines.
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        return f"cannot append to {path}: {exc.strerror or exc}"
    return None


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _run_command(
    argv: list[str], payload: dict[str, Any], environ: Mapping[str, str], timeout: float
) -> str | None:
    env = {name: environ[name] for name in COMMAND_ENV_NAMES if name in environ}
    search_path = os.pathsep.join(
        entry for entry in env.get("PATH", os.defpath).split(os.pathsep) if os.path.isabs(entry)
    )
    env["PATH"] = search_path
    executable = argv[0] if "/" in argv[0] else shutil.which(argv[0], path=search_path)
    if executable is None:
        return f"{argv[0]!r} is not on PATH {search_path!r}"
    # stdin and stderr are regular files, not pipes: nothing can block on them, and a
    # background child that keeps them open cannot make us wait.
    with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as stderr:
        stdin.write(json.dumps(payload, ensure_ascii=False).encode("utf-8"))
        stdin.seek(0)
        try:
            process = subprocess.Popen(
                argv,
                executable=executable,
                env=env,
                stdin=stdin,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                start_new_session=True,
            )
        except (OSError, ValueError) as exc:
            detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            return f"cannot start {argv[0]}: {detail}"
        try:
            code = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(process.pid)
            try:
                process.wait(timeout=_REAP_SECONDS)
            except subprocess.TimeoutExpired:
                pass
            return f"{argv[0]} passed its {timeout:g} s timeout and was killed"
        except BaseException:
            _kill_group(process.pid)
            raise
        if code == 0:
            return None
        size = stderr.seek(0, os.SEEK_END)
        stderr.seek(max(size - _STDERR_TAIL_BYTES, 0))
        lines = stderr.read().decode("utf-8", errors="replace").strip().splitlines()
        last = lines[-1].strip()[:300] if lines else "(no stderr)"
        return f"{argv[0]} exited with code {code}: {last}"


def _post(
    target: WebhookTarget, payload: dict[str, Any], transport: httpx.BaseTransport | None
) -> str | None:
    body = {**payload, "text": f"{payload['subject']}\n{payload['body']}"}
    try:
        url = httpx.URL(target.url)
    except httpx.InvalidURL:
        return "the webhook url is invalid"
    where = (url.host or "(no host)") + (f":{url.port}" if url.port else "")
    try:
        with httpx.Client(transport=transport, timeout=target.timeout_seconds) as client:
            response = call_with_retries(
                lambda: _post_once(client, target.url, body),
                what=f"webhook POST to {where}",
                policy=WEBHOOK_RETRY_POLICY,
            )
    except RetryableStatus as exc:
        return f"POST to {where} answered HTTP {exc.status}"
    except httpx.HTTPError as exc:
        detail = str(exc)
        secret_parts = [target.url, url.path if len(url.path) > 1 else "", url.query.decode()]
        if not detail or any(part and part in detail for part in secret_parts):
            detail = "(detail withheld)"
        return f"POST to {where} failed: {type(exc).__name__}: {detail}"
    if not response.is_success:
        return f"POST to {where} answered HTTP {response.status_code}"
    return None


def _post_once(client: httpx.Client, url: str, body: dict[str, Any]) -> httpx.Response:
    response = client.post(url, json=body)
    retry = retryable_status(response, response.content)
    if retry is not None:
        raise retry
    return response
