"""``li engine run|status``: the engine process and the engines a database has seen."""

from __future__ import annotations

import logging
import signal
import threading
from datetime import timedelta
from pathlib import Path
from types import FrameType
from typing import Any

import typer

from engine.cli.common import GLOBAL_OPTIONS, emit_json, guarded, iso, open_store, settings, table
from engine.durations import MAX_DRAIN_SECONDS, parse_duration
from engine.run.daemon import Engine
from engine.run.metrics import serve as serve_metrics
from engine.store import db as dbmod
from engine.store.engines import EngineState
from engine.store.models import RunStatus
from engine.termsafe import echo


def engine_run(
    once: bool = typer.Option(False, "--once", help="Fire everything due now, then exit."),
    drain_timeout: str | None = typer.Option(
        None,
        "--drain-timeout",
        help="On SIGTERM/SIGINT, how long running actions may finish before they are "
        "terminated, e.g. 30s or 5m (default: LI_SHUTDOWN_GRACE, else 30s; at most 1d).",
    ),
    metrics_addr: str | None = typer.Option(
        None, "--metrics-addr", help="HOST:PORT: serve Prometheus metrics at /metrics."
    ),
    metrics_textfile: Path | None = typer.Option(
        None, "--metrics-textfile", help="A metrics textfile a fired program writes, to re-export."
    ),
) -> None:
    """Run the engine until SIGTERM/SIGINT (or one pass with --once)."""
    if not GLOBAL_OPTIONS.log_level_given:
        logging.getLogger().setLevel(logging.INFO)

    def work() -> None:
        config = settings()
        if drain_timeout is not None:
            grace = parse_duration(drain_timeout, what="--drain-timeout", maximum=MAX_DRAIN_SECONDS)
            config = config.model_copy(update={"shutdown_grace_seconds": float(grace)})
        store = open_store(config, migrate=dbmod.is_sqlite(config.database_url))
        engine = Engine(config, store)
        engine.start()
        server = None
        try:
            if metrics_addr is not None:
                server, _ = serve_metrics(metrics_addr, store, metrics_textfile)
            if once:
                runs = engine.run_once()
                bad = [r for r in runs if r.status != RunStatus.SUCCEEDED.value]
                echo(f"{len(runs)} run(s); {len(bad)} did not succeed")
                return
            stop = threading.Event()

            def on_signal(signum: int, _frame: FrameType | None) -> None:
                logging.getLogger(__name__).info("signal %d: stopping", signum)
                stop.set()

            signal.signal(signal.SIGTERM, on_signal)
            signal.signal(signal.SIGINT, on_signal)
            engine.run_forever(stop)
        finally:
            if server is not None:
                server.shutdown()
            engine.close()

    guarded(work)


def engine_status(
    as_json: bool = typer.Option(False, "--json", help="Every engine, with its state."),
    show_all: bool = typer.Option(
        False, "--all", help="Also engines that stopped cleanly (and finished trigger-* ones)."
    ),
) -> None:
    """Engine processes seen by this database: state (running, stopped, lost), heartbeats
    and recent errors. Engines that stopped cleanly are hidden unless --all."""

    def work() -> None:
        config = settings()
        stale_after = timedelta(seconds=config.heartbeat_interval_seconds * 3)
        engines = open_store(config).engine_states(stale_after)
        data: list[dict[str, Any]] = [
            {
                "id": e.id,
                "state": state.value,
                "host": e.host,
                "pid": e.pid,
                "started_at": iso(e.started_at),
                "heartbeat_at": iso(e.heartbeat_at),
                "stopped_at": iso(e.stopped_at),
                "last_errors": e.last_errors,
            }
            for e, state in engines
        ]
        if as_json:
            emit_json(data)
            return
        shown = [d for d in data if show_all or d["state"] != EngineState.STOPPED.value]
        table(
            ["id", "state", "pid", "started", "heartbeat", "stopped", "errors"],
            [
                [
                    d["id"],
                    d["state"],
                    d["pid"],
                    d["started_at"],
                    d["heartbeat_at"],
                    d["stopped_at"],
                    len(d["last_errors"]),
                ]
                for d in shown
            ],
        )
        for d in shown:
            if d["state"] == EngineState.LOST.value:
                echo(
                    f"engine {d['id']} (host {d['host']}, pid {d['pid']}) was lost: it never "
                    f"stopped cleanly; last heartbeat {d['heartbeat_at']} (docs/engine.md)"
                )
        hidden = len(data) - len(shown)
        if hidden:
            echo(f"{hidden} engine(s) stopped cleanly are hidden; --all shows them")

    guarded(work)
