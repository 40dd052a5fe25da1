"""What one reviewer leg spent: its tokens, its cost, and where the cost came from (issue
31, docs/reviewers.md "Usage and cost", D103).

Pure. A backend's answer gives a :class:`Reported` (tokens and a cost the reviewer said,
either possibly unknown, with the reason; the parsers are in :mod:`wrapper.usage_shapes`),
and :func:`priced` turns it into the leg's :class:`LegUsage` with the price table of
kdev.yaml (:mod:`wrapper.config_prices`): a reported cost wins over a computed one, a
computed one needs the tokens and the model's price, anything else is ``unknown`` and
never zero. Money is :class:`~decimal.Decimal` throughout (no float drift); reports round
to the cent (:func:`cents`) only when they show a sum.

A :class:`UsageMeter` collects the legs of one kdev run (a round may run several: chunks,
a roster, a validator), thread-safe, so the step that writes the verdict records each.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Protocol

MILLION = Decimal(1_000_000)
CENT = Decimal("0.01")
NOT_REPORTED = "usage_not_reported"
NO_USAGE_FORMAT = "reviewer_reports_no_usage"
NO_PRICE = "no_price"


class CostSource(enum.StrEnum):
    """Where a leg's cost came from."""

    REPORTED = "reported"  # the reviewer said what it cost
    COMPUTED = "computed"  # its tokens times the model's price in kdev.yaml
    UNKNOWN = "unknown"  # neither: no cost is counted, never a zero


@dataclass(frozen=True)
class Tokens:
    """A leg's token counts. ``tokens_in`` counts every prompt token, ``cached`` those
    of them read from a cache (None: the reviewer did not say; priced as none)."""

    tokens_in: int
    tokens_out: int
    cached: int | None = None


@dataclass(frozen=True)
class Reported:
    """What a backend's answer said of its usage: tokens, a cost in USD, either None when
    not said; ``reason`` says why something is missing (a reason code, "" when whole)."""

    tokens: Tokens | None
    cost: Decimal | None = None
    reason: str = ""


UNREPORTED = Reported(None, None, NO_USAGE_FORMAT)


class Price(Protocol):
    """One model's price per million tokens (:class:`wrapper.config_prices.ModelPrice`)."""

    @property
    def input(self) -> Decimal: ...
    @property
    def output(self) -> Decimal: ...
    @property
    def cached(self) -> Decimal | None: ...


@dataclass(frozen=True)
class LegUsage:
    """One leg's usage as the ledger records it (``cost`` None unless ``source`` is
    ``reported`` or ``computed``)."""

    model: str
    tokens: Tokens | None
    cost: Decimal | None
    source: CostSource
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        """The fields of a ``usage.jsonl`` line (the cost as a decimal string)."""
        tokens = self.tokens
        return {
            "model": self.model,
            "tokens_in": None if tokens is None else tokens.tokens_in,
            "tokens_out": None if tokens is None else tokens.tokens_out,
            "cached": None if tokens is None else tokens.cached,
            "cost": None if self.cost is None else str(self.cost),
            "source": self.source.value,
            "reason": self.reason,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LegUsage:
        """The usage of a ``usage.jsonl`` line; ValueError (with why) for what it refuses."""
        source = CostSource(data["source"])
        cost = _decimal_or_none(data.get("cost"))
        if (cost is None) != (source is CostSource.UNKNOWN):
            raise ValueError(f"a {source.value} cost of {cost!r}")
        tokens = None
        if data.get("tokens_in") is not None:
            cached = data.get("cached")
            tokens = Tokens(
                _count(data["tokens_in"]),
                _count(data["tokens_out"]),
                None if cached is None else _count(cached),
            )
        return cls(str(data["model"]), tokens, cost, source, str(data.get("reason") or ""))


def _count(value: Any) -> int:
    if type(value) is not int or value < 0:
        raise ValueError(f"{value!r} is not a token count")
    return value


def _decimal_or_none(value: Any) -> Decimal | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"cost {value!r} is not a decimal string")
    cost = Decimal(value)
    if not cost.is_finite() or cost < 0:
        raise ValueError(f"cost {value!r} is not a sum of money")
    return cost


