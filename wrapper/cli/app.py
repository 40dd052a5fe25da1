"""The kdev command line: the table of verbs (``kdev = "wrapper.cli.app:app"``).

Each verb group lives in a module of its own and is registered here, in the order
``kdev -h`` lists them: review-pr/describe-pr/reviewers (:mod:`wrapper.cli.review`),
verdicts and ``verdict show`` (:mod:`wrapper.cli.verdicts`), pr-sweep
(:mod:`wrapper.cli.sweep`), the author's loop (:mod:`wrapper.cli.authorloop`),
explain (:mod:`wrapper.cli.explain`) and ``config`` (:mod:`wrapper.cli.config`). The
root options, error mapping and ledger opening are in :mod:`wrapper.cli.common`.

Every error prints one line ``error: <message> [<reason_code>]`` and exits with the code
of its class (docs/wrapper.md). Every decision of ``review-pr`` exits 0.
"""

from __future__ import annotations

import sys

# httpx's package imports its own command line, httpx._main (click, rich, pygments: about
# 40 ms), whenever click is installed; kdev never runs it. A None entry makes that import
# fail, and httpx then defines its stub ``main`` instead. Only when httpx is not loaded
# yet, so a process that imported it first keeps its own (D35, issue 19).
if "httpx" not in sys.modules and "httpx._main" not in sys.modules:
    sys.modules["httpx._main"] = None  # type: ignore[assignment]

import typer  # noqa: E402

from engine.clikit import OneLineErrorsTyper
from wrapper.cli import authorloop, common, config, explain, loop, review, sweep, verdicts

app = OneLineErrorsTyper(
    name="kdev",
    help="Review wrapper for the li engine: decides whether a PR review runs, and runs it.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.callback()(common.main)

verdict_app = typer.Typer(help="Read verdict files.", no_args_is_help=True)
app.add_typer(verdict_app, name="verdict")
config_app = typer.Typer(help="Check and print the configuration.", no_args_is_help=True)
app.add_typer(config_app, name="config")

app.command("review-pr")(review.review_pr_cmd)
app.command("describe-pr")(review.describe_pr_cmd)
app.command("verdicts")(verdicts.verdicts_cmd)
reviewers_app = typer.Typer(
    help="Which focused reviewers apply to a change; starter rosters.",
    invoke_without_command=True,
)
reviewers_app.callback()(review.reviewers_cmd)
reviewers_app.command("detect-language")(review.detect_language_cmd)
reviewers_app.command("install-template")(review.install_template_cmd)
app.add_typer(reviewers_app, name="reviewers")
verdict_app.command("show")(verdicts.verdict_show)
app.command("pr-sweep")(sweep.pr_sweep_cmd)
app.command("watch")(authorloop.watch_cmd)
app.command("comments")(authorloop.comments_cmd)
app.command("reply")(authorloop.reply_cmd)
app.command("resolve")(authorloop.resolve_cmd)
app.command("reopen")(authorloop.reopen_cmd)
app.command("hide")(authorloop.hide_cmd)
app.command("pr-status")(authorloop.pr_status_cmd)
app.command("check-ci")(authorloop.check_ci_cmd)
app.command("request-reviews")(authorloop.request_reviews_cmd)
app.command("triage")(loop.triage_cmd)
app.command("loop-status")(loop.loop_status_cmd)
app.command("close-out")(loop.close_out_cmd)
app.command("explain")(explain.explain_cmd)
config_app.command("validate")(config.config_validate)
config_app.command("show")(config.config_show)
