"""``kdev review-pr``, ``describe-pr`` and ``reviewers``: review one head, describe a PR,
show which focused reviewers apply."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import typer

from engine.termsafe import echo
from wrapper.cli.common import guarded, open_github, open_ledger
from wrapper.cli.options import AskingComment, Checkout, JsonLine, LedgerDir, Pr, Repo
from wrapper.config import check_repo
from wrapper.credentials import kdev_environ
from wrapper.errors import ConfigError
from wrapper.git import Git
from wrapper.ledger.ledger import Ledger, check_sha
from wrapper.ledger.outcomes import OutcomeLog, keep_from_env, recorded, secret_values
from wrapper.metrics import count_outcome
from wrapper.review.patch_id import fetch_pr_refs
from wrapper.review.review import ReviewContext, ReviewReport, ReviewRequest, review_pr


def review_pr_cmd(
    repo: Repo,
    pr: Pr,
    head_sha: str | None = typer.Option(
        None, "--head-sha", help="The head the event saw (default: the PR's current head)."
    ),
    pr_url: str | None = typer.Option(None, "--pr-url"),
    author: str | None = typer.Option(None, "--author"),
    notify_to: str | None = typer.Option(
        None, "--notify-to", help="Send the notices to this KDEV_CONFIG recipient."
    ),
    force: bool = typer.Option(False, "--force", help="Forget this diff's verdict; review."),
    checkout: Checkout = None,
    reviews_dir: LedgerDir = None,
    as_json: JsonLine = False,
    comment_id: AskingComment = None,
) -> None:
    """Review one pull request head, once per distinct diff."""
    run_head_verb(
        "review-pr",
        review_pr,
        lambda: check_repo(repo),
        lambda: replace(
            head_request(repo, pr, head_sha, checkout, comment_id),
            pr_url=pr_url,
            author=author,
            force=force,
            notify_to=notify_to or None,
        ),
        reviews_dir,
        as_json,
    )


def run_head_verb(
    command: str,
    run: Callable[[ReviewRequest, ReviewContext], ReviewReport],
    check: Callable[[], object],
    request: Callable[[], ReviewRequest],
    reviews_dir: str | None,
    as_json: bool,
) -> None:
    """What review-pr and describe-pr share: open the config and ledger, ``check`` the
    options, then, with the GitHub client, build the ``request``, ``run`` it recorded
    (:func:`run_recorded`) and print its report."""

    def work() -> None:
        config, ledger = open_ledger(reviews_dir)
        check()
        with open_github() as client:
            ctx = ReviewContext(config=config, ledger=ledger, github=client, environ=kdev_environ())
            req = request()
            report = run_recorded(command, req, ledger, ctx, lambda: run(req, ctx))
        print_report(report, as_json)

    guarded(work)


def head_request(
    repo: str, pr: int, head_sha: str | None, checkout: Path | None, comment_id: str | None
) -> ReviewRequest:
    """The request of one PR head, as both verbs take it: no ``--head-sha`` is the PR's
    current head, no ``--checkout`` the working directory, ``--comment-id`` parsed."""
    return ReviewRequest(
        repo=repo,
        pr=pr,
        head_sha=head_sha or "",
        checkout=(checkout or Path.cwd()).resolve(),
        comment_id=parse_comment_id(comment_id),
    )


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
    echo(
        f"{report.outcome.value}: {report.repo} #{report.pr} {report.head_sha[:12]}"
        f"{verdict}{where}{detail}"
    )


def _describe(req: Any, ctx: Any) -> Any:
    """``wrapper.review.describe.describe_pr``, imported only by describe-pr (issue 19)."""
    from wrapper.review.describe import describe_pr

    return describe_pr(req, ctx)


def describe_pr_cmd(
    repo: Repo,
    pr: Pr,
    head_sha: str | None = typer.Option(None, "--head-sha", help="Default: the current head."),
    checkout: Checkout = None,
    reviews_dir: LedgerDir = None,
    as_json: JsonLine = False,
    comment_id: AskingComment = None,
) -> None:
    """Describe a pull request with the reviewer backend; post it as a PR comment."""

    def check() -> None:
        check_repo(repo)
        if head_sha:
            check_sha(head_sha, "--head-sha")

    request = partial(head_request, repo, pr, head_sha, checkout, comment_id)
    run_head_verb("describe-pr", _describe, check, request, reviews_dir, as_json)


def reviewers_cmd(
    ctx: typer.Context,
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
    skip_stale_check: bool = typer.Option(
        False,
        "--skip-stale-check",
        help="Warn instead of failing when defaults_version_checked is not the built-in version.",
    ),
) -> None:
    """Which focused reviewers (defaults + AGENT-REVIEWERS.md) apply to a change."""
    if ctx.invoked_subcommand is not None:
        return  # detect-language / install-template

    def work() -> None:
        from wrapper.review.roster import build_roster, read_roster_files

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
        from wrapper.review.roster import ROSTER_FILE
        from wrapper.review.roster_config import check_defaults_pin

        stale = check_defaults_pin(ROSTER_FILE, roster.config, skip=skip_stale_check)
        for warning in [*roster.warnings, *([stale] if stale else [])]:
            echo(f"warning: {warning}", err=True)
        if as_json:
            typer.echo(json.dumps(roster.to_json(), indent=2))
            return
        echo(roster.summary)
        for reviewer in roster.reviewers:
            echo(
                f"{reviewer.name}  {reviewer.kind}  scope {reviewer.scope or '.'}  "
                f"files: {', '.join(reviewer.changed_files)}"
            )

    guarded(work)


def detect_language_cmd(
    repo_root: Path = typer.Option(Path("."), "--checkout", help="Checkout root."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """The checkout's languages by file count (for install-template)."""

    from wrapper.review.roster_templates import detect_languages

    def work() -> None:
        found = detect_languages(repo_root)
        if as_json:
            typer.echo(json.dumps([item.to_json() for item in found]))
            return
        if not found:
            echo("no known language")
        for item in found:
            echo(f"{item.language}  {item.files} file(s)")

    guarded(work)


def install_template_cmd(
    language: str = typer.Argument(..., help="python, typescript, go, rust or java."),
    repo_root: Path = typer.Option(Path("."), "--checkout", help="Checkout root."),
    force: bool = typer.Option(False, "--force", help="Replace an existing roster file."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Write a starter AGENT-REVIEWERS.md for LANGUAGE at the checkout's root."""

    from wrapper.review.roster_templates import install_template

    def work() -> None:
        target = install_template(repo_root, language, force=force)
        if as_json:
            typer.echo(json.dumps({"written": str(target), "language": language}))
            return
        echo(f"wrote {target}")

    guarded(work)


reviewers_app = typer.Typer(
    name="reviewers",
    help="Which focused reviewers apply to a change; starter rosters.",
    invoke_without_command=True,
)
reviewers_app.callback()(reviewers_cmd)
reviewers_app.command("detect-language")(detect_language_cmd)
reviewers_app.command("install-template")(install_template_cmd)
