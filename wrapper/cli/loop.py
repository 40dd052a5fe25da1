"""``kdev triage`` and ``kdev loop-status``: the author loop's decisions (docs/author-loop.md)."""

from __future__ import annotations

import json

import typer

from engine.termsafe import echo
from wrapper.cli.common import guarded, open_ledger, posting_context, posting_verb
from wrapper.cli.options import JsonObject, LedgerDir, Pr, Repo
from wrapper.config import check_repo


def triage_cmd(
    repo: Repo,
    pr: Pr,
    decide: list[str] = typer.Option(
        [], "--decide", help="ID=fix, ID=escalate or ID=reject:REASON (repeatable)."
    ),
    reviews_dir: LedgerDir = None,
    as_json: JsonObject = False,
) -> None:
    """One decision per open comment (fix, reject with a reason, escalate), by rules
    first, then the triage reviewer leg when configured, and by hand with --decide; an
    escalation notifies the owner once."""
    from wrapper.authorloop.decisions import parse_manual
    from wrapper.authorloop.triage_run import run_triage

    def work() -> None:
        check_repo(repo)
        manual = parse_manual(decide)
        with posting_context(repo, pr, reviews_dir) as ctx:
            report = run_triage(ctx, manual)
        if as_json:
            shown = [d.to_json() for d in report.decided.values()]
            undecided = [{"comment_id": k, "why": v} for k, v in report.undecided.items()]
            out = {"repo": repo, "pr": pr, "decisions": shown, "undecided": undecided}
            typer.echo(json.dumps({**out, "ignored": report.ignored}))
            return
        for item in report.decided.values():
            echo(f"{item.comment_id}  {item.decision}  ({item.by}) {item.reason}")
        for comment_id, why in report.undecided.items():
            echo(f"{comment_id}  undecided  (reviewer) {why}")
        for line in report.ignored:
            echo(f"ignored: {line}")

    guarded(work)


def loop_status_cmd(
    repo: Repo, pr: Pr, reviews_dir: LedgerDir = None, as_json: JsonObject = False
) -> None:
    """continue, one_more_round, stop_clean, stop_ceiling or escalate, and why (from the
    ledger's review rounds and triage decisions; no GitHub call)."""
    from wrapper.authorloop.decisions import read_decisions
    from wrapper.authorloop.loopstatus import loop_status
    from wrapper.authorloop.pr_status import review_rounds

    def work() -> None:
        check_repo(repo)
        _, ledger = open_ledger(reviews_dir)
        status = loop_status(review_rounds(ledger, repo, pr), read_decisions(ledger, repo, pr))
        if as_json:
            typer.echo(json.dumps(status.to_json()))
            return
        echo(f"{status.state}: {status.reason}")

    guarded(work)


def close_out_cmd(
    repo: Repo, pr: Pr, reviews_dir: LedgerDir = None, as_json: JsonObject = False
) -> None:
    """For every comment whose triage is settled: reply, then resolve, then hide.
    Idempotent; reports what it did."""
    from wrapper.authorloop.closeout import Closed, close_out

    def line(item: Closed) -> str:
        now = ", ".join(item.done_now) or "nothing left to do"
        return f"{item.comment_id}  {item.decision}: {now}"

    posting_verb(repo, pr, reviews_dir, as_json, "closed", close_out, line)