def computed_cost(tokens: Tokens, price: Price) -> Decimal:
    """``tokens`` at ``price`` (per million): uncached prompt tokens at ``input``, cached
    ones at ``cached`` (``input`` when the table gives none), the answer at ``output``."""
    cached = tokens.cached or 0
    cached_price = price.input if price.cached is None else price.cached
    total = (
        (tokens.tokens_in - cached) * price.input
        + cached * cached_price
        + tokens.tokens_out * price.output
    )
    return total / MILLION


def price_for(model: str, prices: Mapping[str, Price]) -> Price | None:
    """The price of ``model`` in the table (names matched case-insensitively)."""
    wanted = model.strip().lower()
    for name, price in prices.items():
        if name.strip().lower() == wanted:
            return price
    return None


def priced(model: str, reported: Reported, prices: Mapping[str, Price]) -> LegUsage:
    """The leg's usage: the reported cost, else the computed one, else unknown."""
    if reported.cost is not None:
        return LegUsage(model, reported.tokens, reported.cost, CostSource.REPORTED, reported.reason)
    if reported.tokens is None:
        return LegUsage(model, None, None, CostSource.UNKNOWN, reported.reason or NOT_REPORTED)
    price = price_for(model, prices)
    if price is None:
        return LegUsage(model, reported.tokens, None, CostSource.UNKNOWN, NO_PRICE)
    cost = computed_cost(reported.tokens, price)
    return LegUsage(model, reported.tokens, cost, CostSource.COMPUTED, reported.reason)


def cents(amount: Decimal) -> Decimal:
    """``amount`` rounded half up to the cent: what a report shows."""
    return amount.quantize(CENT, rounding=ROUND_HALF_UP)


def describe(usage: LegUsage) -> str:
    """One line: ``model: N in (C cached), M out; $X (source)`` or the unknown's reason."""
    tokens = usage.tokens
    if tokens is None:
        counted = "tokens unknown"
    else:
        cached = "" if tokens.cached is None else f" ({tokens.cached} cached)"
        counted = f"{tokens.tokens_in} in{cached}, {tokens.tokens_out} out"
    if usage.cost is None:
        spent = f"cost unknown ({usage.reason or NOT_REPORTED})"
    else:
        spent = f"${usage.cost.normalize():f} ({usage.source.value})"
    return f"{usage.model}: {counted}; {spent}"


def summary(legs: list[LegUsage]) -> str:
    """A round's legs in one line, the verdict header's ``USAGE:``: ``N legs: I in (C
    cached), O out; $X (k reported, j computed)``, the legs whose tokens or cost are
    unknown counted apart (with their reasons), never as zero; "" for no legs."""
    if not legs:
        return ""
    counted = [leg.tokens for leg in legs if leg.tokens is not None]
    parts = [f"{len(legs)} leg{'s' if len(legs) != 1 else ''}:"]
    if counted:
        cached = sum(t.cached or 0 for t in counted)
        parts.append(
            f"{sum(t.tokens_in for t in counted)} in ({cached} cached), "
            f"{sum(t.tokens_out for t in counted)} out;"
        )
    if len(counted) < len(legs):
        parts.append(f"tokens of {len(legs) - len(counted)} unknown;")
    known = [leg for leg in legs if leg.cost is not None]
    if known:
        total = sum((leg.cost for leg in known if leg.cost is not None), Decimal())
        sources = ", ".join(
            f"{n} {s.value}"
            for s in (CostSource.REPORTED, CostSource.COMPUTED)
            if (n := sum(leg.source is s for leg in known))
        )
        parts.append(f"${total.normalize():f} ({sources})")
    unknown = [leg for leg in legs if leg.cost is None]
    if unknown:
        reasons = ", ".join(sorted({leg.reason or NOT_REPORTED for leg in unknown}))
        parts.append(f"{'and ' if known else ''}cost of {len(unknown)} unknown ({reasons})")
    return " ".join(parts)


class UsageMeter:
    """The legs of one run, in the order they ended (thread-safe: roster legs run in a
    pool). Each is recorded unpriced; :func:`priced` is applied when it is written."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._legs: list[tuple[str, Reported]] = []

    def add(self, model: str, reported: Reported) -> None:
        """One finished leg on ``model`` and what it reported."""
        with self._lock:
            self._legs.append((model, reported))

    def take(self) -> list[tuple[str, Reported]]:
        """The legs added since the last take, oldest first, and forgets them."""
        with self._lock:
            legs, self._legs = self._legs, []
        return legs
