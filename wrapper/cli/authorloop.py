"""The author's loop (docs/author-loop.md): ``kdev watch``, ``comments``, ``reply``,
``resolve``, ``hide`` and ``pr-status``. Each imports its workflow only when it runs."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from engine.durations import parse_duration
from engine.errors import LiError
from engine.termsafe import echo
from wrapper.cli.common import guarded, open_github, open_ledger, posting_context, posting_verb
from wrapper.cli.options import Interval, JsonLine, JsonObject, LedgerDir, Pr, Repo, ThreadNode
from wrapper.config import check_repo
from wrapper.errors import ConfigError


def max_duration_of(text: str) -> float:
    """``--max-duration`` in seconds; a bad duration is ConfigError (exit 2)."""
    try:
        return parse_duration(text, what="--max-duration")
    except LiError as exc:
        raise ConfigError(exc.message, exc.reason) from None


def watch_cmd(
    repo: Repo,
    pr: Pr,
    interval: Interval = "auto",
    max_duration: str = typer.Option("2h", "--max-duration", help="e.g. 90m, 2h."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per event."),
) -> None:
    """Print one line per CI result and new comment until the PR closes or time runs out
    (then the unsettled summary and exit 16)."""
    from wrapper.authorloop.watch import PrWatch, WatchEvent

    def emit(event: WatchEvent) -> None:
        if as_json:
            typer.echo(event.to_json())
        else:
            echo(event.line())

    def work() -> int:
        check_repo(repo)
        seconds = max_duration_of(max_duration)
        with open_github() as client:
            watch = PrWatch(client, repo, pr, emit, interval=interval, max_duration=seconds)
            return watch.run().exit_code

    code = guarded(work)
    if code:
        raise typer.Exit(code)


def comments_cmd(
    repo: Repo,
    pr: Pr,
    unresolved: bool = typer.Option(False, "--unresolved", help="Open threads only."),
    agent: str | None = typer.Option(
        None, "--agent", help="Only comments signed by this roster reviewer (kdev-agent)."
    ),
    as_json: JsonObject = False,
) -> None:
    """All feedback on a PR with its source and priority, summarised by priority and file."""
    from wrapper.authorloop.feedback import collect_feedback
    from wrapper.authorloop.watch import one_line

    def work() -> None:
        check_repo(repo)
        with open_github() as client:
            report = collect_feedback(client, repo, pr, unresolved=unresolved, agent=agent)
        if as_json:
            typer.echo(json.dumps(report.to_json()))
            return
        for item in report.items:
            where = (
                f" {item.path}:{item.line if item.line is not None else '?'}" if item.path else ""
            )
            state = f" [{item.state}]" if item.state else ""
            status = "" if item.resolved is None else (" resolved" if item.resolved else " open")
            signed = f" agent={item.agent}" if item.agent else ""
            echo(
                f"{item.priority.value} {item.source.value} {item.kind} node={item.node_id} "
                f"id={item.id} @{item.user}{signed}{where}{state}{status}: "
                f"{one_line(item.body)[:200]}"
            )
        echo("by priority: " + ", ".join(f"{k} {v}" for k, v in report.by_priority.items()))
        for path, counts in sorted(report.by_file.items()):
            echo(f"  {path}: " + ", ".join(f"{k} {v}" for k, v in counts.items() if v))
        echo(f"open threads: {report.open_threads}")

    guarded(work)


def reply_cmd(
    text: Annotated[str, typer.Argument(help="The reply.")],
    repo: Repo,
    pr: Pr,
    comment_id: Annotated[int, typer.Option("--comment-id", help="The comment answered.")],
    reviews_dir: LedgerDir = None,
    as_json: JsonLine = False,
    mention: list[str] = typer.Option(
        [], "--mention", help="A login or org/team the reply may ping (repeatable)."
    ),
) -> None:
    """Reply to an inline comment (threaded) or an issue-level comment (quoting its id)."""
    from wrapper.authorloop.threads import reply

    def work() -> None:
        with posting_context(repo, pr, reviews_dir) as ctx:
            result = reply(ctx, comment_id, text, mention)
        if as_json:
            typer.echo(json.dumps(result.to_json()))
        else:
            echo(f"replied: {result.kind} id={result.id} node={result.node_id}")

    guarded(work)


def _set_thread(repo: str, pr: int, node: str, as_json: bool, *, resolved: bool) -> None:
    """Resolve (or reopen) the review thread that starts with comment ``node``."""
    from wrapper.authorloop.threads import reopen, resolve

    def work() -> None:
        check_repo(repo)
        with open_github() as client:
            thread = (resolve if resolved else reopen)(client, repo, pr, node)
        if as_json:
            shown = {"repo": repo, "pr": pr, "node": node, "thread": thread.id}
            typer.echo(json.dumps({**shown, "resolved": resolved}))
        else:
            echo(f"{'resolved' if resolved else 'reopened'}: thread {thread.id}")

    guarded(work)


def resolve_cmd(repo: Repo, pr: Pr, node: ThreadNode, as_json: JsonObject = False) -> None:
    """Resolve the review thread that starts with comment NODE."""
    _set_thread(repo, pr, node, as_json, resolved=True)


def reopen_cmd(repo: Repo, pr: Pr, node: ThreadNode, as_json: JsonObject = False) -> None:
    """Reopen (unresolve) the review thread that starts with comment NODE."""
    _set_thread(repo, pr, node, as_json, resolved=False)


def hide_cmd(
    node: str = typer.Option(..., "--node", help="Node id of the comment."),
    as_json: JsonObject = False,
) -> None:
    """Minimise a comment as OUTDATED."""
    from wrapper.authorloop.threads import hide

    def work() -> None:
        with open_github() as client:
            reason = hide(client, node)
        if as_json:
            typer.echo(json.dumps({"node": node, "hidden": True, "reason": reason}))
        else:
            echo(f"hidden: {node} ({reason})")

    guarded(work)


def pr_status_cmd(
    repo: Repo, pr: Pr, reviews_dir: LedgerDir = None, as_json: JsonObject = False
) -> None:
    """Merge readiness: review rounds, feedback by priority, open threads, CI at the head."""
    from wrapper.authorloop.pr_status import pr_status
    from wrapper.credentials import kdev_environ
    from wrapper.review.merge_gate import gate_is_check, gate_settings

    def work() -> None:
        config, ledger = open_ledger(reviews_dir)
        check_repo(repo)
        gate = gate_settings(config, repo)
        with open_github() as client:
            context = gate.context if gate.enabled else None
            check = gate_is_check(kdev_environ())
            status = pr_status(client, ledger, repo, pr, context, check)
        if as_json:
            typer.echo(json.dumps(status.to_json()))
        else:
            for line in status.lines():
                echo(line)

    guarded(work)


def check_ci_cmd(
    repo: Repo,
    pr: Pr,
    wait: bool = typer.Option(False, "--wait", help="Wait until the checks settle."),
    interval: Interval = "auto",
    max_duration: str = typer.Option("30m", "--max-duration", help="e.g. 30m, 2h."),
    as_json: JsonObject = False,
) -> None:
    """Have the PR's checks settled? Failing checks with their log URLs (exit 18 when one
    failed, 16 when --wait ran out of time)."""
    from engine.github import GitHubError
    from wrapper.authorloop.checkci import CiCheck
    from wrapper.errors import GitHubFailed
    from wrapper.review.github_gate import github_failure_reason

    def work() -> int:
        check_repo(repo)
        seconds = max_duration_of(max_duration)
        with open_github() as client:
            check = CiCheck(client, repo, pr, interval=interval, max_duration=seconds)
            try:
                report = check.run(wait=wait)
            except GitHubError as exc:
                raise GitHubFailed(
                    f"cannot read the checks of {repo} #{pr}: {exc.message} [{exc.reason}]",
                    github_failure_reason(exc),
                ) from None
        if as_json:
            typer.echo(json.dumps(report.to_json()))
        else:
            for line in report.lines():
                echo(line)
        return report.exit_code

    code = guarded(work)
    if code:
        raise typer.Exit(code)


def request_reviews_cmd(
    repo: Repo, pr: Pr, reviews_dir: LedgerDir = None, as_json: JsonObject = False
) -> None:
    """Ask the configured review bots for a round; a bot out of quota today is skipped
    and its turn falls to the next bot."""
    from wrapper.authorloop.requests import BotRequest, request_reviews

    def line(item: BotRequest) -> str:
        detail = f" (comment {item.comment_id})" if item.comment_id else ""
        reason = f": {item.reason}" if item.reason else ""
        return f"{item.bot}  {item.state}{detail}{reason}"

    posting_verb(repo, pr, reviews_dir, as_json, "bots", request_reviews, line)
