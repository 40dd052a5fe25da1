"""The real GitHub example payloads in ``templates/`` and the helpers that fill them.

Every builder (``ghsim/payloads.py`` and the ``render_*.py`` modules) deep-copies the
fixture object for its location and only *fills* keys the fixture already has, so the key
sets and nesting (``user``, ``head.repo``, ``_links`` ...) are those of the real payloads.
The copies in ``templates/`` are byte-identical to ``tests/fixtures/github/`` (sources and
licenses in its ``SOURCES.md``; a test checks this).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

TEMPLATE_DIR = Path(__file__).with_name("templates")


def load_template(name: str) -> Any:
    """A fresh parsed copy of ``templates/<name>``."""
    return json.loads((TEMPLATE_DIR / name).read_text(encoding="utf-8"))


PULL_SIMPLE: dict[str, Any] = load_template("pulls-list.json")[0]
PULL_FULL: dict[str, Any] = load_template("pull.json")
ISSUE_COMMENT: dict[str, Any] = load_template("issue-comments-list.json")[0]
REVIEW_COMMENT: dict[str, Any] = load_template("review-comments-list.json")[0]
REVIEW: dict[str, Any] = load_template("pull-reviews-list.json")[0]
CHECK_RUNS: dict[str, Any] = load_template("check-runs-list.json")
COMBINED_STATUS: dict[str, Any] = load_template("combined-status.json")
STATUS: dict[str, Any] = load_template("status.json")
RATE_LIMIT: dict[str, Any] = load_template("rate-limit.json")
USER: dict[str, Any] = PULL_FULL["user"]
LABEL: dict[str, Any] = PULL_FULL["labels"][0]


def subst(value: Any, pairs: Iterable[tuple[str, str]]) -> Any:
    pairs = list(pairs)
    if isinstance(value, str):
        for old, new in pairs:
            value = value.replace(old, new)
        return value
    if isinstance(value, dict):
        return {k: subst(v, pairs) for k, v in value.items()}
    if isinstance(value, list):
        return [subst(v, pairs) for v in value]
    return value


def fill(obj: dict[str, Any], **values: Any) -> dict[str, Any]:
    """Set only keys the template already has (the shape stays the template's)."""
    for key, value in values.items():
        if key in obj:
            obj[key] = value
    return obj
