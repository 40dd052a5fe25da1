"""The one gate every body kdev posts on GitHub passes, and the self-loop closure around it.

:func:`post_gated` is the gate every comment kdev posts goes through: review rounds
(:mod:`wrapper.ledger.delivery`, via :func:`post_comment`), descriptions
(:mod:`wrapper.review.describe`, via :func:`post_comment`), roster findings
(:mod:`wrapper.review.findings_post`, their own ``send``, with a signature), the
validator's withdrawal replies (:mod:`wrapper.review.findings_withdraw`) and the
author-loop replies of :mod:`wrapper.authorloop.threads` (their own ``send``); nothing
in ``wrapper/`` posts a body to GitHub any other way (tests/wrapper/test_comment_gate.py
checks the source). It applies, in order:

1. :func:`wrapper.neutralise.prepare_comment`: raw HTML escaped, then every mention
   (``@login``, ``@org/team``) and cross-reference (``#123``, ``GH-123``,
   ``owner/repo#123``, ``user@sha``) GitHub would link rewritten with a zero-width space
   after its sign, except the names of ``mention_allow`` (and of the caller's
   ``mention``: a review bot's trigger, the operator's ``kdev reply --mention``) and,
   with ``allow_references``, the references; ``mention_handle`` is never exempt. The
   final text, signature included, is checked again
   (:func:`wrapper.neutralise.refuse_live_pings`, ``live_ping``: nothing posted);
2. the secret canary: when a known secret (:func:`wrapper.leakscan.known_secrets`:
   ``secret_env`` values, the token, webhook URLs, API keys) appears in the raw or the
   prepared body, nothing is posted: ``secret_in_output`` as it is, ``secret_leak`` in
   an encoded form (:func:`wrapper.leakscan.find_leak`);
3. after a successful POST the new comment's id is appended to the ledger
   (``posted-comments.jsonl``), so ``kdev review-pr --comment-id ID`` of that comment is
   ``skipped_self_comment``. There is no way to post without a ledger: the self-loop is
   decided by this set of posted ids alone, never by the account that posted.

Bodies longer than :data:`MAX_BODY_CHARS` (GitHub's limit is 65536) are cut, with a note.

:class:`PostingContext` names what posting on one PR takes (the client, the ledger, the
config, kdev's environment, the repository and the PR): the author-loop workflows
(reply, close-out, request-reviews, triage) take one, built once by their CLI verb
(:func:`wrapper.cli.common.posting_context`), instead of six parameters each.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from engine.github import GitHubClient, GitHubError
from wrapper.config import KdevConfig
from wrapper.errors import ConfigError, KdevError, LedgerError
from wrapper.gh import create_reaction, post_issue_comment
from wrapper.leakscan import known_secrets, refuse_leak
from wrapper.ledger.ledger import Ledger
from wrapper.neutralise import contains_secret, prepare_comment, refuse_live_pings

# A hidden line appended after the preparation: a roster agent's signature, or the mark
# of the reply to a summons (wrapper.review.summons, D99).
_SIGNATURE = re.compile(r"<!-- kdev-(?:agent: [A-Za-z0-9._-]{1,100}|summons: [1-9][0-9]{0,19}) -->")
log = logging.getLogger("kdev.comments")  # the name it logged under as wrapper.comments

MAX_BODY_CHARS = 60000
TRUNCATION_NOTE = "\n\n_(kdev: the rest of the output was cut to fit one comment)_\n"
COMMENT_POST_FAILED = "comment_post_failed"
REACTION_FAILED = "reaction_failed"


@dataclass(frozen=True)
class PostingContext:
    """Everything a body posted on ``repo`` #``pr`` needs: the client that posts it, the
    ledger its id is recorded in, the config (mentions, secrets) and kdev's environment
    (the secret canary's values)."""

    github: GitHubClient
    ledger: Ledger
    config: KdevConfig
    environ: Mapping[str, str]
    repo: str
    pr: int

    def gated(
        self,
        raw: str,
        purpose: str,
        send: Callable[[str], dict[str, Any]],
        *,
        failure_reason: str = COMMENT_POST_FAILED,
        mention: Collection[str] = (),
        signature: str = "",
    ) -> dict[str, Any]:
        """:func:`post_gated` on this PR."""
        return post_gated(
            self.ledger, self.config, self.environ, self.repo, self.pr, raw, purpose, send,
            failure_reason, signature, mention,
        )  # fmt: skip

    def react(self, kind: str, comment_id: int, content: str) -> dict[str, Any]:
        """A ``content`` reaction to comment ``comment_id`` (``kind`` ``issue`` or ``diff``)
        on this PR; returns it. The gate's write for a reaction: it has no body, so
        nothing is neutralised or scanned, but it takes ``mention_handle`` like every
        post, and ``content`` is one of GitHub's fixed words, never text of ours. GitHub
        keeps one reaction per user and content, so sending it again (after a kill before
        its id was recorded) makes no second one. ConfigError ``invalid_config``,
        KdevError ``reaction_failed``."""
        if self.config.mention_handle is None:
            raise ConfigError(
                "reacting to a comment needs mention_handle in KDEV_CONFIG", "invalid_config"
            )
        try:
            made = create_reaction(self.github, self.repo, kind, comment_id, content)
        except GitHubError as exc:
            raise KdevError(
                f"cannot react to comment {comment_id} on {self.repo} #{self.pr}: "
                f"{exc.message} [{exc.reason}]",
                REACTION_FAILED,
            ) from None
        reaction_id = made.get("id")
        if isinstance(reaction_id, bool) or not isinstance(reaction_id, int) or reaction_id < 1:
            raise KdevError(
                f"GitHub answered the reaction to comment {comment_id} without an id",
                REACTION_FAILED,
            )
        log.info("reacted %s to comment %s on %s #%s", content, comment_id, self.repo, self.pr)
        return made

    def prepare(self, raw: str, purpose: str) -> str:
        """Steps 1-2 of the gate without the POST, on this PR: ``raw`` prepared, the live
        pings and the secret canary checked (raising as :func:`post_gated` does); the
        body to send. A caller that sends several bodies in one request (a review and its
        line comments, :mod:`wrapper.review.round_post`) prepares each, then records the
        ids GitHub made."""
        what = f"the {purpose} comment for {self.repo} #{self.pr}"
        return BodyGate(self.config, self.environ, what).prepare(raw)


@dataclass(frozen=True)
class PostedComment:
    """A comment kdev posted: its id and its page."""

    id: int
    html_url: str


def comment_body(
    raw: str, handle: str | None, allow: Collection[str] = (), references: bool = False
) -> str:
    """The body kdev posts for ``raw``: prepared (escaped, neutralised but for ``allow``
    and, with ``references``, the references), cut to fit."""

    def prepare(text: str) -> str:
        return prepare_comment(text, handle, allow=allow, references=references)

    limit = MAX_BODY_CHARS
    prepared = prepare(raw)
    while len(prepared) > MAX_BODY_CHARS and limit > 0:
        limit = int(limit * 0.8)
        prepared = prepare(raw[:limit] + TRUNCATION_NOTE)
    return prepared


def post_gated(
    ledger: Ledger,
    config: KdevConfig,
    environ: Mapping[str, str],
    repo: str,
    pr: int,
    raw: str,
    purpose: str,
    send: Callable[[str], dict[str, Any]],
    failure_reason: str = COMMENT_POST_FAILED,
    signature: str = "",
    mention: Collection[str] = (),
) -> dict[str, Any]:
    """The one gate (see the module doc): prepare ``raw``, refuse a secret
    (LedgerError ``secret_in_output``, nothing posted), ``send`` the body, record the new
    comment's id under ``purpose``; returns GitHub's answer. ``send`` raises its own
    KdevError for a failed POST; an answer without an id is ``failure_reason``.

    ``signature`` is a hidden ``<!-- kdev-agent: NAME -->`` line appended after the
    preparation (which would escape it as raw HTML); anything else is refused.
    ``mention`` adds names this one body may ping to ``mention_allow``."""
    if signature and not _SIGNATURE.fullmatch(signature):
        raise KdevError(f"not a kdev-agent signature: {signature[:120]!r}", "invalid_signature")
    gate = BodyGate(config, environ, f"the {purpose} comment for {repo} #{pr}", mention)
    body = gate.prepare(raw)
    if signature:
        body = f"{body}\n\n{signature}"
        gate.check(raw, body)
    created = send(body)
    comment_id = created.get("id")
    if isinstance(comment_id, bool) or not isinstance(comment_id, int) or comment_id < 1:
        raise KdevError(
            f"GitHub answered the {purpose} comment on {repo} #{pr} without an id",
            failure_reason,
        )
    ledger.record_posted_comment(repo, pr, comment_id, purpose)
    log.info("posted %s comment %s on %s #%s", purpose, comment_id, repo, pr)
    return created


@dataclass(frozen=True)
class BodyGate:
    """Steps 1-2 of the gate for one body: what it is checked against (the config's
    mentions and secrets, kdev's environment for the canary), ``what`` it is (for an
    error) and the names it may ping beyond ``mention_allow``."""

    config: KdevConfig
    environ: Mapping[str, str]
    what: str
    mention: Collection[str] = ()

    def prepare(self, raw: str) -> str:
        """``raw`` escaped, neutralised and cut to fit, then :meth:`check`-ed."""
        config = self.config
        allow = [*config.mention_allow, *self.mention]
        body = comment_body(raw, config.mention_handle, allow, config.allow_references)
        self.check(raw, body)
        return body

    def check(self, raw: str, body: str) -> None:
        """The final ``body`` (made from ``raw``): no live ping (``live_ping``), no known
        secret as it is (``secret_in_output``) or encoded (``secret_leak``)."""
        config = self.config
        allow = [*config.mention_allow, *self.mention]
        refuse_live_pings(
            body, config.mention_handle, allow=allow, references=config.allow_references
        )
        secrets = known_secrets(config, self.environ)
        if contains_secret((raw, body), secrets):
            raise LedgerError(
                f"{self.what} contains the value of a secret_env variable; nothing was posted",
                "secret_in_output",
            )
        refuse_leak((raw, body), secrets, self.what)


def post_comment(target: PostingContext, raw: str, purpose: str) -> PostedComment:
    """Prepare ``raw``, apply the secret canary, post it on ``target``'s PR and record
    its id. Raises ConfigError ``invalid_config`` (no ``mention_handle``), LedgerError
    ``secret_in_output`` (nothing posted) or KdevError ``comment_post_failed``."""
    github, repo, pr = target.github, target.repo, target.pr
    if target.config.mention_handle is None:
        raise ConfigError(
            "posting a comment needs mention_handle in KDEV_CONFIG (its mentions are "
            "neutralised in everything kdev posts)",
            "invalid_config",
        )

    def send(body: str) -> dict[str, Any]:
        try:
            return post_issue_comment(github, repo, pr, body)
        except GitHubError as exc:
            raise KdevError(
                f"cannot post the {purpose} comment on {repo} #{pr}: {exc.message} [{exc.reason}]",
                COMMENT_POST_FAILED,
            ) from None

    created = target.gated(raw, purpose, send)
    html_url = created.get("html_url")
    return PostedComment(created["id"], html_url if isinstance(html_url, str) else "")
