"""The kdev command line: parse, call the workflow, map errors to exit codes.

Every error prints one line ``error: <message> [<reason_code>]`` and exits with the code
of its class (docs/wrapper.md). Every decision of ``review-pr`` exits 0.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer
import yaml

from engine.clikit import LogFormat, LogLevel, OneLineErrorsTyper, configure_logging
from engine.clikit import guarded as clikit_guarded
from engine.config import Settings
from engine.errors import LiError
from engine.github import github_client
from engine.tables import print_table
from wrapper import __version__
from wrapper.config import check_repo, load_config, resolve_reviews_dir
from wrapper.credentials import harden_process, kdev_environ
from wrapper.errors import ConfigError, KdevError
from wrapper.git import Git
from wrapper.leakscan import known_secrets
from wrapper.ledger.ledger import Ledger, check_sha
from wrapper.ledger.outcomes import OutcomeLog, keep_from_env, recorded, secret_values
from wrapper.logredact import REDACTOR
from wrapper.logredact import install as install_log_redaction
from wrapper.metrics import count_outcome
from wrapper.review.patch_id import fetch_pr_refs
from wrapper.review.review import ReviewContext, ReviewReport, ReviewRequest, review_pr
from wrapper.review.roster import build_roster, read_roster_files
from wrapper.sweep.config import load_sweep_config

if TYPE_CHECKING:
    from wrapper.sweep.sweep import SweepReport

T = TypeVar("T")

app = OneLineErrorsTyper(
    name="kdev",
    help="Review wrapper for the li engine: decides whether a PR review runs, and runs it.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
verdict_app = typer.Typer(help="Read verdict files.", no_args_is_help=True)
app.add_typer(verdict_app, name="verdict")


def guarded(work: Callable[[], T]) -> T:
    """One line per error, a distinct exit code per class, never a traceback. An engine
    error (settings read through the engine) is a configuration error here."""
    return clikit_guarded(
        work, exit_code=lambda exc: exc.exit_code if isinstance(exc, KdevError) else 2
    )


def _version(value: bool) -> None:
    if value:
        typer.echo(f"kdev {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
    config: Path | None = typer.Option(
        None, "--config", help="The kdev.yaml to use (default: $KDEV_CONFIG)."
    ),
    log_format: LogFormat = typer.Option(
        LogFormat.TEXT, "--log-format", help="text, or json: one object a line on stderr."
    ),
    log_level: LogLevel = typer.Option(
        LogLevel.INFO, "--log-level", help="debug also logs each HTTP request."
    ),
) -> None:
    """kdev: the review wrapper."""
    harden_process()
    global _config_path
    _config_path = str(config) if config is not None else None
    configure_logging(log_level.value, log_format.value)
    install_log_redaction()
    REDACTOR.add([kdev_environ().get("GITHUB_TOKEN", "")])


# ``kdev --config PATH``; None: the KDEV_CONFIG variable (load_config's default).
_config_path: str | None = None


def config_path() -> str | None:
    """The kdev.yaml path: ``--config`` first, then ``KDEV_CONFIG``."""
    return _config_path if _config_path is not None else os.environ.get("KDEV_CONFIG")


def open_ledger(reviews_dir: str | None) -> tuple[Any, Ledger]:
    config = load_config(config_path())
    REDACTOR.add(known_secrets(config, kdev_environ()))
    directory = resolve_reviews_dir(config, reviews_dir)
    return config, Ledger(directory)


@app.command("review-pr")
def review_pr_cmd(
    repo: str = typer.Option(..., "--repo", help="OWNER/NAME."),
    pr: int = typer.Option(..., "--pr", help="Pull request number."),
    head_sha: str | None = typer.Option(
        None, "--head-sha", help="The head the event saw (default: the PR's current head)."
    ),
    pr_url: str | None = typer.Option(None, "--pr-url"),
    author: str | None = typer.Option(None, "--author"),
    force: bool = typer.Option(False, "--force", help="Forget this diff's verdict; review."),
    checkout: Path | None = typer.Option(None, "--checkout", help="Repository checkout."),
    reviews_dir: str | None = typer.Option(None, "--reviews-dir", help="Ledger directory."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON line."),
    comment_id: str | None = typer.Option(
        None, "--comment-id", help="The comment that asked for this run (empty: none)."
    ),
) -> None:
    """Review one pull request head, once per distinct diff."""

    def work() -> None:
        config, ledger = open_ledger(reviews_dir)
        check_repo(repo)
        settings = Settings.from_env(kdev_environ())
        with github_client(settings) as client:
            ctx = ReviewContext(config=config, ledger=ledger, github=client, environ=kdev_environ())
            req = ReviewRequest(
                repo=repo,
                pr=pr,
                head_sha=head_sha or "",
                checkout=(checkout or Path.cwd()).resolve(),
                pr_url=pr_url,
                author=author,
                force=force,
                comment_id=parse_comment_id(comment_id),
            )
            report = run_recorded("review-pr", req, ledger, ctx, lambda: review_pr(req, ctx))
        print_report(report, as_json)

    guarded(work)


def run_recorded(
    command: str,
    req: ReviewRequest,
    ledger: Ledger,
    ctx: ReviewContext,
    run: Callable[[], ReviewReport],
) -> ReviewReport:
    """One review-pr / describe-pr invocation, its outcome appended to the PR's outcome
    log and counted in the metrics textfile (``KDEV_METRICS_FILE``), a failure included."""
    try:
        report = recorded(
            command,
            req,
            OutcomeLog(ledger, keep_from_env()),
            run,
            ctx.clock,
            secret_values(ctx.config.secret_env, ctx.environ),
        )
    except Exception:
        count_outcome("failed", ctx.environ)
        raise
    count_outcome(report.outcome.value, ctx.environ)
    return report


def parse_comment_id(value: str | None) -> int | None:
    """``--comment-id``: absent or empty (a template with no comment) is None; else a
    positive integer in decimal, or ConfigError ``invalid_comment_id``."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    if not text.isascii() or not text.isdigit() or text.startswith("0"):
        raise ConfigError(
            f"--comment-id must be a positive integer, got {value!r}", "invalid_comment_id"
        )
    return int(text)


