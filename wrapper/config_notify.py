"""kdev.yaml ``notify`` (and ``recipients``): where notices go, one model a target kind."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from wrapper.config_base import Strict as _Strict


class LogTarget(_Strict):
    type: Literal["log"]


class FileTarget(_Strict):
    type: Literal["file"]
    path: str


class CommandTarget(_Strict):
    type: Literal["command"]
    argv: list[str] = Field(min_length=1)


class WebhookTarget(_Strict):
    type: Literal["webhook"]
    url: str
    timeout_seconds: float = 10.0


class GithubCommentTarget(_Strict):
    """Posts each review round as one PR comment (review-pr itself does it, after the
    verdict is written; :func:`wrapper.notify.send` passes over this target)."""

    type: Literal["github-comment"]


NotifyTarget = Annotated[
    LogTarget | FileTarget | CommandTarget | WebhookTarget | GithubCommentTarget,
    Field(discriminator="type"),
]


def default_notify() -> list[NotifyTarget]:
    """Without configured targets, notifications go to the log."""
    return [LogTarget(type="log")]
