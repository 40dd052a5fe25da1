"""The kdev command line: the table of verbs (the console script is ``wrapper.cli.entry:main``).

Each verb group lives in a module of its own and is listed in :data:`VERBS`, in the order
``kdev -h`` lists them: review-pr/describe-pr/reviewers (:mod:`wrapper.cli.review`),
verdicts and ``verdict show`` (:mod:`wrapper.cli.verdicts`), pr-sweep
(:mod:`wrapper.cli.sweep`), the author's loop (:mod:`wrapper.cli.authorloop`,
:mod:`wrapper.cli.loop`), explain (:mod:`wrapper.cli.explain`), costs
(:mod:`wrapper.cli.costs`), ``config`` (:mod:`wrapper.cli.config`) and ``init``
(:mod:`wrapper.cli.init`). A verb's module is imported only when that verb is looked up
(:mod:`wrapper.cli.lazy`), so ``kdev review-pr`` does not import the others. The root
options, error mapping and ledger opening are in :mod:`wrapper.cli.common`.

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

from engine.clikit import OneLineErrorsTyper  # noqa: E402
from wrapper.cli import common  # noqa: E402
from wrapper.cli.lazy import lazy_group  # noqa: E402

# name -> "module:attribute": a command function, or a typer.Typer for a group of verbs.
VERBS = {
    "review-pr": "wrapper.cli.review:review_pr_cmd",
    "describe-pr": "wrapper.cli.review:describe_pr_cmd",
    "verdicts": "wrapper.cli.verdicts:verdicts_cmd",
    "pr-sweep": "wrapper.cli.sweep:pr_sweep_cmd",
    "watch": "wrapper.cli.authorloop:watch_cmd",
    "comments": "wrapper.cli.authorloop:comments_cmd",
    "reply": "wrapper.cli.authorloop:reply_cmd",
    "resolve": "wrapper.cli.authorloop:resolve_cmd",
    "reopen": "wrapper.cli.authorloop:reopen_cmd",
    "hide": "wrapper.cli.authorloop:hide_cmd",
    "pr-status": "wrapper.cli.authorloop:pr_status_cmd",
    "check-ci": "wrapper.cli.authorloop:check_ci_cmd",
    "request-reviews": "wrapper.cli.authorloop:request_reviews_cmd",
    "triage": "wrapper.cli.loop:triage_cmd",
    "loop-status": "wrapper.cli.loop:loop_status_cmd",
    "close-out": "wrapper.cli.loop:close_out_cmd",
    "explain": "wrapper.cli.explain:explain_cmd",
    "costs": "wrapper.cli.costs:costs_cmd",
    "verdict": "wrapper.cli.verdicts:verdict_app",
    "config": "wrapper.cli.config:config_app",
    "reviewers": "wrapper.cli.review:reviewers_app",
    "init": "wrapper.cli.init:init_cmd",
}

app = OneLineErrorsTyper(
    name="kdev",
    help="Review wrapper for the li engine: decides whether a PR review runs, and runs it.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.info.cls = lazy_group(VERBS, app)
app.callback()(common.main)
