"""One repository's view of KDEV_CONFIG: its own ``repositories.<OWNER/NAME>`` block
where it sets a setting, else the top level's (``review_post``, D86; ``incremental``,
D92). ``repositories`` keys are lower-cased by the config.

Apart from :mod:`wrapper.config_review` and :mod:`wrapper.config_incremental` (which
:mod:`wrapper.config` imports, so they cannot name :class:`~wrapper.config.KdevConfig`)."""

from __future__ import annotations

from wrapper.config import KdevConfig, RepositorySettings
from wrapper.config_incremental import IncrementalMode


def _own(config: KdevConfig, repo: str) -> RepositorySettings | None:
    return config.repositories.get(repo.lower())


def review_post_enabled(config: KdevConfig, repo: str) -> bool:
    """Whether ``repo``'s rounds are posted as reviews: its own ``review_post`` if set,
    else the top level's."""
    settings = _own(config, repo)
    override = settings.review_post if settings is not None else None
    return (override or config.review_post).enabled


def incremental_mode(config: KdevConfig, repo: str) -> IncrementalMode:
    """``repo``'s mode: its own ``incremental`` if set, else the top level's."""
    settings = _own(config, repo)
    override = settings.incremental if settings is not None else None
    return (override or config.incremental).mode
