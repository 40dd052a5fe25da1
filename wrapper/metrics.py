"""kdev's counters as a Prometheus textfile (docs/operations.md, "Monitoring").

kdev is a short-lived process, so its counters live in a file: ``KDEV_METRICS_FILE``
(unset: nothing is counted). :func:`count_outcome` adds one to
``kdev_outcomes_total{outcome=...}`` (reviewed, carried_forward, skipped_*,
deferred_budget, failed); :func:`count_usage` adds a round's legs (issue 31, D103) to
``kdev_reviewer_legs_total{repo,model,source}``,
``kdev_reviewer_tokens_total{repo,model,kind}`` (kind ``in``, ``out``, ``cached``; legs
whose tokens are unknown add nothing) and ``kdev_reviewer_cost_usd_total{repo,model}``
(the legs of a known cost, reported or computed; an unknown one adds nothing, never a
zero). Each update holds an exclusive ``flock`` on ``<file>.lock``, reads the current
counts, and writes the whole file anew through prometheus_client's ``write_to_textfile``
(a temporary file renamed over the old one), so concurrent kdev runs never lose a count
and a reader never sees half a file. The engine re-exports the file (``li engine run
--metrics-textfile``), or node_exporter's textfile collector reads it. Counting never
fails a review: a problem is one WARNING line. prometheus_client is imported only when
there is a file to count in (issue 19: not on review-pr's fast path).
"""

from __future__ import annotations

import fcntl
import logging
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wrapper.usage import LegUsage

log = logging.getLogger("kdev.metrics")

METRIC = "kdev_outcomes"
ENV_NAME = "KDEV_METRICS_FILE"
# name -> (help, label names)
FAMILIES: dict[str, tuple[str, tuple[str, ...]]] = {
    METRIC: ("kdev review-pr outcomes and failures.", ("outcome",)),
    "kdev_reviewer_legs": ("Reviewer legs ended, by cost source.", ("repo", "model", "source")),
    "kdev_reviewer_tokens": (
        "Reviewer tokens, by kind (in, out, cached).",
        ("repo", "model", "kind"),
    ),
    "kdev_reviewer_cost_usd": ("Reviewer spend in USD (legs of known cost).", ("repo", "model")),
}
Counts = dict[str, dict[tuple[str, ...], float]]


def read_all(path: Path) -> Counts:
    """family -> label values -> count, from the file (empty when it does not exist)."""
    from prometheus_client.parser import text_string_to_metric_families

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    counts: Counts = {}
    for family in text_string_to_metric_families(text):
        spec = FAMILIES.get(family.name)
        if spec is None:
            continue
        for sample in family.samples:
            if sample.name == f"{family.name}_total":
                key = tuple(sample.labels[label] for label in spec[1])
                counts.setdefault(family.name, {})[key] = sample.value
    return counts


def read_counts(path: Path) -> dict[str, float]:
    """outcome -> count from the file (empty when it does not exist yet)."""
    return {key[0]: value for key, value in read_all(path).get(METRIC, {}).items()}


def _write(path: Path, counts: Counts) -> None:
    from prometheus_client import CollectorRegistry, Counter, write_to_textfile

    registry = CollectorRegistry()
    for name, (text, labels) in FAMILIES.items():
        if name not in counts:
            continue
        counter = Counter(name, text, list(labels), registry=registry)
        for key, value in sorted(counts[name].items()):
            counter.labels(*key).inc(value)
    write_to_textfile(str(path), registry)


def _update(environ: Mapping[str, str], what: str, change: Callable[[Counts], None]) -> None:
    name = environ.get(ENV_NAME, "")
    if not name:
        return
    path = Path(name)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            counts = read_all(path)
            change(counts)
            _write(path, counts)
        finally:
            os.close(fd)
    except (OSError, ValueError) as exc:
        log.warning("could not count %s in %s: %s", what, path, exc)


def _add(counts: Counts, family: str, key: tuple[str, ...], value: float) -> None:
    series = counts.setdefault(family, {})
    series[key] = series.get(key, 0.0) + value


def count_outcome(outcome: str, environ: Mapping[str, str]) -> None:
    """Add one to ``outcome`` in ``environ[KDEV_METRICS_FILE]``, if it is set."""
    _update(environ, f"outcome {outcome}", lambda counts: _add(counts, METRIC, (outcome,), 1))


def count_usage(repo: str, legs: Iterable[LegUsage], environ: Mapping[str, str]) -> None:
    """Add ``legs`` of ``repo`` to the usage counters, if the file is set."""
    ended = list(legs)
    if not ended:
        return

    def change(counts: Counts) -> None:
        for leg in ended:
            _add(counts, "kdev_reviewer_legs", (repo, leg.model, leg.source.value), 1)
            tokens = leg.tokens
            if tokens is not None:
                kinds = {"in": tokens.tokens_in, "out": tokens.tokens_out, "cached": tokens.cached}
                for kind, value in kinds.items():
                    _add(counts, "kdev_reviewer_tokens", (repo, leg.model, kind), value or 0)
            if leg.cost is not None:
                _add(counts, "kdev_reviewer_cost_usd", (repo, leg.model), float(leg.cost))

    _update(environ, f"the usage of {repo}", change)
