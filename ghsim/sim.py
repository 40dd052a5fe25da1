"""``GitHubSim``: the simulator's public face: its lifecycle, and all helpers in one class.

The helpers live one concern a module, each a base class of ``GitHubSim`` on top of
:class:`ghsim.core.SimCore` (state, clock, tokens, lookups): ``repos.py``, ``pulls.py``
(git: open, push, sync, merge), ``pull_edits.py``, ``conversation.py``, ``checks.py``,
``protection.py``, ``bots.py``, ``faults.py``, ``traffic.py`` (rate limits, request log)
and ``facts.py`` (what the routes derive). Every helper takes ``self.lock``.
"""

from __future__ import annotations

import shutil
import threading
from typing import Self

from ghsim.checks import CheckSim
from ghsim.conversation import ConversationSim
from ghsim.core import AUTO, GhsimError
from ghsim.facts import FactsSim
from ghsim.faults import FaultSim
from ghsim.gitops import GitError, MergeConflict
from ghsim.pull_edits import PullEditSim
from ghsim.pulls import PullSim
from ghsim.repos import RepoSim
from ghsim.traffic import TrafficSim


class GitHubSim(
    ConversationSim,
    CheckSim,
    PullSim,
    PullEditSim,
    RepoSim,
    FactsSim,
    TrafficSim,
    FaultSim,
):
    """A stateful simulated GitHub (REST + a GraphQL subset) on loopback HTTP.

    >>> with GitHubSim() as sim:                     # starts on a free port
    ...     sim.add_token("t0k")
    ...     sim.create_repo("octo/widgets")
    ...     pr = sim.open_pr("octo/widgets", "feature", {"a.txt": "hi\\n"})
    ...     sim.url                                   # http://127.0.0.1:PORT
    """

    # == lifecycle =============================================================================

    def start(self) -> Self:
        """Serve in a daemon thread; returns ``self`` (``sim = GitHubSim().start()``)."""
        from ghsim.server import make_server

        if self._server is not None:
            return self
        self._server = make_server(self, self.host, self.requested_port)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="ghsim",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; a state dir the simulator created itself is removed."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        if self._owns_state_dir:
            shutil.rmtree(self.state_dir, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise GhsimError("the simulator is not started")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (use as ``GITHUB_API_URL``)."""
        return f"http://{self.host}:{self.port}"

    def __repr__(self) -> str:
        where = self.url if self._server is not None else "stopped"
        return f"<GitHubSim {where} repos={sorted(self._repos)}>"


__all__ = ["AUTO", "GhsimError", "GitError", "GitHubSim", "MergeConflict"]
