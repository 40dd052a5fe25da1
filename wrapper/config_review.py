"""``review_post`` in KDEV_CONFIG: whether a review round is posted as one GitHub review
with line comments (issue 27; docs/reviewers.md "One review per round"; D86).

Off by default. ``review_post.enabled`` at the top level holds for every repository;
``repositories.<OWNER/NAME>.review_post`` wins for that one. When it is on for a
repository, its reviewer is asked for findings in the contract's form
(:mod:`wrapper.review.findings_contract`), a reviewer output that breaks the form fails
the leg, and the round is posted by :mod:`wrapper.review.round_post` (which also takes
the place of the ``github-comment`` target's PR comment for that round).

Kept apart from :mod:`wrapper.config` (which imports it) so neither grows past its cap;
it never imports that module back.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ReviewPostSettings(BaseModel):
    """``review_post``: ``enabled`` posts each round as one review (default off)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    enabled: bool = False
