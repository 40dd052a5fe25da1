"""The route table, complete: importing this module registers every REST and GraphQL route.

See :mod:`ghsim.routing` for the table itself, :mod:`ghsim.rest`, :mod:`ghsim.rest_protection`,
:mod:`ghsim.rest_reviews`, :mod:`ghsim.rest_reactions`, :mod:`ghsim.rest_apps`,
:mod:`ghsim.rest_checkruns` and :mod:`ghsim.graphql` for the handlers.
"""

from __future__ import annotations

from ghsim import (
    graphql,
    rest,
    rest_apps,
    rest_checkruns,
    rest_protection,
    rest_reactions,
    rest_reviews,
)
from ghsim.routing import ROUTES, Ctx, HttpError, Route, find_route, serve_route

HANDLER_MODULES = (
    rest, rest_protection, rest_reviews, rest_reactions, rest_apps, rest_checkruns, graphql
)  # fmt: skip

__all__ = ["HANDLER_MODULES", "ROUTES", "Ctx", "HttpError", "Route", "find_route", "serve_route"]
