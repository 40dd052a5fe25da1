"""The hidden line that names the round a review posts (D86): written by
:mod:`wrapper.review.round_post`, looked for by :mod:`wrapper.review.incremental`, apart
from both so that neither imports the other."""

from __future__ import annotations

from wrapper.ledger.ledger import check_sha


def marker(patch_id: str) -> str:
    """The hidden line that names the round a review posts."""
    return f"<!-- kdev-round: {check_sha(patch_id, 'patch_id')} -->"
