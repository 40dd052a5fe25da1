"""``GitHubSim``: the simulator's public face: :class:`ghsim.state.SimState` (all helpers,
one concern a module) with its lifecycle: serving in a thread, stopping, the context
manager."""

from __future__ import annotations

import shutil
import threading
from typing import Self

from ghsim.core import AUTO, GhsimError
from ghsim.gitops import GitError, MergeConflict
from ghsim.state import SimState


class GitHubSim(SimState):
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


__all__ = ["AUTO", "GhsimError", "GitError", "GitHubSim", "MergeConflict"]