def print_report(report: ReviewReport, as_json: bool) -> None:
    """One JSON line, or ``outcome: repo #pr head [verdict] [-> artifact] [(detail)]``."""
    if as_json:
        typer.echo(json.dumps(report.to_json()))
        return
    verdict = f" {report.verdict}" if report.verdict else ""
    where = f" -> {report.artifact}" if report.artifact else ""
    detail = f" ({report.detail})" if report.detail else ""
    typer.echo(
        f"{report.outcome.value}: {report.repo} #{report.pr} {report.head_sha[:12]}"
        f"{verdict}{where}{detail}"
    )


def _describe(req: Any, ctx: Any) -> Any:
    """``wrapper.review.describe.describe_pr``, imported only by describe-pr (issue 19)."""
    from wrapper.review.describe import describe_pr

    return describe_pr(req, ctx)


@app.command("describe-pr")
def describe_pr_cmd(
    repo: str = typer.Option(..., "--repo", help="OWNER/NAME."),
    pr: int = typer.Option(..., "--pr", help="Pull request number."),
    head_sha: str | None = typer.Option(None, "--head-sha", help="Default: the current head."),
    checkout: Path | None = typer.Option(None, "--checkout", help="Repository checkout."),
    reviews_dir: str | None = typer.Option(None, "--reviews-dir", help="Ledger directory."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON line."),
    comment_id: str | None = typer.Option(
        None, "--comment-id", help="The comment that asked for this run (empty: none)."
    ),
) -> None:
    """Describe a pull request with the reviewer backend; post it as a PR comment."""

    def work() -> None:
        config, ledger = open_ledger(reviews_dir)
        check_repo(repo)
        if head_sha:
            check_sha(head_sha, "--head-sha")
        settings = Settings.from_env(kdev_environ())
        with github_client(settings) as client:
            ctx = ReviewContext(config=config, ledger=ledger, github=client, environ=kdev_environ())
            req = ReviewRequest(
                repo=repo,
                pr=pr,
                head_sha=head_sha or "",
                checkout=(checkout or Path.cwd()).resolve(),
                comment_id=parse_comment_id(comment_id),
            )
            report = run_recorded("describe-pr", req, ledger, ctx, lambda: _describe(req, ctx))
        print_report(report, as_json)

    guarded(work)


@app.command("verdicts")
def verdicts_cmd(
    repo: str | None = typer.Option(None, "--repo"),
    pr: int | None = typer.Option(None, "--pr"),
    reviews_dir: str | None = typer.Option(None, "--reviews-dir"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """The ledger: reviewed and carried heads, and pending deferrals."""

    def work() -> None:
        _, ledger = open_ledger(reviews_dir)
        if repo is not None:
            check_repo(repo)
        rows = ledger.list_ledger(repo, pr)
        data = [row.to_json() for row in rows]
        if as_json:
            typer.echo(json.dumps(data, indent=2))
            return
        if not data:
            typer.echo("no verdicts")
            return
        headers = ["repo", "pr", "head_sha", "patch_id", "verdict", "reviewed_at", "kind"]
        cells = [[str(d.get(h) if d.get(h) is not None else "-") for h in headers] for d in data]
        for row in cells:
            row[2] = row[2][:12]
            row[3] = row[3][:12]
        print_table(headers, cells, typer.get_text_stream("stdout"))

    guarded(work)


@app.command("reviewers")
def reviewers_cmd(
    repo_root: Path = typer.Option(
        Path("."), "--checkout", "--repo-root", help="Checkout or worktree root."
    ),
    pr: int | None = typer.Option(None, "--pr", help="Changed files of this PR (fetched)."),
    base: str | None = typer.Option(
        None, "--base", help="Base branch for --pr (default main), or a base ref for --head."
    ),
    head: str | None = typer.Option(None, "--head", help="Head ref (with --base)."),
    changed: list[str] = typer.Option([], "--changed-file", help="A changed file (repeatable)."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Which focused reviewers (defaults + AGENT-REVIEWERS.md) apply to a change."""

    def work() -> None:
        if head is not None and (base is None or pr is not None):
            raise ConfigError("--head goes with --base and without --pr", "usage_error")
        if pr is None and head is None and not changed:
            raise ConfigError(
                "give --pr N, --changed-file PATH or --base REF --head REF", "usage_error"
            )
        git = Git(repo_root)
        files = list(changed)
        if pr is not None:
            base_ref, head_ref = fetch_pr_refs(git, base or "main", pr)
            files += git.changed_files(base_ref, head_ref)
        elif base is not None and head is not None:
            files += git.changed_files(base, head)
        roster = build_roster(read_roster_files(repo_root), files)
        for warning in roster.warnings:
            typer.echo(f"warning: {warning}", err=True)
        if as_json:
            typer.echo(json.dumps(roster.to_json(), indent=2))
            return
        typer.echo(roster.summary)
        for reviewer in roster.reviewers:
            typer.echo(
                f"{reviewer.name}  {reviewer.kind}  scope {reviewer.scope or '.'}  "
                f"files: {', '.join(reviewer.changed_files)}"
            )

    guarded(work)


@verdict_app.command("show")
def verdict_show(
    repo_arg: str | None = typer.Argument(None, metavar="[REPO]", help="Same as --repo."),
    pr_arg: int | None = typer.Argument(None, metavar="[PR]", help="Same as --pr."),
    repo_opt: str | None = typer.Option(None, "--repo", help="OWNER/NAME."),
    pr_opt: int | None = typer.Option(None, "--pr", help="Pull request number."),
    head: str | None = typer.Option(None, "--head", help="The verdict of this head."),
    reviews_dir: str | None = typer.Option(None, "--reviews-dir", help="Ledger directory."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Print one verdict file (of --head, else of the newest reviewed head)."""

    def work() -> None:
        repo = _one_of(repo_opt, repo_arg, "--repo")
        pr = _one_of(pr_opt, pr_arg, "--pr")
        _, ledger = open_ledger(reviews_dir)
        check_repo(repo)
        index = ledger.read_index(repo, pr)
        if head is not None:
            entry = index.get(head)
            if entry is None:
                raise KdevError(f"no verdict for head {head} of {repo} #{pr}", "verdict_not_found")
        elif index:
            entry = max(index.values(), key=lambda e: e.reviewed_at)
        else:
            raise KdevError(f"no verdict for {repo} #{pr}", "verdict_not_found")
        path = ledger.verdict_path(repo, pr, entry.patch_id)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            raise KdevError(f"verdict file {path} is missing", "verdict_not_found") from None
        if not as_json:
            typer.echo(text, nl=False)
            return
        heads = sorted(sha for sha, e in index.items() if e is entry)
        shown = {
            "repo": repo,
            "pr": pr,
            "head_sha": head if head is not None else (heads[0] if heads else None),
            "patch_id": entry.patch_id,
            "verdict": entry.verdict,
            "reviewed_at": entry.reviewed_at.isoformat(),
            "carried_from": entry.carried_from,
            "path": str(path),
            "text": text,
        }
        typer.echo(json.dumps(shown))

    guarded(work)


def _one_of(option: T | None, argument: T | None, flag: str) -> T:
    """A value given as ``flag`` or positionally (not both, not neither)."""
    if option is not None and argument is not None and option != argument:
        raise ConfigError(f"{flag} and the positional value differ", "usage_error")
    value = option if option is not None else argument
    if value is None:
        raise ConfigError(f"{flag} is required", "usage_error")
    return value


@app.command("pr-sweep")
def pr_sweep_cmd(
    repos_config: Path = typer.Option(..., "--repos-config", help="The repos config (YAML)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Decide and report; change nothing."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    retry_deferred: bool = typer.Option(
        True, "--retry-deferred/--no-retry-deferred", help="Review reopened deferrals."
    ),
    reviews_dir: str | None = typer.Option(None, "--reviews-dir", help="Ledger directory."),
) -> None:
    """Update clean branches, send the approval digest, report the poller's health."""

    def work() -> None:
        # Imported here: the sweep reads health from the engine's database, and the
        # other commands (review-pr's carry-forward above all) must not pay for importing
        # SQLAlchemy (issue 19, docs/decisions.md).
        from wrapper.sweep.sweep import SweepContext, run_sweep

        config, ledger = open_ledger(reviews_dir)
        sweep_config = load_sweep_config(repos_config)
        settings = Settings.from_env(kdev_environ())
        with github_client(settings) as client:
            ctx = SweepContext(
                config=sweep_config,
                kdev=config,
                ledger=ledger,
                github=client,
                environ=kdev_environ(),
                dry_run=dry_run,
                retry_deferred=retry_deferred,
            )
            report = run_sweep(ctx)
        if as_json:
            typer.echo(json.dumps(report.to_json()))
        else:
            for line in sweep_summary(report):
                typer.echo(line)

    guarded(work)


def sweep_summary(report: SweepReport) -> list[str]:
    """The human summary of a sweep, one line per fact."""
    lines = ["pr-sweep (dry run)" if report.dry_run else "pr-sweep"]
    for repo in report.repos:
        if repo.error is not None:
            lines.append(f"{repo.repo}: error: {repo.error} [{repo.reason}]")
            continue
        lines.append(f"{repo.repo}: {len(repo.updates)} update(s), {len(repo.digest)} waiting")
        for update in repo.updates:
            new = f" -> {update.new_head[:12]}" if update.new_head else ""
            detail = f" ({update.detail})" if update.detail else ""
            lines.append(f"  #{update.pr} {update.outcome.value}{new}{detail}")
        for deferred in repo.deferred:
            retried = f", retried: {deferred.retried}" if deferred.retried else ""
            lines.append(
                f"  #{deferred.pr} deferred:{deferred.budget} {deferred.head_sha[:12]}{retried}"
            )
    sent = "sent" if report.digest_sent else "not sent"
    lines.append(f"approval digest: {len(report.digest)} PR(s), {sent}")
    for row in report.digest:
        lines.append(f"  {row.repo} #{row.pr} {row.head_sha[:12]} {row.verdict_line}")
    if report.health:
        lines.append("health:")
        lines.extend(f"  {p.code}: {p.subject}: {p.message}" for p in report.health)
    return lines


# == the author's loop (docs/author-loop.md) ==============================================


@app.command("watch")
def watch_cmd(
    repo: str = typer.Option(..., "--repo", help="OWNER/NAME."),
    pr: int = typer.Option(..., "--pr", help="Pull request number."),
    interval: str = typer.Option(
        "auto", "--interval", help="auto (by PR size) or a duration, e.g. 90s or 5m."
    ),
    max_duration: str = typer.Option("2h", "--max-duration", help="e.g. 90m, 2h."),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per event."),
) -> None:
    """Print one line per CI result and new comment until the PR closes or time runs out
    (then the unsettled summary and exit 9)."""
    from engine.durations import parse_duration
    from wrapper.authorloop.watch import PrWatch, WatchEvent

    def emit(event: WatchEvent) -> None:
        typer.echo(event.to_json() if as_json else event.line())

    def work() -> int:
        check_repo(repo)
        try:
            seconds = parse_duration(max_duration, what="--max-duration")
        except LiError as exc:
            raise ConfigError(exc.message, exc.reason) from None
        with github_client(Settings.from_env(kdev_environ())) as client:
            watch = PrWatch(client, repo, pr, emit, interval=interval, max_duration=seconds)
            return watch.run().exit_code

    code = guarded(work)
    if code:
        raise typer.Exit(code)


@app.command("comments")
def comments_cmd(
    repo: str = typer.Option(..., "--repo", help="OWNER/NAME."),
    pr: int = typer.Option(..., "--pr", help="Pull request number."),
    unresolved: bool = typer.Option(False, "--unresolved", help="Open threads only."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """All feedback on a PR with its source and priority, summarised by priority and file."""
    from wrapper.authorloop.feedback import collect_feedback
    from wrapper.authorloop.watch import one_line

    def work() -> None:
        check_repo(repo)
        with github_client(Settings.from_env(kdev_environ())) as client:
            report = collect_feedback(client, repo, pr, unresolved=unresolved)
        if as_json:
            typer.echo(json.dumps(report.to_json()))
            return
        for item in report.items:
            where = (
                f" {item.path}:{item.line if item.line is not None else '?'}" if item.path else ""
            )
            state = f" [{item.state}]" if item.state else ""
            status = "" if item.resolved is None else (" resolved" if item.resolved else " open")
            typer.echo(
                f"{item.priority.value} {item.source.value} {item.kind} node={item.node_id} "
                f"id={item.id} @{item.user}{where}{state}{status}: {one_line(item.body)[:200]}"
            )
        typer.echo("by priority: " + ", ".join(f"{k} {v}" for k, v in report.by_priority.items()))
        for path, counts in sorted(report.by_file.items()):
            typer.echo(f"  {path}: " + ", ".join(f"{k} {v}" for k, v in counts.items() if v))
        typer.echo(f"open threads: {report.open_threads}")

    guarded(work)


@app.command("reply")
def reply_cmd(
    text: str = typer.Argument(..., help="The reply."),
    repo: str = typer.Option(..., "--repo", help="OWNER/NAME."),
    pr: int = typer.Option(..., "--pr", help="Pull request number."),
    comment_id: int = typer.Option(..., "--comment-id", help="The comment answered."),
    reviews_dir: str | None = typer.Option(None, "--reviews-dir", help="Ledger directory."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON line."),
) -> None:
    """Reply to an inline comment (threaded) or an issue-level comment (quoting its id)."""
    from wrapper.authorloop.threads import reply

    def work() -> None:
        config, ledger = open_ledger(reviews_dir)
        check_repo(repo)
        with github_client(Settings.from_env(kdev_environ())) as client:
            result = reply(client, config, kdev_environ(), repo, pr, comment_id, text, ledger)
        if as_json:
            typer.echo(json.dumps(result.to_json()))
        else:
            typer.echo(f"replied: {result.kind} id={result.id} node={result.node_id}")

    guarded(work)


@app.command("resolve")
def resolve_cmd(
    repo: str = typer.Option(..., "--repo", help="OWNER/NAME."),
    pr: int = typer.Option(..., "--pr", help="Pull request number."),
    node: str = typer.Option(..., "--node", help="Node id of the thread's first comment."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Resolve the review thread that starts with comment NODE."""
    from wrapper.authorloop.threads import resolve

    def work() -> None:
        check_repo(repo)
        with github_client(Settings.from_env(kdev_environ())) as client:
            thread = resolve(client, repo, pr, node)
        if as_json:
            shown = {"repo": repo, "pr": pr, "node": node, "thread": thread.id, "resolved": True}
            typer.echo(json.dumps(shown))
        else:
            typer.echo(f"resolved: thread {thread.id}")

    guarded(work)


@app.command("hide")
def hide_cmd(
    node: str = typer.Option(..., "--node", help="Node id of the comment."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Minimise a comment as OUTDATED."""
    from wrapper.authorloop.threads import hide

    def work() -> None:
        with github_client(Settings.from_env(kdev_environ())) as client:
            reason = hide(client, node)
        if as_json:
            typer.echo(json.dumps({"node": node, "hidden": True, "reason": reason}))
        else:
            typer.echo(f"hidden: {node} ({reason})")

    guarded(work)


@app.command("pr-status")
def pr_status_cmd(
    repo: str = typer.Option(..., "--repo", help="OWNER/NAME."),
    pr: int = typer.Option(..., "--pr", help="Pull request number."),
    reviews_dir: str | None = typer.Option(None, "--reviews-dir", help="Ledger directory."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Merge readiness: review rounds, feedback by priority, open threads, CI at the head."""
    from wrapper.authorloop.pr_status import pr_status

    def work() -> None:
        _, ledger = open_ledger(reviews_dir)
        check_repo(repo)
        with github_client(Settings.from_env(kdev_environ())) as client:
            status = pr_status(client, ledger, repo, pr)
        if as_json:
            typer.echo(json.dumps(status.to_json()))
        else:
            for line in status.lines():
                typer.echo(line)

    guarded(work)


config_app = typer.Typer(help="Check and print the configuration.", no_args_is_help=True)
app.add_typer(config_app, name="config")


@config_app.command("validate")
def config_validate(
    repos_config: Path | None = typer.Option(
        None, "--repos-config", help="Also check this repos config (YAML)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Check kdev.yaml (--config / KDEV_CONFIG) and a repos config: every problem at once,
    each as FILE:LINE: problem; exit 2 when there is any."""
    from wrapper.configcheck import check_configs

    def work() -> None:
        kdev_path = config_path()
        if not kdev_path and repos_config is None:
            raise ConfigError(
                "nothing to check: give --config, KDEV_CONFIG or --repos-config", "usage_error"
            )
        problems = check_configs(Path(kdev_path) if kdev_path else None, repos_config)
        if as_json:
            shown = {"ok": not problems, "problems": [p.to_json() for p in problems]}
            typer.echo(json.dumps(shown))
        else:
            for problem in problems:
                typer.echo(str(problem))
        if problems:
            raise ConfigError(f"{len(problems)} problem(s) in the configuration", "invalid_config")
        if not as_json:
            typer.echo("configuration ok")

    guarded(work)


@config_app.command("show")
def config_show(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Print the effective kdev configuration, defaults included (it holds no secrets:
    only the names of the variables that do)."""

    def work() -> None:
        data = load_config(config_path()).model_dump(mode="json")
        if as_json:
            typer.echo(json.dumps(data))
        else:
            typer.echo(yaml.safe_dump(data, sort_keys=False), nl=False)

    guarded(work)


# Verbs in modules of their own, registered onto app when they are imported.
from wrapper.cli import explain as _cli_explain  # noqa: E402,F401
