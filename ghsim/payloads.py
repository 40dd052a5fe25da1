"""Response bodies built from the real GitHub example payloads in ``templates/``.

:class:`Renderer` builds every payload the routes serve, one family a module:
``render_shared.py`` (users, repositories, labels), ``render_pulls.py``,
``render_conversation.py`` (comments, reviews) and ``render_checks.py`` (check runs,
statuses); the rate limit is built here. ``payload_templates.py`` loads the templates and
fills them (only keys the template has, so shapes stay those of api.github.com).
"""

from __future__ import annotations

import copy
from typing import Any

from ghsim.model import RateBucket
from ghsim.payload_templates import RATE_LIMIT
from ghsim.render_checks import CheckRenderer
from ghsim.render_conversation import ConversationRenderer
from ghsim.render_pulls import PullRenderer

DOCS = "https://docs.github.com/rest"


def error_body(message: str, doc: str = DOCS, status: int | None = None) -> dict[str, Any]:
    """GitHub's JSON error body."""
    body: dict[str, Any] = {"message": message, "documentation_url": doc}
    if status is not None:
        body["status"] = str(status)
    return body


class Renderer(PullRenderer, ConversationRenderer, CheckRenderer):
    """Builds payloads with URLs under ``api`` (the base URL the client used)."""

    # -- rate limit --------------------------------------------------------------------------

    def rate_limit(self, buckets: dict[str, RateBucket], now_epoch: int) -> dict[str, Any]:
        obj = copy.deepcopy(RATE_LIMIT)
        for name, entry in obj["resources"].items():
            bucket = buckets.get(name)
            if bucket is None:
                entry.update(
                    limit=entry["limit"], used=0, remaining=entry["limit"], reset=now_epoch + 3600
                )
            else:
                entry.update(
                    limit=bucket.limit,
                    used=bucket.used,
                    remaining=bucket.remaining,
                    reset=bucket.reset_at,
                )
        obj["rate"] = dict(obj["resources"]["core"])
        return obj
