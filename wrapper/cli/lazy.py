"""Verbs that are imported when they run, not when the command line is built (issue 19).

``kdev``'s root group knows every verb by name (``kdev -h`` and the "Did you mean"
suggestions list them all, in order) but imports a verb's module and builds its click
command only when it is looked up: ``kdev review-pr`` imports ``wrapper.cli.review`` and
none of the other verbs' modules (the author's loop, the sweep, verdicts, explain, config).

A verb is ``"module:attribute"``: a function (one command, as ``app.command(name)``
registered it) or a :class:`typer.Typer` (a group, as ``app.add_typer(sub, name=name)``).
The click objects are built by the same typer functions that ``typer.main.get_command``
uses, with the root's settings, so help, parsing and errors are those of an eagerly
built app.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from importlib import import_module
from typing import Any

import typer
from typer.core import TyperGroup
from typer.main import get_command_from_info, get_group_from_info
from typer.models import CommandInfo, TyperInfo


def load(target: str) -> Any:
    """The object ``"module:attribute"`` names, its module imported now."""
    module, _, attribute = target.partition(":")
    return getattr(import_module(module), attribute)


class LazyCommands(MutableMapping[str, Any]):
    """Name -> click command, built on first access; iteration and ``len`` build nothing."""

    def __init__(self, verbs: dict[str, str], build: Any) -> None:
        self._verbs = dict(verbs)
        self._build = build
        self._built: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._built:
            if name not in self._verbs:
                raise KeyError(name)
            self._built[name] = self._build(name, load(self._verbs[name]))
        return self._built[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self._verbs.setdefault(name, "")
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        del self._verbs[name]
        self._built.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._verbs)

    def __len__(self) -> int:
        return len(self._verbs)

    def __contains__(self, name: object) -> bool:
        return name in self._verbs


def lazy_group(verbs: dict[str, str], owner: typer.Typer) -> type[TyperGroup]:
    """A TyperGroup class (for ``typer.Typer(cls=...)``) whose commands are ``verbs``.

    ``owner`` is the Typer the group belongs to: its exception and markup settings are
    the ones typer would pass when building every command eagerly.
    """

    def build(name: str, target: Any) -> Any:
        if isinstance(target, typer.Typer):
            return get_group_from_info(
                TyperInfo(target, name=name),
                pretty_exceptions_short=owner.pretty_exceptions_short,
                rich_markup_mode=owner.rich_markup_mode,
                suggest_commands=owner.suggest_commands,
            )
        return get_command_from_info(
            CommandInfo(name=name, callback=target),
            pretty_exceptions_short=owner.pretty_exceptions_short,
            rich_markup_mode=owner.rich_markup_mode,
        )

    class LazyGroup(TyperGroup):
        def __init__(self, **attrs: Any) -> None:
            super().__init__(**attrs)
            eager = dict(self.commands)
            self.commands = LazyCommands(verbs, build)
            self.commands.update(eager)

    return LazyGroup
