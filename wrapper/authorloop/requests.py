"""``kdev request-reviews --repo R --pr N``: ask the review bots for a round.

The bots are ``review_bots`` in kdev.yaml (default: wrapper.config.DEFAULT_BOTS), in the order
they are tried. One request:

1. **Quota.** Every comment on the PR by a bot's account is scanned for its quota
   message (``quota_pattern``, case-insensitive; Gemini answers "You have reached your
   daily quota limit"). A match posted today (UTC) marks the bot exhausted until the end
   of the day, with the matched line as the reason, in the ledger's
   ``bots.json`` of the repository (written atomically).
2. **Ask.** Bots are taken in order, skipping exhausted ones, until ``per_round`` have
   been asked (default: every bot): each gets its trigger comment (``/gemini review``,
   ``@cursor review``, ...) through the one posting gate (wrapper/post.py). An exhausted
   bot's turn falls to the next bot of the roster.

The answer lists, per bot, ``requested``, ``exhausted`` (with its reason) or ``not_needed``
(the round was full). No bot left to ask is ConfigError ``no_review_bot`` (exit 2)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from wrapper.config import ReviewBot
from wrapper.errors import ConfigError
from wrapper.gh import post_issue_comment
from wrapper.jsonform import JsonForm
from wrapper.ledger.ledger import Ledger
from wrapper.neutralise import mentions_in
from wrapper.post import PostingContext

NO_REVIEW_BOT = "no_review_bot"
STATE_FILE = "bots.json"


@dataclass(frozen=True)
class BotRequest(JsonForm):
    """What one request did for one bot."""

    bot: str
    state: str  # requested | exhausted | not_needed
    reason: str = ""
    comment_id: int | None = None


def exhausted_today(
    bots: Sequence[ReviewBot], comments: Sequence[Mapping[str, Any]], today: date
) -> dict[str, str]:
    """Bot name -> the quota line it posted today (UTC), from the PR's comments. Pure."""
    found: dict[str, str] = {}
    for bot in bots:
        if bot.quota_pattern is None:
            continue
        pattern = re.compile(bot.quota_pattern, re.IGNORECASE)
        for comment in comments:
            user = comment.get("user")
            login = user.get("login") if isinstance(user, dict) else None
            body, when = str(comment.get("body") or ""), _day(comment.get("created_at"))
            if login == bot.login and when == today and (match := pattern.search(body)):
                line = next(ln for ln in body.splitlines() if match.group(0) in ln)
                found[bot.name] = line.strip()[:200]
    return found


def choose(
    bots: Sequence[ReviewBot], exhausted: Mapping[str, str], per_round: int | None
) -> list[BotRequest]:
    """Which bots to ask, in roster order: exhausted ones skipped. Pure."""
    wanted = per_round or len(bots)
    plan: list[BotRequest] = []
    asked = 0
    for bot in bots:
        if bot.name in exhausted:
            plan.append(BotRequest(bot.name, "exhausted", exhausted[bot.name]))
        elif asked < wanted:
            plan.append(BotRequest(bot.name, "requested"))
            asked += 1
        else:
            plan.append(BotRequest(bot.name, "not_needed", "the round is full"))
    if asked == 0:
        raise ConfigError("every review bot is out of quota for today", NO_REVIEW_BOT)
    return plan


def _day(stamp: Any) -> date | None:
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone(UTC).date()
    except ValueError:
        return None


def read_state(ledger: Ledger, repo: str, today: date) -> dict[str, str]:
    """Bots marked exhausted today in the repository's ``bots.json`` (older marks expire)."""
    path = ledger.repo_dir(repo) / STATE_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    marks = data.get("exhausted", {}) if isinstance(data, dict) else {}
    return {
        name: str(mark.get("reason", ""))
        for name, mark in marks.items()
        if isinstance(mark, dict) and mark.get("day") == today.isoformat()
    }


def write_state(ledger: Ledger, repo: str, today: date, exhausted: Mapping[str, str]) -> None:
    marks = {name: {"day": today.isoformat(), "reason": why} for name, why in exhausted.items()}
    directory = ledger.repo_dir(repo)
    ledger.ensure_dir(directory)
    ledger.atomic_write(directory / STATE_FILE, json.dumps({"exhausted": marks}, indent=2))


def request_reviews(
    ctx: PostingContext, *, clock: Callable[[], datetime] = lambda: datetime.now(UTC)
) -> list[BotRequest]:
    """One request on ``ctx.repo`` #``ctx.pr`` (see the module doc)."""
    github, ledger, repo, pr = ctx.github, ctx.ledger, ctx.repo, ctx.pr
    bots = ctx.config.review_bots
    today = clock().astimezone(UTC).date()
    comments = github.get_rest(
        f"repos/{repo}/issues/{pr}/comments", {"per_page": 100}, conditional=False, paginate=True
    ).body
    seen = exhausted_today(bots.bots, comments if isinstance(comments, list) else [], today)
    exhausted = {**read_state(ledger, repo, today), **seen}
    write_state(ledger, repo, today, exhausted)
    plan = choose(bots.bots, exhausted, bots.per_round)
    triggers = {bot.name: bot.trigger for bot in bots.bots}

    def send(body: str) -> dict[str, Any]:
        return post_issue_comment(github, repo, pr, body)

    done: list[BotRequest] = []
    for item in plan:
        if item.state != "requested":
            done.append(item)
            continue
        created = ctx.gated(
            triggers[item.bot],
            f"review-request:{item.bot}",
            send,
            mention=mentions_in(triggers[item.bot]),  # the configured trigger pings its bot
        )
        done.append(BotRequest(item.bot, "requested", "", int(created["id"])))
    return done
