"""The one gate every body kdev posts on GitHub passes, and the self-loop closure around it.

:func:`post_gated` is the gate every comment kdev posts goes through: review rounds
(:mod:`wrapper.ledger.delivery`, via :func:`post_comment`), descriptions
(:mod:`wrapper.review.describe`, via :func:`post_comment`), roster findings
(:mod:`wrapper.review.findings_post`, their own ``send``, with a signature), the
validator's withdrawal replies (:mod:`wrapper.review.findings_withdraw`) and the
author-loop replies of :mod:`wrapper.authorloop.threads` (their own ``send``); nothing
in ``wrapper/`` posts a body to GitHub any other way (tests/wrapper/test_comment_gate.py
checks the source). It applies, in order:

1. :func:`wrapper.neutralise.prepare_comment`: cross-references and raw HTML escaped,
   then every mention of ``mention_handle`` that the trigger detector would count
   rewritten as ``@&#8203;handle`` (so kdev's own comment can never summon kdev); without a
   ``mention_handle`` (author-loop replies only) prose is still escaped;
2. the secret canary: when a known secret (:func:`wrapper.leakscan.known_secrets`:
   ``secret_env`` values, the token, webhook URLs, API keys) appears in the raw or the
   prepared body, nothing is posted: ``secret_in_output`` as it is, ``secret_leak`` in
   an encoded form (:func:`wrapper.leakscan.find_leak`);
3. after a successful POST the new comment's id is appended to the ledger
   (``posted-comments.jsonl``), so ``kdev review-pr --comment-id ID`` of that comment is
   ``skipped_self_comment``. There is no way to post without a ledger: the self-loop is
   decided by this set of posted ids alone, never by the account that posted.

Bodies longer than :data:`MAX_BODY_CHARS` (GitHub's limit is 65536) are cut, with a note.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from engine.github import GitHubClient, GitHubError
from wrapper.config import KdevConfig
from wrapper.errors import ConfigError, KdevError, LedgerError
from wrapper.gh import post_issue_comment
from wrapper.leakscan import known_secrets, refuse_leak
from wrapper.ledger.ledger import Ledger
from wrapper.neutralise import contains_secret, escape_prose, prepare_comment

_SIGNATURE = re.compile(r"<!-- kdev-agent: [A-Za-z0-9._-]{1,100} -->")
log = logging.getLogger("kdev.comments")  # the name it logged under as wrapper.comments

MAX_BODY_CHARS = 60000
TRUNCATION_NOTE = "\n\n_(kdev: the rest of the output was cut to fit one comment)_\n"
COMMENT_POST_FAILED = "comment_post_failed"


@dataclass(frozen=True)
class PostedComment:
    """A comment kdev posted: its id and its page."""

    id: int
    html_url: str


def comment_body(raw: str, handle: str | None) -> str:
    """The body kdev posts for ``raw``: prepared (escaped, neutralised; escaped only
    without a handle), cut to fit."""

    def prepare(text: str) -> str:
        return prepare_comment(text, handle) if handle else escape_prose(text)

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
) -> dict[str, Any]:
    """The one gate (see the module doc): prepare ``raw``, refuse a secret
    (LedgerError ``secret_in_output``, nothing posted), ``send`` the body, record the new
    comment's id under ``purpose``; returns GitHub's answer. ``send`` raises its own
    KdevError for a failed POST; an answer without an id is ``failure_reason``.

    ``signature`` is a hidden ``<!-- kdev-agent: NAME -->`` line appended after the
    preparation (which would escape it as raw HTML); anything else is refused."""
    if signature and not _SIGNATURE.fullmatch(signature):
        raise KdevError(f"not a kdev-agent signature: {signature[:120]!r}", "invalid_signature")
    body = comment_body(raw, config.mention_handle)
    if signature:
        body = f"{body}\n\n{signature}"
    secrets = known_secrets(config, environ)
    if contains_secret((raw, body), secrets):
        raise LedgerError(
            f"the {purpose} comment for {repo} #{pr} contains the value of a secret_env "
            "variable; nothing was posted",
            "secret_in_output",
        )
    refuse_leak((raw, body), secrets, f"the {purpose} comment for {repo} #{pr}")
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


def post_comment(
    github: GitHubClient,
    ledger: Ledger,
    config: KdevConfig,
    environ: Mapping[str, str],
    repo: str,
    pr: int,
    raw: str,
    purpose: str,
) -> PostedComment:
    """Prepare ``raw``, apply the secret canary, post it on ``repo`` #``pr`` and record
    its id. Raises ConfigError ``invalid_config`` (no ``mention_handle``), LedgerError
    ``secret_in_output`` (nothing posted) or KdevError ``comment_post_failed``."""
    handle = config.mention_handle
    if handle is None:
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

    created = post_gated(ledger, config, environ, repo, pr, raw, purpose, send)
    html_url = created.get("html_url")
    return PostedComment(created["id"], html_url if isinstance(html_url, str) else "")
