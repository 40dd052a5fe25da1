"""kdev: the review wrapper the li engine fires (review-pr, pr-sweep)."""

from engine import __version__ as __version__
