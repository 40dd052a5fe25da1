"""kdev: the review wrapper the li engine fires (review-pr, pr-sweep)."""

__version__ = "0.1.0"
