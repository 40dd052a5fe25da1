"""``Closable``: an object that holds a resource until ``close()``, usable as ``with x:``.

The base of engine.api.LiReader (a database engine) and engine.github.session's
GitHubSession (a connection pool): each says only how it closes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Self


class Closable(ABC):
    """Closed by :meth:`close`, or at the end of the ``with`` block that entered it."""

    @abstractmethod
    def close(self) -> None:
        """Release what this object holds."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
