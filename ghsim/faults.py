"""Injected faults of :class:`ghsim.sim.GitHubSim`: error answers, delays, broken bodies,
secondary rate limits, and the payload faults (a ghost author, a deleted fork).

The HTTP server (``ghsim/server.py``) takes the first matching fault of each request.
"""

from __future__ import annotations

from typing import Any

from ghsim.core import SimCore
from ghsim.model import Fault


class FaultSim(SimCore):
    """Fault injection (one of the bases of :class:`ghsim.sim.GitHubSim`)."""

    # == faults ================================================================================

    def inject_fault(
        self,
        method: str,
        path_regex: str,
        status: int | None = None,
        delay: float | None = None,
        truncate: bool = False,
        malformed: bool = False,
        times: int | None = 1,
        body: dict[str, Any] | None = None,
    ) -> Fault:
        """Next ``times`` matching requests (``None``: until cleared) get the fault.

        ``status`` answers with that status and a GitHub error body (not counted);
        ``delay`` sleeps that many seconds before answering; ``truncate`` sends half the
        body under the full Content-Length and closes the connection; ``malformed`` sends
        half the body as a complete (invalid JSON) response. ``method`` may be ``"*"``.
        """
        fault = Fault(
            method.upper(), path_regex, status, delay, truncate, malformed, times, body=body
        )
        with self.lock:
            self._faults.append(fault)
        return fault

    def inject_secondary_limit(
        self,
        retry_after: int | None = 60,
        method: str = "*",
        path_regex: str = ".*",
        times: int | None = 1,
        status: int = 403,
    ) -> Fault:
        """The secondary rate limit: ``status`` (403/429), its message, ``retry-after``."""
        fault = Fault(
            method.upper(),
            path_regex,
            status=status,
            times=times,
            retry_after=retry_after,
            secondary=True,
        )
        with self.lock:
            self._faults.append(fault)
        return fault

    def clear_faults(self) -> None:
        """Remove injected faults, including the ``user``/``head.repo`` null payload faults."""
        with self.lock:
            self._faults.clear()
            for pulls in self._pulls.values():
                for pr in pulls.values():
                    pr.user_null = False
                    pr.head_repo_null = False

    def _take_fault(self, method: str, path: str) -> Fault | None:
        for fault in self._faults:
            if fault.matches(method, path):
                if fault.times is not None:
                    fault.times -= 1
                fault.hits += 1
                return fault
        return None

    # == payload faults ========================================================================

    def set_pr_user_null(self, repo: str, number: int, null: bool = True) -> None:
        """Serve the pull's ``user`` as ``null`` (a deleted "ghost" account)."""
        with self.lock:
            self.pull(repo, number).user_null = null

    def set_head_repo_null(self, repo: str, number: int, null: bool = True) -> None:
        """Serve ``head.repo: null`` / ``headRepository: null`` (a deleted fork)."""
        with self.lock:
            self.pull(repo, number).head_repo_null = null

    def set_comment_user_null(self, repo: str, comment_id: int, null: bool = True) -> None:
        with self.lock:
            self.get_comment(repo, comment_id).user_null = null
