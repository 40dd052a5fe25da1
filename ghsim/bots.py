"""Scripted review bots: accounts that answer trigger comments, as Gemini or Bugbot do.

``sim.add_review_bot("octo/widgets", "cursor[bot]", 9002, trigger="@cursor review",
answers=[...])`` registers a bot on a repository. Every new comment on one of the
repository's pulls (through the REST API or :meth:`GitHubSim.comment`) whose body matches
the trigger consumes the bot's next scripted answer, which is posted at once, inside the
same call and under the same (re-entrant) lock, as the bot's account:

- a string: an issue comment with that body;
- ``{"body", "path", "line"}`` (or a :class:`BotReply`): a review (line) comment on the
  pull's head, with its COMMENTED review, as GitHub shows a bot's inline finding; without
  ``path`` it is an issue comment;
- a list of those: several comments, in order;
- ``None``: nothing (the bot stays silent). A bot whose script is used up is silent too.

The answers are created after the trigger (higher ids; with ``delay`` the simulator
clock moves on by that many seconds first, so their ``created_at`` is later too).
A comment by a registered review bot never triggers a bot (its own or another's), so
two bots cannot answer each other in a loop; anyone else's comment can (a person, or a
tool such as kdev, whatever its account type).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ghsim.core import GhsimError
from ghsim.model import Comment, User
from ghsim.protection import ProtectionSim


@dataclass(frozen=True)
class BotReply:
    """One comment of a bot's answer: PR-level without ``path``, else a line comment."""

    body: str
    path: str | None = None
    line: int | None = None


Answer = str | BotReply | Mapping[str, Any] | Sequence[Any] | None


@dataclass
class ReviewBot:
    """A registered bot: its account, trigger and the answers left to give."""

    repo: str
    user: User
    trigger: re.Pattern[str]
    delay: float = 0.0
    answers: deque[tuple[BotReply, ...]] = field(default_factory=deque)
    triggered_by: list[int] = field(default_factory=list)  # trigger comment ids
    posted: list[int] = field(default_factory=list)  # ids of the bot's answers

    def as_dict(self) -> dict[str, Any]:
        return {
            "repo": self.repo,
            "user": self.user.as_dict(),
            "trigger": self.trigger.pattern,
            "answers_left": len(self.answers),
            "triggered_by": list(self.triggered_by),
            "posted": list(self.posted),
        }


def _reply(item: Any) -> BotReply:
    if isinstance(item, BotReply):
        return item
    if isinstance(item, str):
        return BotReply(item)
    if isinstance(item, Mapping):
        unknown = set(item) - {"body", "path", "line"}
        if unknown or not isinstance(item.get("body"), str):
            raise GhsimError(f"a bot reply is {{body, path?, line?}}, got {dict(item)!r}")
        line = item.get("line")
        return BotReply(item["body"], item.get("path"), None if line is None else int(line))
    raise GhsimError(f"a bot reply is a string or {{body, path?, line?}}, got {item!r}")


def normalise_answer(answer: Answer) -> tuple[BotReply, ...]:
    """One scripted answer as the comments it posts (``None``: none)."""
    if answer is None:
        return ()
    if isinstance(answer, str | BotReply | Mapping):
        return (_reply(answer),)
    if isinstance(answer, Sequence):
        return tuple(_reply(item) for item in answer)
    raise GhsimError(f"a bot reply is a string or {{body, path?, line?}}, got {answer!r}")


def trigger_pattern(trigger: str | re.Pattern[str], regex: bool) -> re.Pattern[str]:
    """A compiled pattern: a literal is matched anywhere in the body, case-insensitively."""
    if isinstance(trigger, re.Pattern):
        return trigger
    if not trigger:
        raise GhsimError("a review bot needs a non-empty trigger")
    try:
        return re.compile(trigger if regex else re.escape(trigger), re.IGNORECASE)
    except re.error as exc:
        raise GhsimError(f"bad trigger regex {trigger!r}: {exc}") from exc


class BotSim(ProtectionSim):
    """The review-bot helpers of :class:`ghsim.sim.GitHubSim` (one of its base classes)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._review_bots: list[ReviewBot] = []

    def add_review_bot(
        self,
        repo: str,
        login: str,
        user_id: int | None = None,
        *,
        trigger: str | re.Pattern[str],
        answers: Sequence[Answer] = (),
        regex: bool = False,
        delay: float = 0.0,
    ) -> ReviewBot:
        """Register a bot account on ``repo`` answering comments that match ``trigger``
        (a literal, or a regular expression with ``regex=True`` or a compiled pattern)
        with ``answers``, one per trigger comment (see the module doc). A second call for
        the same login on the same repository replaces its script."""
        with self.lock:
            target = self.repo(repo)
            if delay < 0:
                raise GhsimError("a review bot's delay is not negative")
            account = self.user(login, user_id, "Bot")
            account.type = "Bot"  # also a known login without "[bot]", such as Copilot
            bot = ReviewBot(
                target.full_name,
                account,
                trigger_pattern(trigger, regex),
                delay,
                deque(normalise_answer(a) for a in answers),
            )
            self._review_bots = [
                b
                for b in self._review_bots
                if not (b.repo == bot.repo and b.user.id == bot.user.id)
            ]
            self._review_bots.append(bot)
            return bot

    def review_bots(self, repo: str) -> list[ReviewBot]:
        """The bots registered on ``repo``, in registration order."""
        with self.lock:
            key = self.repo(repo).full_name
            return [b for b in self._review_bots if b.repo == key]

    def _answer_triggers(self, trigger: Comment) -> None:
        """Called by ``comment`` under the lock: every matching bot posts its next answer."""
        if any(b.user.id == trigger.user.id for b in self._review_bots):
            return  # bots never answer bots: no loops
        for bot in self.review_bots(trigger.repo.full_name):
            if not bot.trigger.search(trigger.body):
                continue
            bot.triggered_by.append(trigger.id)
            answer = bot.answers.popleft() if bot.answers else ()
            if answer and bot.delay:
                self.advance(bot.delay)
            for reply in answer:
                posted = self.comment(  # type: ignore[attr-defined]
                    bot.repo,
                    trigger.pull_number,
                    reply.body,
                    author=bot.user,
                    kind="review" if reply.path else "issue",
                    path=reply.path,
                    line=reply.line,
                )
                bot.posted.append(posted.id)
