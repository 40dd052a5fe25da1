"""``kdev review-pr`` and ``describe-pr``: gate, dedup, reviewer, verdict."""
