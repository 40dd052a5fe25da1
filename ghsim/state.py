"""``SimState``: every helper of the simulator in one class, without its lifecycle.

The helpers live one concern a module, each a base class on top of
:class:`ghsim.core.SimCore` (state, clock, tokens, lookups): ``repos.py``, ``pulls.py``
(git: open, push, sync, merge), ``pull_edits.py``, ``conversation.py``, ``checks.py``,
``reviews.py`` (creating reviews), ``outdating.py`` (what a push does to line
comments), ``apps.py`` (GitHub Apps), ``suggestions.py``,
``protection.py``, ``bots.py``, ``faults.py``, ``traffic.py`` (rate limits, request log),
``secondary.py`` (secondary limits per installation) and ``facts.py`` (what the routes
derive). Every helper takes ``self.lock``.

The routes and the server are typed against this class; :class:`ghsim.sim.GitHubSim` adds
the lifecycle (start, stop), which imports the server, so no module imports back.
"""

from __future__ import annotations

from ghsim.apps import AppSim
from ghsim.checks import CheckSim
from ghsim.conversation import ConversationSim
from ghsim.core import GhsimError
from ghsim.facts import FactsSim
from ghsim.faults import FaultSim
from ghsim.outdating import OutdatingSim
from ghsim.pull_edits import PullEditSim
from ghsim.pulls import PullSim
from ghsim.repos import RepoSim
from ghsim.secondary import SecondarySim
from ghsim.suggestions import SuggestionSim
from ghsim.traffic import TrafficSim


class SimState(
    OutdatingSim,
    SuggestionSim,
    ConversationSim,
    CheckSim,
    PullSim,
    PullEditSim,
    RepoSim,
    FactsSim,
    TrafficSim,
    SecondarySim,
    FaultSim,
    AppSim,
):
    """The simulator's state and helpers; serve it with :class:`ghsim.sim.GitHubSim`."""

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
        return f"<{type(self).__name__} {where} repos={sorted(self._repos)}>"
