"""Poll passes in one lane per GitHub App installation (issue 30, D110).

With many installations (engine.github.installations) the engine's poll threads only
claim a due pass and hand it to its installation's lane: a pool of ``threads`` of its
own. A pass that waits on its installation's pacer (a spent primary budget, a
secondary-limit deferral, a slow GitHub) so holds only its own lane's threads, never
the passes of another installation, which start on time in theirs.

A repository no installation covers settles its pass at once as a failed poll with the
refusal's reason (``app_not_installed``), which health pages on (engine.health.assess).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from engine.github.client import GitHubClient
from engine.github.installations import InstallationRouter, Route
from engine.github.types import GitHubError
from engine.store.pollstore import PollOutcome, PollStore, PollTicket

log = logging.getLogger("engine.run.lanes")


def route_of(
    router: InstallationRouter, pstore: PollStore, ticket: PollTicket, owner: str
) -> Route | None:
    """The ticket's repository's installation and client; a refusal settles the pass as
    its failure, with the refusal's reason, and gives None."""
    repo = str(ticket.trigger_config.get("repo", ""))
    try:
        return router.route(repo)
    except GitHubError as exc:
        log.error("poll of %s: %s [%s]", ticket.schedule_name, exc.message, exc.reason)
        outcome = PollOutcome(
            polled=True,
            http_status=exc.status,
            error_reason=exc.reason,
            error_message=exc.message,
        )
        pstore.settle_poll(ticket, outcome, owner)
        return None


class PollLanes:
    """One thread pool per installation, made when its first pass arrives."""

    def __init__(self, threads: int, pstore: PollStore, owner: str) -> None:
        self.threads = threads
        self._pstore = pstore
        self._owner = owner
        self._lock = threading.Lock()
        self._pools: dict[int, ThreadPoolExecutor] = {}
        self._closed = False

    def submit(self, lane: int, work: Callable[[], object]) -> Future[object] | None:
        """Queue ``work`` in ``lane`` (None once shut down: the engine is stopping)."""
        with self._lock:
            if self._closed:
                return None
            pool = self._pools.get(lane)
            if pool is None:
                pool = self._pools[lane] = ThreadPoolExecutor(
                    self.threads, thread_name_prefix=f"li-lane-{lane}"
                )
            return pool.submit(work)

    def route(self, router: InstallationRouter, ticket: PollTicket) -> Route | None:
        """:func:`route_of` for this engine."""
        return route_of(router, self._pstore, ticket, self._owner)

    def queue(
        self,
        router: InstallationRouter,
        schedule_id: int,
        run: Callable[[PollTicket, GitHubClient], object],
        record_error: Callable[[str, BaseException], None],
    ) -> None:
        """Claim a due pass (on the caller's thread: one short transaction) and queue
        ``run`` in its installation's lane; every error goes to ``record_error``."""
        where = f"poll of schedule {schedule_id}"
        try:
            ticket = self._pstore.claim_poll(schedule_id, self._owner)
            route = self.route(router, ticket) if ticket else None
        except Exception as exc:
            record_error(where, exc)
            return
        if ticket is None or route is None:
            return
        held, client = ticket, route.client

        def work() -> None:
            try:
                run(held, client)
            except Exception as exc:
                record_error(where, exc)

        self.submit(route.installation_id, work)

    def lanes(self) -> list[int]:
        with self._lock:
            return sorted(self._pools)

    def shutdown(self) -> None:
        """Take no more work, drop what has not started, wait for the passes running."""
        with self._lock:
            self._closed = True
            pools = list(self._pools.values())
        for pool in pools:
            pool.shutdown(wait=True, cancel_futures=True)
