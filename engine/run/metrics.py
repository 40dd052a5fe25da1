"""Prometheus metrics of ``li engine run --metrics-addr HOST:PORT`` (docs/operations.md).

Two kinds of metric live in one registry (:data:`REGISTRY`, not the process-global
default, so importing this module in tests or tools never exports anything):

- counted in this process as things happen: fires by schedule and outcome, run
  durations, poll results by kind (``200``, ``304`` or the error reason), and the
  GitHub rate limit (remaining, reset time) per token identity - a hash name, never
  the token (engine.github.client.token_identity);
- read from the database at each scrape (:class:`StoreCollector`): each schedule's
  health state, the held batch of each github_poll schedule, the schedules' lease time
  left and every live engine's heartbeat age. These are shared by every engine on the
  database, so each engine reports the same values.

The wrapper's outcomes come from the textfile it writes atomically (wrapper.metrics): the
engine re-exports the file named by ``--metrics-textfile`` at each scrape, so one
endpoint carries both programs' metrics (node_exporter's textfile collector can read the
same file instead).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from threading import Thread
from typing import TYPE_CHECKING
from wsgiref.simple_server import WSGIServer

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    start_http_server,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from engine.errors import InvalidInput

if TYPE_CHECKING:
    from engine.store.store import Store

log = logging.getLogger(__name__)

REGISTRY = CollectorRegistry()
ProcessCollector(registry=REGISTRY)
PlatformCollector(registry=REGISTRY)

FIRES = Counter(
    "li_fires",
    "Runs ended, by schedule and outcome (succeeded, failed, timed_out, refused, cancelled).",
    ["schedule", "outcome"],
    registry=REGISTRY,
)
RUN_DURATION = Histogram(
    "li_run_duration_seconds",
    "Wall time of each launched run, by schedule.",
    ["schedule"],
    buckets=(1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, float("inf")),
    registry=REGISTRY,
)
POLLS = Counter(
    "li_poll_results",
    "Poll passes by result: 200 (new data), 304 (not modified) or the error reason.",
    ["schedule", "result"],
    registry=REGISTRY,
)


def record_run(
    schedule: str, outcome: str, started_at: datetime | None, finished_at: datetime | None
) -> None:
    """Count one ended run; observe its duration when it was launched."""
    FIRES.labels(schedule=schedule, outcome=outcome).inc()
    if started_at is not None and finished_at is not None:
        seconds = max(0.0, (finished_at - started_at).total_seconds())
        RUN_DURATION.labels(schedule=schedule).observe(seconds)


def poll_result(status: str) -> str:
    """The ``result`` label of a pass status (``ok`` / ``not_modified`` / a reason)."""
    return {"ok": "200", "not_modified": "304"}.get(status, status)


def record_poll(schedule: str, status: str) -> None:
    POLLS.labels(schedule=schedule, result=poll_result(status)).inc()


class RateCollector(Collector):
    """The GitHub rate limit per token identity, as the session last noted it
    (engine.github.ratelog), at each scrape."""

    def collect(self) -> Iterator[Metric]:
        from engine.github import ratelog

        remaining, reset = ratelog.newest()
        yield _per_identity(
            "li_github_rate_limit_remaining",
            "Requests left in GitHub's window, per token identity (a hash, never the token).",
            remaining,
        )
        yield _per_identity(
            "li_github_rate_limit_reset_timestamp_seconds",
            "When GitHub's rate-limit window resets (Unix time), per token identity.",
            reset,
        )


def _per_identity(name: str, documentation: str, values: Mapping[str, float]) -> Metric:
    """A gauge with one sample per token identity, in identity order."""
    gauge = GaugeMetricFamily(name, documentation, labels=["identity"])
    for identity, value in sorted(values.items()):
        gauge.add_metric([identity], value)
    return gauge


REGISTRY.register(RateCollector())


class StoreCollector(Collector):
    """Scrape-time metrics read from the database, plus the wrapper's textfile."""

    def __init__(self, store: Store, textfile: Path | None = None) -> None:
        self.store = store
        self.textfile = textfile

    def collect(self) -> Iterator[Metric]:
        try:
            yield from self._from_store()
        except Exception as exc:  # a scrape must not fail because the database blinked
            log.warning("metrics: database read failed: %s", exc)
        yield from self._from_textfile()

    def _from_store(self) -> Iterable[Metric]:
        # Imported here: the wrapper imports this module (record_rate) on paths that must not
        # import SQLAlchemy (issue 19).
        from engine.health.assess import HealthState
        from engine.health.status import schedule_health
        from engine.store.models import TriggerType
        from engine.store.pollstore import PollStore

        now = self.store.clock()
        health = GaugeMetricFamily(
            "li_schedule_health",
            "1 for each schedule's current health state (li schedule health), else 0.",
            labels=["schedule", "state"],
        )
        for item in schedule_health(self.store, now=now):
            for state in HealthState:
                value = 1.0 if item.health.state is state else 0.0
                health.add_metric([item.name, state.value], value)
        held = GaugeMetricFamily(
            "li_held_batch_size",
            "Events of a github_poll schedule held over the per-pass cap.",
            labels=["schedule"],
        )
        lease = GaugeMetricFamily(
            "li_schedule_lease_remaining_seconds",
            "Time left on a schedule's lease (negative: expired, not yet released).",
            labels=["schedule", "owner"],
        )
        polls = PollStore(self.store)
        for row in self.store.list_schedules():
            if row.trigger_type == TriggerType.GITHUB_POLL:
                held.add_metric([row.name], float(len(polls.get_state(row.id).held_batch or [])))
            if row.lease_owner is not None and row.lease_until is not None:
                remaining = (row.lease_until - now).total_seconds()
                lease.add_metric([row.name, row.lease_owner], remaining)
        heartbeat = GaugeMetricFamily(
            "li_engine_heartbeat_age_seconds",
            "Seconds since each running engine's last heartbeat.",
            labels=["engine", "host"],
        )
        for engine in self.store.list_engines():
            if engine.stopped_at is None:
                age = (now - engine.heartbeat_at).total_seconds()
                heartbeat.add_metric([engine.id, engine.host], age)
        return [health, held, lease, heartbeat]

    def _from_textfile(self) -> Iterable[Metric]:
        if self.textfile is None:
            return []
        try:
            text = self.textfile.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []  # the wrapper has not counted anything yet
        except OSError as exc:
            log.warning("metrics: cannot read %s: %s", self.textfile, exc)
            return []
        try:
            return list(text_string_to_metric_families(text))
        except ValueError as exc:
            log.warning("metrics: %s is not Prometheus text: %s", self.textfile, exc)
            return []


def parse_addr(addr: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:9464`` for IPv6) -> (host, port); reason ``invalid_value``."""
    host, sep, port = addr.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise InvalidInput(f"--metrics-addr {addr!r} is not HOST:PORT", "invalid_value")
    return host, int(port)


def serve(addr: str, store: Store, textfile: Path | None = None) -> tuple[WSGIServer, Thread]:
    """Serve :data:`REGISTRY` (with the database collector) on ``addr`` in a thread."""
    host, port = parse_addr(addr)
    collector = StoreCollector(store, textfile)
    REGISTRY.register(collector)
    try:
        server, thread = start_http_server(port, addr=host, registry=REGISTRY)
    except OSError as exc:
        REGISTRY.unregister(collector)
        raise InvalidInput(
            f"--metrics-addr {addr}: cannot listen: {exc.strerror or exc}", "invalid_value"
        ) from None
    log.info("metrics on http://%s:%d/metrics", host, port)
    return server, thread
