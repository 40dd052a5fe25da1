"""Where a round's findings go (:class:`PostTarget`), shared by the posting of findings
(:mod:`wrapper.review.findings_post`) and their withdrawal
(:mod:`wrapper.review.findings_withdraw`), so neither imports the other for it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from engine.github import GitHubClient
from wrapper.config import KdevConfig
from wrapper.ledger.ledger import Ledger


@dataclass(frozen=True)
class PostTarget:
    """Where findings go: the client, ledger, config and environment of the round."""

    github: GitHubClient
    ledger: Ledger
    config: KdevConfig
    environ: Mapping[str, str]
    repo: str
    pr: int
    head_sha: str
