"""kdev's outcome counters as a Prometheus textfile (docs/operations.md, "Monitoring").

kdev is a short-lived process, so its counters live in a file: ``KDEV_METRICS_FILE``
(unset: nothing is counted). :func:`count_outcome` adds one to
``kdev_outcomes_total{outcome=...}`` (reviewed, carried_forward, skipped_*,
deferred_budget, failed). Each update holds an exclusive ``flock`` on ``<file>.lock``,
reads the current counts, and writes the whole file anew through prometheus_client's
``write_to_textfile`` (a temporary file renamed over the old one), so concurrent kdev
runs never lose a count and a reader never sees half a file. The engine re-exports the
file (``li engine run --metrics-textfile``), or node_exporter's textfile collector reads
it. Counting never fails a review: a problem is one WARNING line. prometheus_client is
imported only when there is a file to count in (issue 19: not on review-pr's fast path).
"""

from __future__ import annotations

import fcntl
import logging
import os
from collections.abc import Mapping
from pathlib import Path

log = logging.getLogger("kdev.metrics")

METRIC = "kdev_outcomes"
ENV_NAME = "KDEV_METRICS_FILE"


def read_counts(path: Path) -> dict[str, float]:
    """outcome -> count from the file (empty when it does not exist yet)."""
    from prometheus_client.parser import text_string_to_metric_families

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    counts: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        if family.name != METRIC:
            continue
        for sample in family.samples:
            if sample.name == f"{METRIC}_total":
                counts[sample.labels["outcome"]] = sample.value
    return counts


def _write(path: Path, counts: Mapping[str, float]) -> None:
    from prometheus_client import CollectorRegistry, Counter, write_to_textfile

    registry = CollectorRegistry()
    counter = Counter(METRIC, "kdev review-pr outcomes and failures.", ["outcome"],
                      registry=registry)  # fmt: skip
    for outcome, value in sorted(counts.items()):
        counter.labels(outcome=outcome).inc(value)
    write_to_textfile(str(path), registry)


def count_outcome(outcome: str, environ: Mapping[str, str]) -> None:
    """Add one to ``outcome`` in ``environ[KDEV_METRICS_FILE]``, if it is set."""
    name = environ.get(ENV_NAME, "")
    if not name:
        return
    path = Path(name)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            counts = read_counts(path)
            counts[outcome] = counts.get(outcome, 0.0) + 1
            _write(path, counts)
        finally:
            os.close(fd)
    except (OSError, ValueError) as exc:
        log.warning("could not count outcome %s in %s: %s", outcome, path, exc)
